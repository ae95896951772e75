import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseLanguageName, testConvention, type LanguageName } from '@ratchet/agent';
import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { collectWorkspace } from '../workspace/collect';
import type { WorkspaceSettings } from '../workspace/settings';
import { fileOfNodeId, type HiddenTests } from './hidden-tests';
import { fileAt, findClone, fixFiles, withSnapshot, type TaskSource } from './source';
import type { BenchTask } from './task';

// Workspace suites: SUITE_DIR/<task>/task.yaml plus the task's files. The
// files are collected and split exactly as `ratchet run --workspace` does:
// the project's own tests are its acceptance tests, the rest its workspace.

/** The file in each task folder that says what to do. */
export const taskFileName = 'task.yaml';

const taskFileSchema = z.strictObject({
  /** What to do, as for `ratchet run`. */
  goal: z.string().trim().min(1, 'goal is empty'),
  /** How the project runs its tests, a shell command line run from its root (as --test-command). */
  test_command: z.string().trim().min(1, 'test_command is empty; leave it out to run the tests by the language convention').optional(),
  /** Run once in the sandbox before the task's first attempt and before its hidden tests (as --setup-command), e.g. `pip install -e .`. */
  setup: z.string().trim().min(1, 'setup is empty; leave it out when the project needs none').optional(),
  /** python (default), typescript or javascript. */
  language: z.string().optional(),
  /** Attempts for this task, 1 to 100; --max-iterations overrides it. */
  max_iterations: z.number().int().min(1).max(100).optional(),
  /** Test files of the folder the agent never sees; they run on the task's result (SWE-bench style). */
  hidden_tests: z.array(z.string().trim().min(1)).optional(),
  /** Test ids (pytest node ids; `file::describe > name` for node's runner) that fail before the fix and must pass on the result. */
  fail_to_pass: z.array(z.string().trim().min(1)).optional(),
  /** Test ids that pass before the fix and must still pass on the result. */
  pass_to_pass: z.array(z.string().trim().min(1)).optional(),
  /** A real project's history instead of the folder's files: the snapshot at `commit` (the parent of `fix`); hidden_tests come from `fix`. */
  source: z
    .strictObject({
      repo: z.string().regex(/^[\w.-]+\/[\w.-]+$/, 'use the GitHub owner/name, e.g. andialbrecht/sqlparse'),
      commit: z.string().regex(/^[0-9a-f]{40}$/, 'use the full 40-character commit id'),
      fix: z.string().regex(/^[0-9a-f]{40}$/, 'use the full 40-character commit id'),
      licence: z.string().trim().min(1).optional(),
    })
    .optional(),
}).refine((spec) => (spec.hidden_tests ?? []).length === 0 || (spec.fail_to_pass ?? []).length > 0, { message: 'hidden_tests needs fail_to_pass: the tests of those files that the fix makes pass', path: ['fail_to_pass'] });

/** A folder's task, or why it cannot be one (for the suite-level error). */
type Loaded = { readonly task: BenchTask; readonly notes: readonly string[] } | { readonly problem: string };

/**
 * Loads every task folder of `dir` (sub-directories not starting with `.`,
 * in name order); files beside them (a README) are ignored.
 *
 * @returns the tasks and notes for the user (files a workspace did not send, and why).
 * @throws AppError INVALID_ARGUMENT listing every folder without task.yaml,
 *   with a task.yaml that is not YAML, lacks a goal or has unknown keys, with
 *   no tests and no test_command, or whose files cannot be collected; or when
 *   `dir` has no task folders.
 */
export async function loadDirectorySuite(dir: string, settings: WorkspaceSettings, sources?: string): Promise<{ tasks: BenchTask[]; notes: string[] }> {
  const entries = await readdir(dir, { withFileTypes: true });
  const folders = entries
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
    .map((entry) => entry.name)
    .sort();
  if (folders.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${dir} has no task folders: expected ${path.join(dir, '<task>', taskFileName)} with a goal, beside the task's files`);
  const loaded: Loaded[] = [];
  for (const folder of folders) loaded.push(await loadTaskFolder(dir, folder, settings, sources));
  const problems = loaded.flatMap((entry) => ('problem' in entry ? [entry.problem] : []));
  if (problems.length > 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${dir} has ${problems.length} bad task folder(s):\n  ${problems.join('\n  ')}`);
  return {
    tasks: loaded.flatMap((entry) => ('task' in entry ? [entry.task] : [])),
    notes: loaded.flatMap((entry) => ('notes' in entry ? entry.notes : [])),
  };
}

async function loadTaskFolder(dir: string, folder: string, settings: WorkspaceSettings, sources: string | undefined): Promise<Loaded> {
  const taskDir = path.join(dir, folder);
  const where = `${folder}/${taskFileName}`;
  let text: string;
  try {
    text = await readFile(path.join(taskDir, taskFileName), 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { problem: code === 'ENOENT' ? `${folder}: no ${taskFileName}; add one with at least a goal (and test_command unless its tests run by the language convention)` : `${where}: cannot read it (${String(error)})` };
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    return { problem: `${where} is not valid YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}` };
  }
  const parsed = taskFileSchema.safeParse(data ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.map(String).join('.')}: ${issue.code === 'invalid_type' && issue.input === undefined ? 'missing' : issue.message}`));
    return { problem: `${where}: ${issues.join('; ')} (keys: goal, and optionally test_command, setup, language, max_iterations, hidden_tests, fail_to_pass, pass_to_pass, source)` };
  }
  const spec = parsed.data;
  let language;
  try {
    language = parseLanguageName(spec.language ?? 'python');
  } catch (error) {
    return { problem: `${where}: ${AppError.from(error).message}` };
  }
  if (spec.source !== undefined) return loadSourceTask(folder, spec, spec.source, language, settings, sources);
  let collected;
  try {
    collected = await collectWorkspace(taskDir, settings);
  } catch (error) {
    return { problem: `${folder}: ${AppError.from(error).message}` };
  }
  // As `ratchet run --workspace`: the project's own tests are its acceptance tests, never edited by the model.
  const convention = testConvention(language);
  const hiddenPaths = new Set((spec.hidden_tests ?? []).map((file) => path.posix.normalize(file)));
  const files = collected.files.filter((file) => file.path !== taskFileName && !hiddenPaths.has(file.path));
  const acceptanceTests = files.filter((file) => convention.isTestPath(file.path));
  const workspace = files.filter((file) => !convention.isTestPath(file.path));
  if (acceptanceTests.length === 0 && spec.test_command === undefined) {
    return { problem: `${folder}: no tests to tell a pass from a failure; add test files (${convention.fileRule.split(' ')[0]}) or test_command to its ${taskFileName}` };
  }
  const hidden = hiddenTestsOf(spec, collected.files, files, language);
  const task: BenchTask = {
    id: folder,
    goal: spec.goal,
    language,
    workspace,
    dataFiles: collected.dataFiles,
    acceptanceTests,
    // A command line as the user would type it in the project's root, as --test-command.
    testCommand: spec.test_command === undefined ? [] : ['sh', '-c', spec.test_command],
    ...(spec.setup === undefined ? {} : { setupCommand: spec.setup }),
    ...(spec.max_iterations === undefined ? {} : { maxIterations: spec.max_iterations }),
    ...('tests' in hidden ? { hidden: hidden.tests } : {}),
    ...('error' in hidden ? { inputError: hidden.error } : {}),
  };
  return { task, notes: collected.skipped.map((skipped) => `${folder}: not sent: ${skipped.path} (${skipped.reason})`) };
}

/**
 * A task from a real project's history: the workspace is the snapshot at
 * `source.commit` (its own tests included, as SWE-bench gives them), the
 * hidden tests are the fix's versions of `hidden_tests`, and the oracle's
 * answer is the fix's other changes. Without `--sources`, or without the
 * clone or a commit in it, the task is an input error (the others run).
 */
async function loadSourceTask(folder: string, spec: TaskSpec, source: TaskSource, language: LanguageName, settings: WorkspaceSettings, sources: string | undefined): Promise<Loaded> {
  const base = { id: folder, goal: spec.goal, language, workspace: [], acceptanceTests: [], testCommand: [] } satisfies BenchTask;
  if ((spec.hidden_tests ?? []).length === 0) return { problem: `${folder}/${taskFileName}: a task with a source needs hidden_tests (the fix's test files) and fail_to_pass` };
  if (sources === undefined) return { task: { ...base, inputError: `needs a clone of ${source.repo}: pass --sources DIR (or set RATCHET_BENCH_SOURCES) with ${source.repo.replace('/', '+')} in it` }, notes: [] };
  try {
    const clone = findClone(sources, source.repo);
    const collected = await withSnapshot(clone, source.commit, (snapshot) => collectWorkspace(snapshot, settings));
    const hiddenFiles: SourceFile[] = [];
    for (const wanted of spec.hidden_tests ?? []) {
      const file = await fileAt(clone, source.fix, path.posix.normalize(wanted));
      if (file === undefined) return { task: { ...base, inputError: `hidden test ${wanted} is not in the fix ${source.fix.slice(0, 12)} of ${source.repo}` }, notes: [] };
      hiddenFiles.push(file);
    }
    const convention = testConvention(language);
    const hidden = hiddenTestsOf(spec, hiddenFiles, collected.files, language);
    const oracle = await fixFiles(clone, source, new Set(hiddenFiles.map((file) => file.path)));
    const task: BenchTask = {
      ...base,
      workspace: collected.files.filter((file) => !convention.isTestPath(file.path)),
      dataFiles: collected.dataFiles,
      acceptanceTests: collected.files.filter((file) => convention.isTestPath(file.path)),
      testCommand: spec.test_command === undefined ? [] : ['sh', '-c', spec.test_command],
      ...(spec.setup === undefined ? {} : { setupCommand: spec.setup }),
      ...(spec.max_iterations === undefined ? {} : { maxIterations: spec.max_iterations }),
      ...('tests' in hidden ? { hidden: hidden.tests } : {}),
      ...('error' in hidden ? { inputError: hidden.error } : {}),
      source,
      oracle: oracle.files,
    };
    return { task, notes: collected.skipped.length === 0 ? [] : [`${folder}: ${collected.skipped.length} file(s) of ${source.repo} not sent (ignored, secret-like or too large)`] };
  } catch (error) {
    return { task: { ...base, inputError: AppError.from(error).message }, notes: [] };
  }
}

type TaskSpec = z.infer<typeof taskFileSchema>;

/**
 * The hidden tests a task.yaml names, or why they cannot run (an input error
 * of that task: the bench goes on with the others). Every hidden file must be
 * in the folder, and every test id must be in a hidden or a sent file.
 */
function hiddenTestsOf(spec: TaskSpec, collected: readonly SourceFile[], sent: readonly SourceFile[], language: LanguageName): { tests: HiddenTests } | { error: string } | Record<string, never> {
  const failToPass = spec.fail_to_pass ?? [];
  const passToPass = spec.pass_to_pass ?? [];
  if ((spec.hidden_tests ?? []).length === 0 && failToPass.length === 0 && passToPass.length === 0) return {};
  const byPath = new Map(collected.map((file) => [file.path, file]));
  const files: SourceFile[] = [];
  for (const wanted of spec.hidden_tests ?? []) {
    const file = byPath.get(path.posix.normalize(wanted));
    if (file === undefined) return { error: `hidden test ${wanted} is not a file of the task folder (or its ignore rules leave it out)` };
    files.push(file);
  }
  const known = new Set([...files, ...sent].map((file) => file.path));
  const stray = [...failToPass, ...passToPass].find((nodeId) => !known.has(path.posix.normalize(fileOfNodeId(nodeId))));
  const example = language === 'python' ? 'a pytest node id, e.g. tests/test_x.py::test_y' : "the file, '::' and the test's describe blocks and name joined by ' > ', e.g. test/x.test.js::parse > rejects empty input";
  const malformed = [...failToPass, ...passToPass].find((nodeId) => !nodeId.includes('::') || nodeId.endsWith('::'));
  if (malformed !== undefined) return { error: `test ${malformed} names no test; use ${example}` };
  if (stray !== undefined) return { error: `test ${stray} is in no file of the task (hidden or sent); use ${example}` };
  return { tests: { language, files, failToPass, passToPass } };
}
