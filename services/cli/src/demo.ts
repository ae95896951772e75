import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TaskStatus } from '@ratchet/contracts';
import { openPglite } from '@ratchet/db';
import { ScriptedModel, scriptedRoleModels } from '@ratchet/llm';
import { TaskStore } from '@ratchet/orchestrator';
import { consoleOutput, patchFileName, runGoal, type Output } from './commands';

const demoDirectory = path.resolve(__dirname, '..', 'demo');

/** The recorded turns the demo's first two tasks replay. */
export const demoScript = path.join(demoDirectory, 'json-store-lesson.script.yaml');

/** The recorded turns of task 3, the workspace task. */
export const workspaceDemoScript = path.join(demoDirectory, 'inventory-fix.script.yaml');

/** The existing project task 3 works on: a Python package with one failing test. */
export const workspaceDemoProject = path.join(demoDirectory, 'inventory');

export const demoGoals = {
  first: 'a CLI that manages TODO items in a JSON file',
  second: 'a command-line shopping list that keeps items in a JSON file',
  third: 'make the failing test in tests/ pass',
} as const;

export interface DemoOptions {
  /** Keep the data and output directories (default: a temporary directory, removed afterwards). */
  readonly dir?: string;
}

/** Who the demo project's one commit is by; set explicitly, so the demo works where git has no identity configured. */
const demoGitIdentity = { GIT_AUTHOR_NAME: 'Ratchet demo', GIT_AUTHOR_EMAIL: 'demo@ratchet.invalid', GIT_COMMITTER_NAME: 'Ratchet demo', GIT_COMMITTER_EMAIL: 'demo@ratchet.invalid' } as const;

const execFileText = promisify(execFile);

/** Runs git in `dir`; a user's signing or hooks config must not stop the demo's commit. */
async function git(dir: string, ...args: string[]): Promise<string> {
  const { stdout } = await execFileText('git', ['-C', dir, '-c', 'commit.gpgsign=false', '-c', 'core.hooksPath=/dev/null', ...args], { env: { ...process.env, ...demoGitIdentity }, timeout: 60_000 });
  return stdout;
}

/**
 * Copies the demo project to `project` (replacing an earlier copy) and
 * commits it as a fresh git repository, as a user's checkout would be.
 */
async function createDemoProject(project: string): Promise<void> {
  await rm(project, { recursive: true, force: true });
  // Caches left by someone running pytest in the source tree are not part of the project.
  await cp(workspaceDemoProject, project, { recursive: true, filter: (source) => !['__pycache__', '.pytest_cache'].includes(path.basename(source)) });
  await git(project, 'init', '-q', '-b', 'main');
  await git(project, 'add', '.');
  await git(project, 'commit', '-q', '-m', 'inventory: stock levels, restocking and low-stock reports');
}


/**
 * `ratchet demo`: three real tasks through every real service (sandbox,
 * safety, storage, memory) with scripted models. The first fails its tests,
 * is fixed after reflection and leaves a lesson; the second, similar task
 * retrieves that lesson and passes on its first attempt. The third works on
 * an existing project (workspace mode): the coder runs its tests, finds and
 * fixes the bug through its tools, and the result is a patch, shown and
 * left unapplied.
 *
 * @returns true when all tasks went as described; false (after saying what
 *   differed) otherwise.
 * @throws AppError when a script departs from the conversation (the model's
 *   `expect` failed) or a script was not replayed to its end.
 */
export async function runDemo(options: DemoOptions, output: Output = consoleOutput): Promise<boolean> {
  const dir = options.dir === undefined ? await mkdtemp(path.join(os.tmpdir(), 'ratchet-demo-')) : path.resolve(options.dir);
  const dataDir = path.join(dir, 'data');
  const model = await ScriptedModel.fromFile(demoScript);
  const models = scriptedRoleModels(model);
  const workspaceModel = await ScriptedModel.fromFile(workspaceDemoScript);
  output.err('Ratchet offline demo. Every service is real: Docker sandbox, tree-sitter safety check, PGlite storage, vector memory.');
  output.err(
    `The MODEL IS SCRIPTED: it replays recorded turns from ${path.relative(process.cwd(), demoScript)} and ${path.relative(process.cwd(), workspaceDemoScript)}; no model endpoint is called.`,
  );
  try {
    output.err(`\n== task 1: "${demoGoals.first}"`);
    const first = await runGoal(demoGoals.first, { lang: 'python', out: path.join(dir, 'todo'), dataDir, models, force: true }, output);
    output.err(`\n== task 2: "${demoGoals.second}" (similar, so the lesson from task 1 should be retrieved)`);
    const second = await runGoal(demoGoals.second, { lang: 'python', out: path.join(dir, 'shopping'), dataDir, models, force: true }, output);
    model.assertFinished();

    output.err('\n== task 3: fix a failing test in an existing project (workspace mode)');
    const project = path.join(dir, 'inventory');
    const patchDir = path.join(dir, 'inventory-patch');
    await createDemoProject(project);
    output.err(`a small Python package, committed to git at ${project}; one of its 4 tests fails. The goal: "${demoGoals.third}".`);
    output.err(`The coder works through tools (run, search, read_file, edit_file, finish) in a sandbox session; the model is still SCRIPTED and replays ${path.relative(process.cwd(), workspaceDemoScript)}.`);
    const third = await runGoal(demoGoals.third, { lang: 'python', out: patchDir, dataDir, models: scriptedRoleModels(workspaceModel), force: true, workspace: project }, output);
    workspaceModel.assertFinished();
    const patchFile = path.join(patchDir, patchFileName);
    const patch = await readFile(patchFile, 'utf8').catch(() => '');
    const projectStatus = await git(project, 'status', '--porcelain');
    if (patch !== '') {
      output.err(`\n-- ${patchFile}:`);
      for (const line of patch.replace(/\n$/, '').split('\n')) output.err(line);
      output.err('--');
      output.err(`Nothing was applied: git status in ${project} is ${projectStatus === '' ? 'clean' : 'NOT clean'}. Apply the fix with: git -C ${project} apply ${patchFile}`);
      output.err('(or let ratchet do it: ratchet run GOAL --workspace DIR --apply changes the files, --branch NAME commits the fix to a new branch)');
    }

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
    if (third.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED || third.task.currentIteration !== 1) problems.push(`task 3 should succeed in 1 iteration, got ${third.task.currentIteration} (${third.task.statusReason})`);
    if (patch === '') problems.push(`task 3 wrote no patch to ${patchDir}`);
    if (projectStatus !== '') problems.push(`task 3 changed the project's working tree, which only --apply may do:\n${projectStatus}`);
    output.err('\n== summary');
    output.err(`task 1 ${first.task.id}: ${first.task.currentIteration} iterations (failed, reflected, fixed; lesson stored)`);
    output.err(`task 2 ${second.task.id}: ${second.task.currentIteration} iteration(s), lessons used: ${secondLessons.map((title) => `"${title}"`).join(', ') || 'none'}`);
    output.err(`task 3 ${third.task.id}: ${third.task.currentIteration} iteration(s) in an existing project; the fix is a patch, not applied`);
    output.err(`files: ${path.join(dir, 'todo')}, ${path.join(dir, 'shopping')}, ${project} and ${patchFile}${options.dir === undefined ? ' (temporary; pass --dir to keep them)' : ''}`);
    for (const problem of problems) output.err(`UNEXPECTED: ${problem}`);
    return problems.length === 0;
  } finally {
    if (options.dir === undefined) await rm(dir, { recursive: true, force: true });
  }
}
