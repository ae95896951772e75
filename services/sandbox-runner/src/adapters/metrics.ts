// The sandbox runner's Prometheus metrics (see metricDefinitions in
// @ratchet/telemetry): how jobs end and how long they take, OOM kills and
// timeouts, the warm pool, the job queue's backlog and the jobs taken.
import type { SandboxJobResult } from '@ratchet/contracts';
import { processMetrics } from '@ratchet/telemetry';

/** How long a scrape waits for the queue's backlog before leaving it out, ms. */
const BACKLOG_TIMEOUT_MS = 1_000;

/** How a job ended, for the `outcome` label: a kill for memory or time says more than its exit code. */
export function jobOutcome(result: Pick<SandboxJobResult, 'exitCode' | 'timedOut' | 'oomKilled'>): 'passed' | 'failed' | 'timeout' | 'oom' {
  if (result.oomKilled) return 'oom';
  if (result.timedOut) return 'timeout';
  return result.exitCode === 0 ? 'passed' : 'failed';
}

/**
 * Runs one sandbox job and records it: its duration by outcome, and an OOM
 * kill or a timeout in their own counters; a job that could not run at all
 * is `error`.
 * @throws whatever `run` throws, unchanged.
 */
export async function observeJob(run: () => Promise<SandboxJobResult>): Promise<SandboxJobResult> {
  const metrics = processMetrics();
  const started = performance.now();
  let outcome: ReturnType<typeof jobOutcome> | 'error' = 'error';
  try {
    const result = await run();
    outcome = jobOutcome(result);
    if (result.oomKilled) metrics.sandboxOomKills.inc();
    if (result.timedOut) metrics.sandboxTimeouts.inc();
    return result;
  } finally {
    metrics.sandboxJobDuration.observe({ outcome }, (performance.now() - started) / 1000);
  }
}

/** Counts a job taken from the queue (a redelivery too). */
export function countJobTaken(): void {
  processMetrics().sandboxJobsTaken.inc();
}

/**
 * Reports the runner's warm pool, the backlog of its job queue (read with
 * `backlog` at each scrape, left out when it does not answer within 1 s) and zeroes
 * for the counters, so every series exists from the start. Returns a
 * function that stops reporting.
 */
export function reportRunner(options: { queue: string; warmPoolSize: () => number; backlog: () => Promise<{ pending: number; ackPending: number }> }): () => void {
  const metrics = processMetrics();
  metrics.sandboxOomKills.inc(0);
  metrics.sandboxTimeouts.inc(0);
  metrics.sandboxJobsTaken.inc(0);
  const stops = [
    metrics.readAtScrape('sandboxWarmPool', (gauge) => gauge.set(options.warmPoolSize())),
    metrics.readAtScrape('sandboxQueueLag', async (gauge) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no backlog within ${BACKLOG_TIMEOUT_MS} ms`)), BACKLOG_TIMEOUT_MS)));
      try {
        const { pending, ackPending } = await Promise.race([options.backlog(), timeout]);
        gauge.set({ queue: options.queue }, pending + ackPending);
      } finally {
        clearTimeout(timer);
      }
    }),
  ];
  return () => stops.forEach((stop) => stop());
}
