import type { LanguageName } from '@ratchet/agent';
import type { DataFile, SourceFile } from '@ratchet/contracts';
import type { HiddenTests } from './hidden-tests';
import type { TaskSource } from './source';

/** One task of a suite, ready to submit (or an input error to report). */
export interface BenchTask {
  /** Unique in the suite: the JSONL task_id or the folder name. */
  readonly id: string;
  readonly goal: string;
  readonly language: LanguageName;
  readonly workspace: readonly SourceFile[];
  /** A workspace's files that are not text (fixtures, data), for the sandbox only; none when unset. */
  readonly dataFiles?: readonly DataFile[];
  /** The suite's tests: the only tests the task runs, never edited by the model. */
  readonly acceptanceTests: readonly SourceFile[];
  /** A workspace's own test command (`sh -c LINE`), or empty for the language's runner. */
  readonly testCommand: readonly string[];
  /** A shell command line run once in the sandbox before the first attempt and before the hidden tests; none when unset. */
  readonly setupCommand?: string;
  /** The task's own budget of attempts; --max-iterations overrides it. */
  readonly maxIterations?: number;
  /** Tests the agent never sees, run on the task's result to tell whether it is resolved (SWE-bench style). */
  readonly hidden?: HiddenTests;
  /** Where a task from a real project's history comes from (bench/swe). */
  readonly source?: TaskSource;
  /** The upstream fix's files (hidden tests left out): what `--oracle fix` writes. */
  readonly oracle?: readonly SourceFile[];
  /** Set when the task cannot run, saying why; the other tasks still run. */
  readonly inputError?: string;
}
