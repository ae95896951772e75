import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { WorkspaceSettings } from '../workspace/settings';
import { loadDirectorySuite } from './directory-suite';
import { jsonlTask, parseJsonlSuite, testNames } from './jsonl-suite';
import type { PythonSyntax } from './python-syntax';
import type { BenchTask } from './task';

export const SuiteKind = { JSONL: 'jsonl', DIRECTORY: 'directory' } as const;
export type SuiteKind = (typeof SuiteKind)[keyof typeof SuiteKind];

export interface Suite {
  /** The file name without .jsonl/.json, or the folder name: names the run directory and memory projects. */
  readonly name: string;
  readonly kind: SuiteKind;
  /** Absolute path of the file or folder. */
  readonly source: string;
  /** sha256 (hex) of what the tasks submit; a changed suite gets another hash. */
  readonly hash: string;
  readonly tasks: readonly BenchTask[];
  /** Things the user should know, e.g. workspace files that were not sent. */
  readonly notes: readonly string[];
}

export interface LoadSuiteOptions {
  /** What a workspace task sends, as for `ratchet run --workspace`. */
  readonly workspaceSettings: WorkspaceSettings;
  /** Loaded on demand: only JSONL suites need it. */
  readonly pythonSyntax: () => Promise<PythonSyntax>;
  /** Where the git clones of tasks with a `source` are (`--sources`). */
  readonly sources?: string;
}

/**
 * Loads a suite: a JSONL file (HumanEval/MBPP style) or a directory of task
 * folders, each with a task.yaml.
 *
 * @throws AppError INVALID_ARGUMENT when the path does not exist, or the
 *   suite has bad lines or folders (all of them listed); a task whose test is
 *   not valid Python is not an error here but a task with `inputError`.
 */
export async function loadSuite(suitePath: string, options: LoadSuiteOptions): Promise<Suite> {
  const source = path.resolve(suitePath);
  let info;
  try {
    info = await stat(source);
  } catch {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `suite ${suitePath} not found: give a .jsonl file (task_id, prompt, test, entry_point per line) or a directory of task folders with a task.yaml each`);
  }
  if (info.isDirectory()) {
    const { tasks, notes } = await loadDirectorySuite(source, options.workspaceSettings, options.sources);
    return { name: suiteName(source), kind: SuiteKind.DIRECTORY, source, hash: suiteHash(tasks), tasks, notes };
  }
  const file = path.basename(source);
  const records = parseJsonlSuite(await readFile(source, 'utf8'), file);
  const syntax = await options.pythonSyntax();
  const names = testNames(records.map((record) => record.taskId));
  const tasks = records.map((record, index) => jsonlTask(record, names[index] ?? record.taskId, file, syntax));
  return { name: suiteName(source), kind: SuiteKind.JSONL, source, hash: suiteHash(tasks), tasks, notes: [] };
}

/** `sample.jsonl` -> `sample`; a folder keeps its name; anything but letters, digits, `.`, `_` and `-` becomes `-`. */
export function suiteName(source: string): string {
  const base = path.basename(source).replace(/\.(jsonl|json|ndjson)$/i, '');
  return base.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '') || 'suite';
}

/**
 * The suite's identity: sha256 over every task as it is submitted (goal,
 * language, files, test command, budget, input error, hidden tests), in
 * suite order. Two
 * suites with the same hash run the same tasks, so their results may be
 * pooled; a comment added to a JSONL file's prompt changes it, a new
 * README beside the task folders does not.
 */
export function suiteHash(tasks: readonly BenchTask[]): string {
  const hash = createHash('sha256');
  const files = (list: readonly SourceFile[]) => list.map((file) => [file.path, file.content]);
  for (const task of tasks) {
    const hidden = task.hidden === undefined ? [] : [files(task.hidden.files), task.hidden.failToPass, task.hidden.passToPass];
    hash.update(JSON.stringify([task.id, task.goal, task.language, files(task.workspace), files(task.acceptanceTests), task.testCommand, task.maxIterations ?? 0, task.inputError ?? '', ...hidden, ...(task.setupCommand === undefined ? [] : [task.setupCommand])]));
    hash.update('\n');
  }
  return hash.digest('hex');
}
