// Prometheus metrics of every Ratchet process, with prom-client: a plain
// registry with `collect` callbacks for values read at scrape time, which
// works whether or not the OpenTelemetry preload is loaded.
//
// Every metric is defined once, in `metricDefinitions`: the dashboards under
// deploy/grafana and their test rely on these names and labels. Labels stay
// bounded (services, methods, roles, models, statuses, error codes; never a
// task or job id): per-replica counts come from Prometheus's `instance` label.
import type * as PromClient from 'prom-client';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * prom-client, loaded when a process first creates metrics: a process that
 * records none (a CLI command talking to a server) never pays the tenth of a
 * second of CPU that loading it costs.
 */
const promClient = (): typeof PromClient => require('prom-client') as typeof PromClient;

/** Prefix of every Ratchet metric, the process defaults included. */
export const METRIC_PREFIX = 'ratchet_';

/** Buckets of calls over the bus, seconds: a Health call takes milliseconds, a model-backed one minutes. */
const RPC_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300] as const;
/** Buckets of one model completion, seconds. */
const MODEL_SECONDS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300] as const;
/** Buckets of one phase of the loop, seconds: retrieval takes a fraction of a second, coding can take many minutes. */
const PHASE_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800] as const;
/** Buckets of one sandbox job, seconds (the default job timeout is 300 s). */
const JOB_SECONDS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600] as const;
/** Iterations a finished task took. */
const ITERATIONS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30] as const;

type Kind = 'counter' | 'gauge' | 'histogram';

/** One metric: its full name, help text, label names and, for histograms, bucket bounds. */
export interface MetricDefinition<K extends Kind = Kind, L extends string = string> {
  readonly kind: K;
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly buckets?: readonly number[];
}

const define = <K extends Kind, L extends string = never>(definition: MetricDefinition<K, L>): MetricDefinition<K, L> => definition;

/**
 * Every metric a Ratchet process exports besides prom-client's process
 * defaults (which get the same `ratchet_` prefix). Durations are in seconds.
 */
export const metricDefinitions = {
  serviceInfo: define({ kind: 'gauge', name: 'ratchet_service_info', help: 'Always 1: which Ratchet service this process is, and its version.', labelNames: ['service_name', 'version'] }),

  rpcClientDuration: define({
    kind: 'histogram',
    name: 'ratchet_rpc_client_duration_seconds',
    help: 'Calls this process made over the bus, from first attempt to last reply or error (retries included), by RPC service and method.',
    labelNames: ['rpc_service', 'rpc_method'],
    buckets: RPC_SECONDS,
  }),
  rpcClientErrors: define({ kind: 'counter', name: 'ratchet_rpc_client_errors_total', help: 'Calls over the bus that failed after their last attempt, by RPC service, method and error code.', labelNames: ['rpc_service', 'rpc_method', 'code'] }),
  rpcClientRetries: define({ kind: 'counter', name: 'ratchet_rpc_client_retries_total', help: 'Attempts of calls over the bus that failed with a retryable error and were tried again.', labelNames: ['rpc_service', 'rpc_method'] }),
  rpcServerDuration: define({
    kind: 'histogram',
    name: 'ratchet_rpc_server_duration_seconds',
    help: 'Calls this process served over the bus, from receipt to reply, by RPC service and method.',
    labelNames: ['rpc_service', 'rpc_method'],
    buckets: RPC_SECONDS,
  }),
  rpcServerErrors: define({ kind: 'counter', name: 'ratchet_rpc_server_errors_total', help: 'Calls this process answered with an error, by RPC service, method and error code.', labelNames: ['rpc_service', 'rpc_method', 'code'] }),

  modelCallDuration: define({
    kind: 'histogram',
    name: 'ratchet_model_call_duration_seconds',
    help: 'Chat completions, from request to reply or error (the client retries included), by agent role and configured model.',
    labelNames: ['role', 'model'],
    buckets: MODEL_SECONDS,
  }),
  modelTokens: define({ kind: 'counter', name: 'ratchet_model_tokens_total', help: 'Tokens the model reported, by agent role, configured model and kind (prompt or completion).', labelNames: ['role', 'model', 'kind'] }),
  modelCost: define({ kind: 'counter', name: 'ratchet_model_cost_usd_total', help: 'Cost of the tokens used in US dollars, at the configured price of the model (0 for a model without a price).', labelNames: ['role', 'model'] }),
  modelErrors: define({ kind: 'counter', name: 'ratchet_model_errors_total', help: 'Chat completions that failed after the client retries, by agent role, configured model and error code.', labelNames: ['role', 'model', 'code'] }),
  modelRetries: define({ kind: 'counter', name: 'ratchet_model_retries_total', help: 'HTTP attempts the model client made again after a transient failure (408, 409, 429, 5xx, connection), by agent role and configured model.', labelNames: ['role', 'model'] }),

  tasksFinished: define({ kind: 'counter', name: 'ratchet_tasks_finished_total', help: 'Tasks this orchestrator replica moved to a terminal status, by that status.', labelNames: ['status'] }),
  tasksActive: define({
    kind: 'gauge',
    name: 'ratchet_tasks_active',
    help: 'Unfinished tasks of the whole deployment in each status, read from the database at scrape time; every orchestrator replica reports the same numbers, so aggregate with max, not sum.',
    labelNames: ['status'],
  }),
  taskIterations: define({ kind: 'histogram', name: 'ratchet_task_iterations', help: 'Iterations a task took when it finished, by terminal status.', labelNames: ['status'], buckets: ITERATIONS }),
  phaseDuration: define({
    kind: 'histogram',
    name: 'ratchet_phase_duration_seconds',
    help: 'Runs of one phase of the loop, by phase and outcome: what the run found (planned, tests-passed, tests-failed, ...), error when it failed (a retryable failure runs the phase again), cancelled when it was stopped.',
    labelNames: ['phase', 'outcome'],
    buckets: PHASE_SECONDS,
  }),

  sandboxJobDuration: define({
    kind: 'histogram',
    name: 'ratchet_sandbox_job_duration_seconds',
    help: 'Sandbox jobs this runner ran, by outcome: passed (exit 0), failed (another exit code), timeout, oom, error (the job could not run).',
    labelNames: ['outcome'],
    buckets: JOB_SECONDS,
  }),
  sandboxOomKills: define({ kind: 'counter', name: 'ratchet_sandbox_oom_kills_total', help: 'Sandbox jobs killed for going over their memory limit.', labelNames: [] }),
  sandboxTimeouts: define({ kind: 'counter', name: 'ratchet_sandbox_timeouts_total', help: 'Sandbox jobs stopped at their timeout.', labelNames: [] }),
  sandboxWarmPool: define({ kind: 'gauge', name: 'ratchet_sandbox_warm_pool_size', help: 'Sandboxes started ahead and waiting for a job on this runner.', labelNames: [] }),
  sandboxQueueLag: define({
    kind: 'gauge',
    name: 'ratchet_sandbox_queue_lag',
    help: 'Sandbox jobs waiting in the job queue or taken and not yet acknowledged (consumer pending + ack pending), read at scrape time and left out when JetStream does not answer; every runner reports the same queue, so aggregate with max, not sum.',
    labelNames: ['queue'],
  }),
  sandboxJobsTaken: define({ kind: 'counter', name: 'ratchet_sandbox_jobs_taken_total', help: 'Sandbox jobs this runner took from the job queue (redeliveries included).', labelNames: [] }),
} as const;

type Definitions = typeof metricDefinitions;
type LabelsOf<D> = D extends MetricDefinition<Kind, infer L> ? L : never;
type InstanceOf<D> = D extends MetricDefinition<'counter'> ? Counter<LabelsOf<D>> : D extends MetricDefinition<'gauge'> ? Gauge<LabelsOf<D>> : Histogram<LabelsOf<D>>;

/** Gauges whose value is read when Prometheus scrapes. */
export type ScrapedGauge = { [K in keyof Definitions]: Definitions[K]['kind'] extends 'gauge' ? K : never }[keyof Definitions];

/** The metrics of one registry, by the keys of `metricDefinitions`. */
export type RatchetMetrics = { readonly [K in keyof Definitions]: InstanceOf<Definitions[K]> } & {
  readonly registry: Registry;
  /**
   * Sets a gauge from `read` every time the registry is scraped (a value
   * that lives elsewhere: a pool's size, a queue's depth). A `read` that
   * throws or rejects clears the gauge, so a value that cannot be read is
   * missing rather than stale. Returns a function that removes `read`.
   */
  readAtScrape(gauge: ScrapedGauge, read: (gauge: Gauge<string>) => void | Promise<void>): () => void;
  /** Adds prom-client's process metrics (CPU, memory, event loop, GC), prefixed `ratchet_`. Idempotent. */
  collectProcessMetrics(): void;
};

/**
 * The Ratchet metrics on `registry` (default: a new one). Tests use their own
 * registry; a process uses `processMetrics()`. Each metric is registered when
 * first used, so a process exports only the metrics its code records (a
 * planner has no sandbox gauges at 0).
 */
export function createMetrics(given?: Registry): RatchetMetrics {
  const prom = promClient();
  const registry = given ?? new prom.Registry();
  const readers = new Map<string, Set<(gauge: Gauge<string>) => void | Promise<void>>>();
  const created = new Map<string, unknown>();
  const create = (key: keyof Definitions): unknown => {
    const definition: MetricDefinition = metricDefinitions[key];
    const common = { name: definition.name, help: definition.help, labelNames: [...definition.labelNames], registers: [registry] };
    if (definition.kind === 'counter') return new prom.Counter(common);
    if (definition.kind === 'histogram') return new prom.Histogram({ ...common, buckets: [...(definition.buckets ?? [])] });
    const own = new Set<(gauge: Gauge<string>) => void | Promise<void>>();
    readers.set(key, own);
    return new prom.Gauge({
      ...common,
      async collect() {
        for (const read of own) {
          try {
            await read(this);
          } catch {
            this.reset();
          }
        }
      },
    });
  };
  const metric = (key: keyof Definitions): unknown => {
    if (!created.has(key)) created.set(key, create(key));
    return created.get(key);
  };
  let processMetricsOn = false;
  const metrics = {
    registry,
    readAtScrape(gauge: ScrapedGauge, read: (gauge: Gauge<string>) => void | Promise<void>) {
      if (metricDefinitions[gauge]?.kind !== 'gauge') throw new TypeError(`${gauge} is not a gauge of metricDefinitions`);
      metric(gauge);
      const own = readers.get(gauge) as Set<(gauge: Gauge<string>) => void | Promise<void>>;
      own.add(read);
      return () => void own.delete(read);
    },
    collectProcessMetrics() {
      if (processMetricsOn) return;
      processMetricsOn = true;
      prom.collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
    },
  };
  for (const key of Object.keys(metricDefinitions) as (keyof Definitions)[]) Object.defineProperty(metrics, key, { get: () => metric(key), enumerable: true });
  return Object.freeze(metrics) as RatchetMetrics;
}

let shared: RatchetMetrics | undefined;

/**
 * This process's metrics: one registry per process, which the operations
 * server (`@ratchet/runtime`) serves on `/metrics`. Created on first use;
 * recording into it costs little when nothing scrapes it.
 */
export function processMetrics(): RatchetMetrics {
  shared ??= createMetrics();
  return shared;
}

/**
 * Name, kind and labels of every metric a Ratchet process can export: the
 * definitions above plus prom-client's process metrics. For checks that
 * something outside the code (a dashboard, an alert) names real metrics.
 */
export function exportedMetrics(): { name: string; kind: string; labelNames: readonly string[] }[] {
  const registry = new (promClient().Registry)();
  const metrics = createMetrics(registry);
  // Touch every metric, so each is registered.
  for (const key of Object.keys(metricDefinitions) as (keyof Definitions)[]) void metrics[key];
  metrics.collectProcessMetrics();
  return registry.getMetricsAsArray().map((metric) => ({
    name: metric.name,
    kind: String(metric.type),
    // prom-client keeps each metric's label names on the instance; its types leave them out.
    labelNames: (metric as { labelNames?: readonly string[] }).labelNames ?? [],
  }));
}
