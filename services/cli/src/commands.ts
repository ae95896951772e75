import { rm } from 'node:fs/promises';
import path from 'node:path';
import { ApprovalDecision, ApprovalKind, TaskStatus, TaskView, TestCaseStatus, type Iteration, type SourceFile, type Task } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { RoleModels } from '@ratchet/llm';
import { isTerminal, languageToProto, mergeFiles, parseLanguageName, statusName, stopReasonName, toIterationView } from '@ratchet/agent';
import { openApi, serverTarget, type ConnectOptions, type TaskApi } from './api';
import { configDirectory, loadCliConfig } from './cli-config';
import { checkOutputDirectory, failingMarker, readDirectoryFiles, writeFiles } from './files';
import { approvalKindName, eventJson, formatUsage, oneLine, renderEvent } from './render';
/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

export const consoleOutput: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

export interface RunOptions extends ConnectOptions {
  readonly lang: string;
  readonly tests?: string;
  readonly out: string;
  readonly force?: boolean;
  readonly maxIterations?: string;
  readonly json?: boolean;
  /** Wait for a person to approve the passing result before the task succeeds (`ratchet approve`). */
  readonly requireApproval?: boolean;
  /** Labels added to the task, e.g. from the demo. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Replaces the configured models (embedded mode). */
  readonly models?: RoleModels;
}

export interface RunResult {
  readonly task: Task;
  readonly written: readonly string[];
  /** The user detached with Ctrl-C from a task on a server; it goes on there. */
  readonly detached?: boolean;
}

/**
 * `ratchet run`: submits the goal (to an embedded Ratchet, or to the server
 * of `--server`), prints progress as events arrive and writes the result
 * files to `--out` on success. Ctrl-C cancels an embedded task; on a server
 * it only detaches, and says how to watch the task again.
 *
 * @throws AppError for bad arguments or config (before anything runs).
 */
export async function runGoal(goal: string, options: RunOptions, output: Output = consoleOutput): Promise<RunResult> {
  if (goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'the goal is empty; usage: ratchet run "a CLI that manages TODO items in JSON"');
  const language = parseLanguageName(options.lang);
  const maxIterations = options.maxIterations === undefined ? 0 : Number(options.maxIterations);
  if (!Number.isInteger(maxIterations) || maxIterations < 0 || maxIterations > 100) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `--max-iterations ${options.maxIterations}: use a whole number from 1 to 100`);
  }
  const remote = serverTarget(options) !== undefined;
  if (options.requireApproval && !remote) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, '--require-approval needs a server (--server host:port): an embedded task cannot be approved from another process');
  }
  // Embedded mode checks its config before any work; a server has its own.
  if (!remote) loadCliConfig(configDirectory());
  const acceptanceTests = options.tests === undefined ? [] : await readDirectoryFiles(options.tests, 'tests/');
  const outDir = path.resolve(options.out);
  await checkOutputDirectory(outDir, options.force ?? false);
  const api = await openApi({ ...options, drive: true });
  if (!options.json && api.modelNames !== undefined) {
    const scripted = api.modelNames.some((name) => name.startsWith('scripted:'));
    output.err(`model: ${api.modelNames.join(', ')}${scripted ? ' (a SCRIPTED model replaying recorded turns; no model endpoint is called)' : ''}`);
  }
  let taskId = '';
  const stopWatching = new AbortController();
  const interrupt = () => {
    process.once('SIGINT', () => process.exit(130));
    if (remote) {
      output.err(`detached: task ${taskId || '(not submitted yet)'} goes on at ${api.where}; watch it again with: ratchet watch ${taskId}`);
      stopWatching.abort();
      return;
    }
    output.err('interrupted: cancelling the task (Ctrl-C again to quit at once)');
    if (taskId !== '') void api.cancelTask(taskId, 'interrupted by the user (Ctrl-C)').catch(() => undefined);
  };
  process.once('SIGINT', interrupt);
  try {
    const task = await api.submitTask({
      goal,
      language: languageToProto(language),
      budget: { maxIterations, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined },
      workspace: [],
      acceptanceTests,
      approvalPolicy: options.requireApproval ? { required: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT], timeout: undefined } : undefined,
      labels: { ...options.labels },
      requestId: '',
      testCommand: [],
    });
    taskId = task.id;
    if (!options.json && remote) output.err(`task ${task.id} submitted to ${api.where}`);
    return await followToEnd(api, task, stopWatching.signal, outDir, options.json ?? false, output);
  } finally {
    process.removeListener('SIGINT', interrupt);
    await api.close();
  }
}

/** Prints a task's events until it completes (or `signal` aborts). */
async function followEvents(api: TaskApi, taskId: string, signal: AbortSignal, json: boolean, output: Output): Promise<void> {
  try {
    for await (const event of api.watchTask(taskId, signal)) {
      if (json) output.out(eventJson(event));
      else {
        const line = renderEvent(event);
        if (line !== undefined) output.err(line);
      }
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

/** Follows a task until it ends, then finishes it like `run`; a detach (`signal`) returns at once. */
async function followToEnd(api: TaskApi, task: Task, signal: AbortSignal, outDir: string | undefined, json: boolean, output: Output): Promise<RunResult> {
  await followEvents(api, task.id, signal, json, output);
  if (signal.aborted) return { task, written: [], detached: true };
  return finish(api, task.id, outDir, json, output);
}

/**
 * Reads the ended task and, with `outDir`, writes its files there with the
 * user's acceptance tests: the passing result, or for a task that ended
 * without passing its last attempt, marked by a FAILING.md that lists the
 * failing tests and how to go on.
 */
async function finish(api: TaskApi, taskId: string, outDir: string | undefined, json: boolean, output: Output): Promise<RunResult> {
  const full = await api.getTask(taskId, TaskView.TASK_VIEW_FULL);
  const final = full.task;
  if (final === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${taskId} vanished`);
  const succeeded = final.status === TaskStatus.TASK_STATUS_SUCCEEDED;
  let written: string[] = [];
  if (outDir !== undefined && final.resultFiles.length > 0) {
    // The user's tests win over a generated file of the same path.
    const files = mergeFiles(final.resultFiles, final.acceptanceTests);
    const marker = succeeded ? [] : [{ path: failingMarker, content: failingReport(final, full.iterations.at(-1)) }];
    written = await writeFiles(outDir, [...files, ...marker]);
    // A passing result replaces a failing attempt written there before: its marker goes.
    if (succeeded) await rm(path.join(outDir, failingMarker), { force: true });
    if (!json) {
      output.err(
        succeeded
          ? `wrote ${written.length} file(s) to ${outDir}: ${files.map((file) => file.path).join(', ')}`
          : `wrote the last attempt (FAILING its tests) to ${outDir}: ${files.map((file) => file.path).join(', ')}; ${failingMarker} lists what fails`,
      );
    }
  }
  if (!json && succeeded && written.length > 0 && outDir !== undefined) {
    const hint = runHint(final.resultFiles, outDir);
    if (hint !== undefined) output.err(hint);
  }
  if (!json && succeeded && written.length === 0) output.err(`task ${final.id} SUCCEEDED`);
  if (!json && !succeeded) {
    output.err(`task ${final.id} ${statusName(final.status)}: ${stopReasonName(final.stopReason)} - ${final.statusReason}`);
    output.err(`see what happened: ratchet show ${final.id}`);
  }
  return { task: final, written };
}

/**
 * How to run the result, when it says: a package.json's start and test
 * scripts (Node runs TypeScript directly), or a Python file with a main
 * guard. Undefined for a library.
 */
export function runHint(files: readonly SourceFile[], outDir: string): string | undefined {
  const manifest = files.find((file) => file.path === 'package.json');
  if (manifest !== undefined) {
    let scripts: Record<string, unknown> = {};
    try {
      const parsed = JSON.parse(manifest.content) as { scripts?: Record<string, unknown> };
      scripts = parsed.scripts ?? {};
    } catch {
      return undefined;
    }
    const commands = [typeof scripts['start'] === 'string' ? 'npm start -- ARGS' : '', typeof scripts['test'] === 'string' ? 'npm test' : ''].filter((command) => command !== '');
    return commands.length === 0 ? undefined : `run it: cd ${outDir} && ${commands.join(', or ')}`;
  }
  const program = files.find((file) => file.path.endsWith('.py') && !/(^|\/)(test_[^/]*|conftest)\.py$/.test(file.path) && /if __name__ == ['"]__main__['"]/.test(file.content));
  return program === undefined ? undefined : `run it: cd ${outDir} && python3 ${program.path} ARGS`;
}

/** FAILING.md: why the task ended, which tests fail and with what, and how to resume it. */
function failingReport(task: Task, last: Iteration | undefined): string {
  const report = last?.testReport;
  const failing = (report?.cases ?? []).filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED);
  const lines = [
    `# FAILING: this is the last attempt of task ${task.id}, and its tests do not pass`,
    '',
    `Goal: ${oneLine(task.goal, 300)}`,
    '',
    `Ended ${statusName(task.status)} (${stopReasonName(task.stopReason)}): ${task.statusReason}`,
    '',
    report === undefined ? 'No test report for the last attempt.' : `Tests in iteration ${last?.number ?? 0}: ${report.passed}/${report.total} passed.`,
    ...(failing.length === 0 ? [] : ['', 'Failing tests:', ...failing.map((testCase) => `- ${testCase.suite ? `${testCase.suite}::` : ''}${testCase.name}: ${oneLine(testCase.failureMessage, 300)}`)]),
    ...(last?.error === undefined || failing.length > 0 ? [] : ['', `Error: ${last.error.message}`]),
    '',
    `See every iteration: ratchet show ${task.id}`,
    `Go on from here: ratchet resume ${task.id} --add-iterations 3 --hint "what to try"`,
    '',
  ];
  return lines.join('\n');
}

/**
 * `ratchet watch TASK_ID`: the task's events from the start, then live ones
 * until it ends; with `--out`, writes the files of a succeeded task.
 */
export async function watchTask(taskId: string, options: ConnectOptions & { json?: boolean; out?: string; force?: boolean }, output: Output = consoleOutput): Promise<RunResult> {
  const outDir = options.out === undefined ? undefined : path.resolve(options.out);
  if (outDir !== undefined) await checkOutputDirectory(outDir, options.force ?? false);
  const api = await openApi({ ...options, drive: false });
  const stop = new AbortController();
  const detach = () => {
    output.err(`stopped watching; the task goes on at ${api.where}`);
    stop.abort();
  };
  process.once('SIGINT', detach);
  try {
    const id = (await api.getTask(taskId.trim(), TaskView.TASK_VIEW_BASIC)).task?.id ?? taskId.trim();
    await followEvents(api, id, stop.signal, options.json ?? false, output);
    if (stop.signal.aborted) {
      const task = (await api.getTask(id, TaskView.TASK_VIEW_BASIC)).task;
      if (task === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${id} vanished`);
      return { task, written: [], detached: true };
    }
    return await finish(api, id, outDir, options.json ?? false, output);
  } finally {
    process.removeListener('SIGINT', detach);
    await api.close();
  }
}

/** `ratchet cancel TASK_ID`: stops a running task on the server; it ends CANCELLED. */
export async function cancelTask(taskId: string, options: ConnectOptions & { reason?: string; json?: boolean }, output: Output = consoleOutput): Promise<Task> {
  const api = await openApi({ ...options, drive: false });
  try {
    const task = await api.cancelTask(taskId.trim(), options.reason ?? 'cancelled with ratchet cancel');
    if (options.json) output.out(JSON.stringify(taskJson(task)));
    else output.out(`task ${task.id} ${statusName(task.status)}${task.statusReason ? `: ${task.statusReason}` : ''}`);
    return task;
  } finally {
    await api.close();
  }
}

/**
 * `ratchet resume TASK_ID`: continues a FAILED task (on the server, or
 * embedded in this process) with more budget and an optional hint, follows
 * it like `ratchet run` and writes its files to `--out` when it succeeds.
 */
export async function resumeTask(
  taskId: string,
  options: ConnectOptions & { hint?: string; addIterations?: string; out?: string; force?: boolean; json?: boolean; models?: RoleModels },
  output: Output = consoleOutput,
): Promise<RunResult> {
  const more = options.addIterations === undefined ? 0 : Number(options.addIterations);
  if (!Number.isInteger(more) || more < 0 || more > 100) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--add-iterations ${options.addIterations}: use a whole number from 0 to 100`);
  const outDir = options.out === undefined ? undefined : path.resolve(options.out);
  if (outDir !== undefined) await checkOutputDirectory(outDir, options.force ?? false);
  const remote = serverTarget(options) !== undefined;
  const api = await openApi({ ...options, drive: true });
  const stop = new AbortController();
  const interrupt = () => {
    process.once('SIGINT', () => process.exit(130));
    if (remote) output.err(`detached: the task goes on at ${api.where}; watch it again with: ratchet watch ${taskId}`);
    else output.err('interrupted: cancelling the task (Ctrl-C again to quit at once)');
    if (!remote) void api.cancelTask(taskId, 'interrupted by the user (Ctrl-C)').catch(() => undefined);
    else stop.abort();
  };
  process.once('SIGINT', interrupt);
  try {
    const task = await api.resumeTask({ taskId: taskId.trim(), hint: options.hint ?? '', additionalBudget: { maxIterations: more, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined } });
    if (!options.json) output.err(`task ${task.id} resumed (${statusName(task.status)}) at ${api.where}`);
    return await followToEnd(api, task, stop.signal, outDir, options.json ?? false, output);
  } finally {
    process.removeListener('SIGINT', interrupt);
    await api.close();
  }
}

/** `ratchet approve TASK_ID GATE_ID [--reject]`: records a decision on an approval gate. */
export async function approveGate(taskId: string, gateId: string, options: ConnectOptions & { reject?: boolean; comment?: string }, output: Output = consoleOutput): Promise<void> {
  const api = await openApi({ ...options, drive: false });
  try {
    const { task } = await api.approve({
      taskId: taskId.trim(),
      gateId: gateId.trim(),
      decision: options.reject ? ApprovalDecision.APPROVAL_DECISION_REJECTED : ApprovalDecision.APPROVAL_DECISION_APPROVED,
      approver: process.env['USER'] ?? '',
      comment: options.comment ?? '',
    });
    output.out(`gate ${gateId} of task ${taskId} ${options.reject ? 'rejected' : 'approved'}; the task is ${task === undefined ? 'moving on' : statusName(task.status)}`);
  } finally {
    await api.close();
  }
}

function taskJson(task: Task) {
  return { id: task.id, goal: task.goal, status: statusName(task.status), stopReason: task.stopReason ? stopReasonName(task.stopReason) : '', statusReason: task.statusReason, iterations: task.currentIteration, usage: task.usage, createdAt: task.createdAt };
}

/** `ratchet history`: recent tasks, newest first. */
export async function showHistory(options: ConnectOptions & { limit?: string; status?: string; json?: boolean }, output: Output = consoleOutput): Promise<void> {
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--limit ${options.limit}: use 1 to 100`);
  const statuses = options.status === undefined ? [] : [parseStatus(options.status)];
  const api = await openApi({ ...options, drive: false });
  try {
    const { tasks } = await api.listTasks({ statuses, labels: {}, pageSize: limit, pageToken: '', view: TaskView.TASK_VIEW_BASIC });
    if (options.json) {
      for (const task of tasks) output.out(JSON.stringify(taskJson(task)));
      return;
    }
    if (tasks.length === 0) {
      output.out('no tasks yet; start one with: ratchet run "your goal"');
      return;
    }
    for (const task of tasks) {
      const created = task.createdAt === undefined ? ''.padEnd(16) : task.createdAt.toISOString().slice(0, 16).replace('T', ' ');
      output.out(`${task.id.slice(0, 8)}  ${created}  ${statusName(task.status).padEnd(10)} ${String(task.currentIteration).padStart(2)} it  ${formatUsage(task.usage)}  ${oneLine(task.goal, 60)}`);
    }
  } finally {
    await api.close();
  }
}

/** `ratchet show TASK_ID`: a task's iterations, errors, reflections and lessons. */
export async function showTask(taskId: string, options: ConnectOptions & { json?: boolean }, output: Output = consoleOutput): Promise<void> {
  const api = await openApi({ ...options, drive: false });
  try {
    const { task, iterations, approvals } = await api.getTask(taskId.trim(), TaskView.TASK_VIEW_FULL);
    if (task === undefined) throw new AppError(ErrorCode.INTERNAL, `the answer for task ${taskId} has no task`);
    if (options.json) {
      output.out(
        JSON.stringify({
          task: {
            ...task,
            status: statusName(task.status),
            stopReason: stopReasonName(task.stopReason),
            // Paths and titles: the files themselves are what `--out` is for.
            workspace: task.workspace.map((file) => file.path),
            acceptanceTests: task.acceptanceTests.map((file) => file.path),
            resultFiles: task.resultFiles.map((file) => file.path),
            lessons: task.lessons.map((lesson) => lesson.title),
          },
          iterations: iterations.map(toIterationView),
        }),
      );
      return;
    }
    output.out(`task ${task.id}`);
    output.out(`goal: ${task.goal}`);
    output.out(`status: ${statusName(task.status)}${task.stopReason ? ` (${stopReasonName(task.stopReason)})` : ''}${task.statusReason ? ` - ${task.statusReason}` : ''}`);
    output.out(`iterations: ${task.currentIteration}, re-plans: ${task.replanCount}, resumes: ${task.resumeCount}, usage: ${formatUsage(task.usage)}`);
    output.out(`lessons used: ${task.lessons.length === 0 ? 'none' : task.lessons.map((lesson) => `"${oneLine(lesson.title)}"`).join(', ')}`);
    const plan = iterations.at(-1)?.plan;
    if (plan !== undefined) output.out(`plan: ${plan.summary}`);
    for (const gate of approvals) {
      const decided = gate.decision === ApprovalDecision.APPROVAL_DECISION_PENDING ? 'PENDING' : `${gate.decision === ApprovalDecision.APPROVAL_DECISION_APPROVED ? 'approved' : 'rejected'} by ${gate.approver}${gate.comment ? `: ${gate.comment}` : ''}`;
      output.out(`approval gate ${gate.gateId} (${approvalKindName(gate.kind)}, iteration ${gate.iteration}): ${decided}`);
    }
    if (task.pendingGateId !== '') output.out(`waiting for approval: ratchet approve ${task.id} ${task.pendingGateId} [--reject --comment "..."]`);
    else if (!isTerminal(task.status)) output.out(`still running; follow it with: ratchet watch ${task.id}`);
    for (const iteration of iterations) {
      const view = toIterationView(iteration);
      output.out('');
      output.out(`iteration ${view.number}: ${view.outcome}, ${formatUsage(iteration.usage)}`);
      output.out(`  files: ${iteration.files.map((file) => file.path).join(', ') || '(none)'}`);
      if (view.tests !== '') output.out(`  tests: ${view.tests}`);
      if (iteration.error !== undefined) output.out(`  error: ${iteration.error.code}: ${iteration.error.message}`);
      for (const finding of iteration.safetyFindings) output.out(`  safety: ${finding.ruleId} ${finding.path}:${finding.line} ${finding.message}`);
      if (iteration.reflection !== undefined) {
        output.out(`  root cause: ${iteration.reflection.rootCause}`);
        output.out(`  hypothesis: ${iteration.reflection.hypothesis}`);
        output.out(`  next: ${iteration.reflection.fixDirection}`);
        // The lesson as memory kept it: merged into an earlier lesson, it has that lesson's title, as the live output said.
        const stored = iteration.storedLesson;
        if (stored !== undefined) output.out(`  lesson ${stored.created ? 'stored' : 'merged into'}: "${oneLine(stored.title)}"`);
        else if (iteration.reflection.candidateLesson !== undefined) output.out(`  lesson drafted, not stored: "${oneLine(iteration.reflection.candidateLesson.title)}"`);
      }
      if (iteration.reflectionLessons.length > 0) output.out(`  lessons about this error: ${iteration.reflectionLessons.map((lesson) => `"${oneLine(lesson.title)}"`).join(', ')}`);
    }
  } finally {
    await api.close();
  }
}

function parseStatus(text: string): TaskStatus {
  const key = `TASK_STATUS_${text.trim().toUpperCase()}`;
  const value = (TaskStatus as unknown as Record<string, number>)[key];
  if (value === undefined) {
    const names = Object.keys(TaskStatus).filter((name) => name.startsWith('TASK_STATUS_') && name !== 'TASK_STATUS_UNSPECIFIED');
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `unknown status ${text}; use one of ${names.map((name) => name.replace('TASK_STATUS_', '').toLowerCase()).join(', ')}`);
  }
  return value as TaskStatus;
}
