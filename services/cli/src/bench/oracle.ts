import { AppError, ErrorCode } from '@ratchet/errors';
import { ScriptedModel, ScriptOrder, scriptedRoleModels, type RoleModels, type ScriptedTurn } from '@ratchet/llm';
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
    return [
      { role: 'planner', expect: [goal], reply: JSON.stringify(plan), times: answersPerTask },
      ...(files.length === 0
        ? [{ role: 'coder' as const, expect: [goal], toolCalls: [{ name: 'finish', arguments: { summary } }], times: answersPerTask }]
        : [
            // After the writes (their results name the files), the same task's next coder request finishes.
            { role: 'coder' as const, expect: [goal, `wrote ${files[0]!.path}`], toolCalls: [{ name: 'finish', arguments: { summary } }], times: answersPerTask },
            { role: 'coder' as const, expect: [goal], toolCalls: files.map((file) => ({ name: 'write_file', arguments: { path: file.path, content: file.content } })), times: answersPerTask },
          ]),
    ];
  });
  return scriptedRoleModels(new ScriptedModel(turns, { name: `oracle-${kind}`, order: ScriptOrder.BY_EXPECT }));
}

/** The start of a goal's first line, as it appears in every prompt of its task. */
function goalKey(goal: string): string {
  return (goal.trim().split('\n')[0] ?? '').trim().slice(0, 80);
}
