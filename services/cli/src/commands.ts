import path from 'node:path';
import { languageToProto, parseLanguageName } from '@ratchet/agent';
import { TaskEvent, TaskStatus, TaskView, type Task } from '@ratchet/contracts';
import { openPglite } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { RoleModels } from '@ratchet/llm';
import { statusName, stopReasonName, TaskStore, toIterationView } from '@ratchet/orchestrator';
import { configDirectory, dataDirectory, loadCliConfig } from './cli-config';
import { startEmbedded } from './embedded';
import { checkOutputDirectory, readDirectoryFiles, writeFiles } from './files';
import { eventJson, formatUsage, renderEvent } from './render';

/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

export const consoleOutput: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

export interface RunOptions {
  readonly lang: string;
  readonly tests?: string;
  readonly out: string;
  readonly force?: boolean;
  readonly maxIterations?: string;
  readonly json?: boolean;
  readonly dataDir?: string;
  /** Labels added to the task, e.g. from the demo. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Replaces the configured models. */
  readonly models?: RoleModels;
}

export interface RunResult {
  readonly task: Task;
  readonly written: readonly string[];
}

/**
 * `ratchet run`: submits the goal to an embedded Ratchet, prints progress
 * as events arrive and writes the result files to `--out` on success.
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
  const configDir = configDirectory();
  const config = loadCliConfig(configDir);
  const acceptanceTests = options.tests === undefined ? [] : await readDirectoryFiles(options.tests, 'tests/');
  const outDir = path.resolve(options.out);
  await checkOutputDirectory(outDir, options.force ?? false);
  const ratchet = await startEmbedded({ config, configDir, dataDir: options.dataDir ?? dataDirectory(config), ...(options.models === undefined ? {} : { models: options.models }) });
  const modelNames = [...new Set(Object.values(ratchet.models).map((model) => model.modelName))];
  if (!options.json) {
    const scripted = modelNames.some((name) => name.startsWith('scripted:'));
    output.err(`model: ${modelNames.join(', ')}${scripted ? ' (a SCRIPTED model replaying recorded turns; no model endpoint is called)' : ''}`);
  }
  let taskId = '';
  const interrupt = () => {
    output.err('interrupted: cancelling the task (Ctrl-C again to quit at once)');
    process.once('SIGINT', () => process.exit(130));
    if (taskId !== '') void ratchet.client.cancelTask({ taskId, reason: 'interrupted by the user (Ctrl-C)' }).catch(() => undefined);
  };
  process.once('SIGINT', interrupt);
  try {
    const { task } = await ratchet.client.submitTask({
      goal,
      language: languageToProto(language),
      budget: { maxIterations, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined },
      workspace: [],
      acceptanceTests,
      approvalPolicy: undefined,
      labels: { ...options.labels },
      requestId: '',
    });
    if (task === undefined) throw new AppError(ErrorCode.INTERNAL, 'the orchestrator accepted the task but returned none');
    taskId = task.id;
    const reader = await ratchet.transport.readEvents(task.id);
    for await (const stored of reader) {
      const event = TaskEvent.decode(stored.data);
      if (options.json) output.out(eventJson(event));
      else {
        const line = renderEvent(event);
        if (line !== undefined) output.err(line);
      }
      if (event.payload?.$case === 'taskCompleted') break;
    }
    await reader.stop();
    const final = (await ratchet.client.getTask({ taskId: task.id, view: TaskView.TASK_VIEW_FULL })).task;
    if (final === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${task.id} vanished`);
    let written: string[] = [];
    if (final.status === TaskStatus.TASK_STATUS_SUCCEEDED) {
      written = await writeFiles(outDir, final.resultFiles);
      if (!options.json) output.err(`wrote ${written.length} file(s) to ${outDir}: ${final.resultFiles.map((file) => file.path).join(', ')}`);
    } else if (!options.json) {
      output.err(`task ${final.id} ${statusName(final.status)}: ${stopReasonName(final.stopReason)} - ${final.statusReason}`);
      output.err(`see what happened: ratchet show ${final.id}`);
    }
    return { task: final, written };
  } finally {
    process.removeListener('SIGINT', interrupt);
    await ratchet.close();
  }
}

async function openStore(dataDir: string | undefined) {
  const config = loadCliConfig(configDirectory());
  const db = await openPglite({ dataDir: dataDir ?? dataDirectory(config), vector: true });
  try {
    return { db, store: await TaskStore.open(db) };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/** `ratchet history`: recent tasks, newest first. */
export async function showHistory(options: { limit?: string; status?: string; json?: boolean; dataDir?: string }, output: Output = consoleOutput): Promise<void> {
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--limit ${options.limit}: use 1 to 100`);
  const statuses = options.status === undefined ? [] : [parseStatus(options.status)];
  const { db, store } = await openStore(options.dataDir);
  try {
    const { tasks } = await store.list({ statuses, pageSize: limit, offset: 0 });
    if (options.json) {
      for (const task of tasks) output.out(JSON.stringify({ id: task.id, goal: task.goal, status: statusName(task.status), iterations: task.currentIteration, usage: task.usage, createdAt: task.createdAt }));
      return;
    }
    if (tasks.length === 0) {
      output.out('no tasks yet; start one with: ratchet run "your goal"');
      return;
    }
    for (const task of tasks) {
      output.out(`${task.id.slice(0, 8)}  ${task.createdAt.toISOString().slice(0, 16).replace('T', ' ')}  ${statusName(task.status).padEnd(10)} ${String(task.currentIteration).padStart(2)} it  ${formatUsage(task.usage)}  ${task.goal.slice(0, 60)}`);
    }
  } finally {
    await db.close();
  }
}

/** `ratchet show TASK_ID`: a task's iterations, errors, reflections and lessons. */
export async function showTask(taskId: string, options: { json?: boolean; dataDir?: string }, output: Output = consoleOutput): Promise<void> {
  const { db, store } = await openStore(options.dataDir);
  try {
    const task = await store.get(taskId.trim());
    const iterations = await store.iterations(task.id);
    if (options.json) {
      output.out(JSON.stringify({ task: { ...task, status: statusName(task.status), stopReason: stopReasonName(task.stopReason) }, iterations: iterations.map(toIterationView) }));
      return;
    }
    output.out(`task ${task.id}`);
    output.out(`goal: ${task.goal}`);
    output.out(`status: ${statusName(task.status)}${task.stopReason ? ` (${stopReasonName(task.stopReason)})` : ''}${task.statusReason ? ` - ${task.statusReason}` : ''}`);
    output.out(`iterations: ${task.currentIteration}, re-plans: ${task.replanCount}, usage: ${formatUsage(task.usage)}`);
    output.out(`lessons used: ${task.lessons.length === 0 ? 'none' : task.lessons.map((lesson) => `"${lesson.title}"`).join(', ')}`);
    if (task.plan !== undefined) output.out(`plan: ${task.plan.summary}`);
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
        if (iteration.reflection.candidateLesson !== undefined) output.out(`  lesson: "${iteration.reflection.candidateLesson.title}"`);
      }
      if (iteration.reflectionLessons.length > 0) output.out(`  lessons about this error: ${iteration.reflectionLessons.map((lesson) => `"${lesson.title}"`).join(', ')}`);
    }
  } finally {
    await db.close();
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
