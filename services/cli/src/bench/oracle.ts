import { AppError, ErrorCode } from '@ratchet/errors';
import { ScriptedModel, ScriptOrder, scriptedRoleModels, type RoleModels, type ScriptedTurn } from '@ratchet/llm';
import type { SourceFile } from '@ratchet/contracts';
import { structuredPatch } from 'diff';
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
    // Diffed once: the first call's tool result (`edited PATH` or `wrote PATH`) is what the finishing turn expects.
    const edits = files.flatMap((file) => oracleEdits(file, task.workspace));
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
            { role: 'coder' as const, expect: [goal, `${edits[0]?.name === 'edit_file' ? 'edited' : 'wrote'} ${files[0]!.path}`], toolCalls: [{ name: 'finish', arguments: { summary } }], times: answersPerTask },
            { role: 'coder' as const, expect: [goal], toolCalls: edits, times: answersPerTask },
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
 * The tool calls that make `fixed` what the fix has: for a file the task
 * has, one edit_file per hunk of the fix (its changed lines with two lines
 * of context, as a model edits: a large file is never sent whole, which
 * would swell every later prompt of the task); for a new file, or a hunk
 * whose text is not unique in the file, write_file of the whole file.
 */
function oracleEdits(fixed: SourceFile, workspace: readonly SourceFile[]): { name: string; arguments: Record<string, string> }[] {
  const original = workspace.find((file) => file.path === fixed.path);
  const whole = [{ name: 'write_file', arguments: { path: fixed.path, content: fixed.content } }];
  if (original === undefined) return whole;
  const { hunks } = structuredPatch(fixed.path, fixed.path, original.content, fixed.content, '', '', { context: 2 });
  const edits = hunks.map((hunk) => ({
    search: hunk.lines.filter((line) => !line.startsWith('+') && !line.startsWith('\\')).map((line) => line.slice(1)).join('\n'),
    replace: hunk.lines.filter((line) => !line.startsWith('-') && !line.startsWith('\\')).map((line) => line.slice(1)).join('\n'),
  }));
  const unique = (text: string) => text !== '' && original.content.indexOf(text) === original.content.lastIndexOf(text) && original.content.includes(text);
  if (edits.length === 0 || !edits.every((edit) => unique(edit.search))) return whole;
  return edits.map((edit) => ({ name: 'edit_file', arguments: { path: fixed.path, ...edit } }));
}

