import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TaskStatus } from '@ratchet/contracts';
import { openPglite } from '@ratchet/db';
import { ScriptedModel, type RoleModel, type RoleModels } from '@ratchet/llm';
import { TaskStore } from '@ratchet/orchestrator';
import { consoleOutput, runGoal, type Output } from './commands';

/** The recorded turns the demo replays. */
export const demoScript = path.resolve(__dirname, '..', 'demo', 'json-store-lesson.script.yaml');

export const demoGoals = {
  first: 'a CLI that manages TODO items in a JSON file',
  second: 'a command-line shopping list that keeps items in a JSON file',
} as const;

export interface DemoOptions {
  /** Keep the data and output directories (default: a temporary directory, removed afterwards). */
  readonly dir?: string;
}

/**
 * `ratchet demo`: two real tasks through every real service (sandbox,
 * safety, storage, memory) with a scripted model. The first fails its tests,
 * is fixed after reflection and leaves a lesson; the second, similar task
 * retrieves that lesson and passes on its first attempt.
 *
 * @returns true when both tasks went as described; false (after saying what
 *   differed) otherwise.
 */
export async function runDemo(options: DemoOptions, output: Output = consoleOutput): Promise<boolean> {
  const dir = options.dir === undefined ? await mkdtemp(path.join(os.tmpdir(), 'ratchet-demo-')) : path.resolve(options.dir);
  const dataDir = path.join(dir, 'data');
  const model = await ScriptedModel.fromFile(demoScript);
  const entry: RoleModel = { model, modelName: `scripted:${model.name}`, temperature: 0, maxTokens: 4096 };
  const models: RoleModels = { planner: entry, coder: entry, tester: entry, reflector: entry };
  output.err('Ratchet offline demo. Every service is real: Docker sandbox, tree-sitter safety check, PGlite storage, vector memory.');
  output.err(`The MODEL IS SCRIPTED: it replays recorded turns from ${path.relative(process.cwd(), demoScript)}; no model endpoint is called.`);
  try {
    output.err(`\n== task 1: "${demoGoals.first}"`);
    const first = await runGoal(demoGoals.first, { lang: 'python', out: path.join(dir, 'todo'), dataDir, models, force: true }, output);
    output.err(`\n== task 2: "${demoGoals.second}" (similar, so the lesson from task 1 should be retrieved)`);
    const second = await runGoal(demoGoals.second, { lang: 'python', out: path.join(dir, 'shopping'), dataDir, models, force: true }, output);
    model.assertFinished();

    const db = await openPglite({ dataDir, vector: true });
    let secondLessons: string[];
    try {
      const store = await TaskStore.open(db);
      secondLessons = (await store.tasks.get(second.task.id)).lessons.map((lesson) => lesson.title);
    } finally {
      await db.close();
    }
    const problems: string[] = [];
    if (first.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED || first.task.currentIteration !== 2) problems.push(`task 1 should succeed in 2 iterations, got ${first.task.currentIteration} (${first.task.statusReason})`);
    if (second.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED || second.task.currentIteration !== 1) problems.push(`task 2 should succeed in 1 iteration, got ${second.task.currentIteration} (${second.task.statusReason})`);
    if (secondLessons.length === 0) problems.push('task 2 retrieved no lessons');
    output.err('\n== summary');
    output.err(`task 1 ${first.task.id}: ${first.task.currentIteration} iterations (failed, reflected, fixed; lesson stored)`);
    output.err(`task 2 ${second.task.id}: ${second.task.currentIteration} iteration(s), lessons used: ${secondLessons.map((title) => `"${title}"`).join(', ') || 'none'}`);
    output.err(`files: ${path.join(dir, 'todo')} and ${path.join(dir, 'shopping')}${options.dir === undefined ? ' (temporary; pass --dir to keep them)' : ''}`);
    for (const problem of problems) output.err(`UNEXPECTED: ${problem}`);
    return problems.length === 0;
  } finally {
    if (options.dir === undefined) await rm(dir, { recursive: true, force: true });
  }
}
