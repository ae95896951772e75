import { AppError, ErrorCode } from '@ratchet/errors';
import { ScriptedModel, ScriptOrder, scriptedRoleModels, type RoleModels, type ScriptedTurn } from '@ratchet/llm';
import type { SourceFile } from '@ratchet/contracts';
import type { BenchTask } from './task';

// Oracles prove the bench harness, not a model: `fix` answers every task
// with its upstream fix written through the coder's own tools (a suite whose
// tasks are sound is then resolved 100%), `none` finishes without touching
// anything (resolved 0%: the hidden tests really fail on the snapshot). Both
// are scripted models, and say so in every response's model name.

export const OracleKind = { FIX: 'fix', NONE: 'none' } as const;
export type OracleKind = (typeof OracleKind)[keyof typeof OracleKind];

/** `--oracle VALUE` checked. */
export function parseOracle(value: string | undefined): OracleKind | undefined {
  if (value === undefined) return undefined;
  const kind = Object.values(OracleKind).find((known) => known === value.trim().toLowerCase());
  if (kind === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--oracle ${value}: use fix (each task's upstream fix) or none (changes nothing)`);
  return kind;
}

/** Attempts an oracle answers per task: a re-plan or a second attempt gets the same answer. */
const answersPerTask = 20;

/**
 * The oracle's model for `tasks`: per task, a plan, one coder turn writing
 * the fix's files (`fix`) or none, and a finish. Turns are found by the
 * task's goal, so tasks may run in any order.
 *
 * @throws AppError INVALID_ARGUMENT for `fix` when a runnable task has no
 *   upstream fix (only tasks with a source have one).
 */
export function oracleModels(tasks: readonly BenchTask[], kind: OracleKind): RoleModels {
  const turns = tasks.filter((task) => task.inputError === undefined).flatMap((task): ScriptedTurn[] => {
    const files = kind === OracleKind.FIX ? task.oracle : [];
    if (files === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--oracle fix: task ${task.id} has no upstream fix (only tasks with a source in their task.yaml have one)`);
    const goal = goalKey(task.goal);
    const plan = {
      summary: kind === OracleKind.FIX ? `apply the upstream fix of ${task.id}` : `leave ${task.id} as it is`,
      steps: [{ description: 'write the changed files', paths: files.map((file) => file.path) }],
      files: files.map((file) => ({ path: file.path, purpose: 'the upstream fix', isTest: false })),
      testStrategy: "the project's own tests",
      dependencies: [],
      appliedLessonIds: [],
    };
    const summary = kind === OracleKind.FIX ? `wrote the upstream fix (${files.length} file(s))` : 'changed nothing';
    // The project's visible tests may still fail (pre-existing failures, none of them the bug's): the oracle's answer does not change.
    const reflection = {
      rootCause: `the oracle's answer (${summary}) is fixed; the visible tests judge it as they judge any answer`,
      hypothesis: 'the hidden tests, not the visible ones, say whether the task is resolved',
      fixDirection: 'none: an oracle gives the same answer every attempt',
      confidence: 1,
      replanRecommended: false,
      lesson: { title: `Oracle ${kind} of ${task.id}`, body: 'An oracle run proves the bench harness; it teaches nothing about the code.', tags: ['oracle'] },
      relevantLessonIds: [],
      disputedTests: [],
    };
    return [
      { role: 'planner', expect: [goal], reply: JSON.stringify(plan), times: answersPerTask },
      { role: 'reflector', expect: [goal], reply: JSON.stringify(reflection), times: answersPerTask },
      ...(files.length === 0
        ? [{ role: 'coder' as const, expect: [goal], toolCalls: [{ name: 'finish', arguments: { summary } }], times: answersPerTask }]
        : [
            // After the edits (their results name the files), the same task's next coder request finishes.
            { role: 'coder' as const, expect: [goal, `${editedOrWrote(files[0]!, task.workspace)} ${files[0]!.path}`], toolCalls: [{ name: 'finish', arguments: { summary } }], times: answersPerTask },
            { role: 'coder' as const, expect: [goal], toolCalls: files.map((file) => oracleEdit(file, task.workspace)), times: answersPerTask },
          ]),
    ];
  });
  return scriptedRoleModels(new ScriptedModel(turns, { name: `oracle-${kind}`, order: ScriptOrder.BY_EXPECT }));
}

/** The start of a goal's first line, as it appears in every prompt of its task. */
function goalKey(goal: string): string {
  return (goal.trim().split('\n')[0] ?? '').trim().slice(0, 80);
}

/**
 * The tool call that makes `fixed` what the fix has: for a file the task
 * has, one edit_file of the smallest stretch of lines that holds every
 * change (as a model edits: a large file is never sent whole, which would
 * swell every later prompt of the task); for a new file, write_file.
 */
function oracleEdit(fixed: SourceFile, workspace: readonly SourceFile[]): { name: string; arguments: Record<string, string> } {
  const original = workspace.find((file) => file.path === fixed.path);
  if (original === undefined) return { name: 'write_file', arguments: { path: fixed.path, content: fixed.content } };
  const before = original.content.split('\n');
  const after = fixed.content.split('\n');
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head += 1;
  let tail = 0;
  while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail += 1;
  // Grow the stretch by a line of context on each side until its text occurs once in the file.
  for (let context = 0; context <= before.length; context += 1) {
    const start = Math.max(0, head - context);
    const search = before.slice(start, before.length - Math.max(0, tail - context)).join('\n');
    if (search !== '' && original.content.indexOf(search) === original.content.lastIndexOf(search)) {
      return { name: 'edit_file', arguments: { path: fixed.path, search, replace: after.slice(start, after.length - Math.max(0, tail - context)).join('\n') } };
    }
  }
  return { name: 'write_file', arguments: { path: fixed.path, content: fixed.content } };
}

/** The word the tool's result starts with for this file: `edited` or `wrote`. */
function editedOrWrote(fixed: SourceFile, workspace: readonly SourceFile[]): string {
  return oracleEdit(fixed, workspace).name === 'edit_file' ? 'edited' : 'wrote';
}
