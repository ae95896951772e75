// The orchestrator's Prometheus metrics (see metricDefinitions in
// @ratchet/telemetry): tasks finished and how many iterations they took,
// tasks in each unfinished status, and how long each phase runs. The
// call sites are one line each: the transition writer, the task runner
// and main.ts.
import { isTerminal, phaseName, phaseOfStatus, statusName } from '@ratchet/agent';
import { TaskStatus } from '@ratchet/contracts';
import type { Queryable } from '@ratchet/db';
import { processMetrics } from '@ratchet/telemetry';
import type { TaskRecord } from '../domain/records';
import { terminalNames } from './store/leases';
import { schema } from './store/rows';

/** How long a scrape waits for the task counts before leaving them out, ms. */
const COUNT_TIMEOUT_MS = 2_000;

/** Every status a task can wait or work in: the gauge reports each of them, 0 when no task is in it. */
const unfinished = Object.values(TaskStatus).filter(
  (status): status is TaskStatus => typeof status === 'number' && status !== TaskStatus.TASK_STATUS_UNSPECIFIED && status !== TaskStatus.UNRECOGNIZED && !isTerminal(status),
);

/**
 * Counts a stored transition that ended a task: `ratchet_tasks_finished_total`
 * and `ratchet_task_iterations` by terminal status. Called once per
 * transition written, by whichever path wrote it (runner, approval, resume).
 */
export function recordTransition(before: Pick<TaskRecord, 'status'>, after: Pick<TaskRecord, 'status' | 'currentIteration'>): void {
  if (isTerminal(before.status) || !isTerminal(after.status)) return;
  const metrics = processMetrics();
  const status = statusName(after.status);
  metrics.tasksFinished.inc({ status });
  metrics.taskIterations.observe({ status }, after.currentIteration);
}

/**
 * Runs one phase of a task and records its duration in
 * `ratchet_phase_duration_seconds` by phase (`planning`, `safety_check`, ...)
 * and outcome: the kind of input it produced (`planned`, `tests-failed`,
 * ...), `cancelled` when `signal` stopped it, or `error`.
 * @throws whatever `run` throws, unchanged.
 */
export async function observePhase<T extends { readonly kind: string }>(status: TaskStatus, signal: AbortSignal, run: () => Promise<T>): Promise<T> {
  const phase = phaseName(phaseOfStatus(status)).replace(/ /g, '_');
  const started = performance.now();
  let outcome = 'error';
  try {
    const input = await run();
    outcome = input.kind;
    return input;
  } catch (error) {
    if (signal.aborted) outcome = 'cancelled';
    throw error;
  } finally {
    processMetrics().phaseDuration.observe({ phase, outcome }, (performance.now() - started) / 1000);
  }
}

/** The statuses a task ends in. */
const terminal = Object.values(TaskStatus).filter((status): status is TaskStatus => typeof status === 'number' && isTerminal(status));

/**
 * The metrics of an orchestrator process. Creates the finished-task series
 * at zero, so `increase()` sees the first task end, and reports
 * `ratchet_tasks_active` from the database each time Prometheus scrapes:
 * the deployment's unfinished tasks per status, whichever replica drives
 * them (tasks waiting on a person too, which no replica drives). A count
 * that does not come within 2 s is left out of that scrape rather than
 * reported stale. Returns a function that stops reporting.
 */
export function reportTaskMetrics(db: Queryable): () => void {
  const metrics = processMetrics();
  for (const status of terminal) {
    metrics.tasksFinished.inc({ status: statusName(status) }, 0);
    metrics.taskIterations.zero({ status: statusName(status) });
  }
  return metrics.readAtScrape('tasksActive', async (gauge) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`task counts took over ${COUNT_TIMEOUT_MS} ms`)), COUNT_TIMEOUT_MS)));
    try {
      const { rows } = await Promise.race([db.query<{ status: string; count: string | number }>(`SELECT status, count(*) AS count FROM ${schema}.tasks WHERE status NOT IN (${terminalNames}) GROUP BY status`), timeout]);
      const counts = new Map(rows.map((row) => [row.status.replace(/^TASK_STATUS_/, ''), Number(row.count)]));
      gauge.reset();
      for (const status of unfinished) gauge.set({ status: statusName(status) }, counts.get(statusName(status)) ?? 0);
    } finally {
      clearTimeout(timer);
    }
  });
}
