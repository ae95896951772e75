import path from 'node:path';

// A bench run is a list of passes over the suite. Each pass runs every task
// once with one way of using memory; --repeat runs the list again. This file
// decides, for each pass, which memory it sees: pure, so the mapping from
// the user's words to the task fields can be read (and tested) in one place.

/** `--memory`: where a run's lessons come from and go to. */
export const MemoryMode = {
  /** A memory that starts empty for the run (each repeat its own). */
  FRESH: 'fresh',
  /** The user's memory: lessons from their other work help, and what the run learns stays. */
  SHARED: 'shared',
  /** Neither retrieve nor store lessons. */
  OFF: 'off',
} as const;
export type MemoryMode = (typeof MemoryMode)[keyof typeof MemoryMode];

/** The names passes go by in results and reports. */
export const PassName = {
  FRESH: 'fresh',
  SHARED: 'shared',
  OFF: 'off',
  /** --compare-memory: the first pass over an empty memory, learning. */
  COLD: 'cold',
  /** --compare-memory: the second pass, over what the cold pass learnt. */
  WARM: 'warm',
} as const;
export type PassName = (typeof PassName)[keyof typeof PassName];

/** What a task is told about memory: the SubmitTaskRequest's `memory`, as a domain value (converted to the proto enum at the edge). */
export const MemoryUse = {
  /** Retrieve the project's and the global lessons, store in the project. */
  DEFAULT: 'default',
  /** Retrieve and store the project's lessons only. */
  PROJECT_ONLY: 'project-only',
  OFF: 'off',
} as const;
export type MemoryUse = (typeof MemoryUse)[keyof typeof MemoryUse];

/** One pass over the suite, and the memory its tasks use. */
export interface Pass {
  readonly name: PassName;
  /** 1-based. */
  readonly repeat: number;
  readonly memory: MemoryUse;
  /** The SubmitTaskRequest's project: the scope lessons are kept in. */
  readonly project: string;
  /**
   * Embedded mode: the data directory of the Ratchet that runs the pass;
   * undefined for the user's own (`--data-dir`, else storage.dataDir).
   * Always undefined with a server, whose memory is scoped by `project`.
   */
  readonly dataDir?: string;
}

export interface PassPlanInput {
  readonly suiteName: string;
  /** Unique per run directory, kept in it: fresh memories on a server are named after it. */
  readonly runId: string;
  readonly runDir: string;
  readonly memory: MemoryMode;
  readonly compareMemory: boolean;
  readonly repeat: number;
  /** With a server (`--server`) instead of embedded mode. */
  readonly remote: boolean;
}

/**
 * The passes of a run, in the order they run: for each repeat, one pass
 * with `memory`, or with `compareMemory` three (off, cold, warm), where cold
 * and warm share one memory that starts empty.
 *
 * Embedded, an empty memory is a new data directory under the run
 * directory; with a server it is a project key of its own
 * (`bench/<suite>/<run id>/r<repeat>`) searched without the global lessons.
 * Passes with memory off keep their history under the run directory too
 * (embedded), so a bench never fills the user's history unless it uses
 * their memory (`shared`).
 */
export function planPasses(input: PassPlanInput): Pass[] {
  const shared = `bench/${input.suiteName}`;
  const data = (name: string) => (input.remote ? {} : { dataDir: path.join(input.runDir, 'data', name) });
  const empty = (repeat: number, name: string): Pick<Pass, 'memory' | 'project' | 'dataDir'> =>
    input.remote ? { memory: MemoryUse.PROJECT_ONLY, project: `${shared}/${input.runId}/r${repeat}` } : { memory: MemoryUse.DEFAULT, project: shared, ...data(`${name}-r${repeat}`) };
  const off = (): Pick<Pass, 'memory' | 'project' | 'dataDir'> => ({ memory: MemoryUse.OFF, project: shared, ...data('off') });
  const passes: Pass[] = [];
  for (let repeat = 1; repeat <= input.repeat; repeat += 1) {
    if (input.compareMemory) {
      passes.push({ name: PassName.OFF, repeat, ...off() });
      const learning = empty(repeat, 'learning');
      passes.push({ name: PassName.COLD, repeat, ...learning }, { name: PassName.WARM, repeat, ...learning });
    } else if (input.memory === MemoryMode.OFF) {
      passes.push({ name: PassName.OFF, repeat, ...off() });
    } else if (input.memory === MemoryMode.FRESH) {
      passes.push({ name: PassName.FRESH, repeat, ...empty(repeat, 'fresh') });
    } else {
      passes.push({ name: PassName.SHARED, repeat, memory: MemoryUse.DEFAULT, project: shared });
    }
  }
  return passes;
}

/** The pass names a run reports, in order. */
export function passNames(passes: readonly Pass[]): PassName[] {
  return [...new Set(passes.map((pass) => pass.name))];
}
