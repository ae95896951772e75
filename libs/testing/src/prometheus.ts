import { AppError, ErrorCode } from '@ratchet/errors';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOnPath } from './binaries';
import { freePort } from './free-port';
import { httpStatus } from './probes';
import { ServerSupervisor } from './server-supervisor';

/** One scrape job: targets `host:port` scraped on `metricsPath` (default /metrics), each target with its own labels. */
export interface PrometheusJob {
  readonly name: string;
  readonly targets: readonly { readonly address: string; readonly labels?: Readonly<Record<string, string>> }[];
  /** Sent as `Authorization: Bearer <token>` (from a file only Prometheus reads). */
  readonly bearerToken?: string;
  readonly metricsPath?: string;
}

export interface PrometheusOptions {
  readonly jobs: readonly PrometheusJob[];
  /** Scrape interval, seconds. Default 1. */
  readonly scrapeIntervalSeconds?: number;
  /** How long start() waits for /-/ready, ms. Default 20000. */
  readonly startTimeoutMs?: number;
}

/** One series of an instant query's answer. */
export interface PrometheusSample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A target as Prometheus's `/api/v1/targets` reports it. */
export interface PrometheusTargetState {
  readonly labels: Readonly<Record<string, string>>;
  readonly scrapeUrl: string;
  readonly health: 'up' | 'down' | 'unknown';
  readonly lastError: string;
  /** When the last scrape started, epoch ms (0 before the first). */
  readonly lastScrape: number;
}

export interface PrometheusFixture {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /**
   * Runs an instant query (`/api/v1/query`) and returns its series (a scalar
   * as one series without labels).
   * @throws Error with Prometheus's own message when the query is invalid.
   */
  query(expr: string): Promise<PrometheusSample[]>;
  /** Every scrape target with its health and last error. */
  targets(): Promise<PrometheusTargetState[]>;
  /** SIGTERM, then removes the data directory. Idempotent. */
  stop(): Promise<void>;
  /** The last lines Prometheus wrote. */
  output(): string;
}

/**
 * Prometheus's binary: RATCHET_PROMETHEUS_BIN, else `prometheus` on PATH
 * (Debian's package installs /usr/bin/prometheus).
 * @throws AppError FAILED_PRECONDITION when neither is an executable.
 */
export function findPrometheusBinary(): string {
  const configured = process.env['RATCHET_PROMETHEUS_BIN']?.trim();
  if (configured) return configured;
  const onPath = findOnPath('prometheus');
  if (onPath !== undefined) return onPath;
  throw new AppError(ErrorCode.FAILED_PRECONDITION, 'prometheus not found: install it (Debian: apt-get install prometheus; tools/setup.sh --for-tests does) or set RATCHET_PROMETHEUS_BIN');
}

const quote = (value: string) => JSON.stringify(value);

/**
 * Starts a real Prometheus on a free 127.0.0.1 port, with a generated
 * config scraping `jobs` every `scrapeIntervalSeconds` (default 1 s) and its
 * TSDB in a fresh temp directory, and waits until `/-/ready` answers.
 * Killed if the test process exits without stop().
 * @throws AppError FAILED_PRECONDITION when prometheus is not installed;
 *   DEADLINE_EXCEEDED when it is not ready in time; UNAVAILABLE when it exits
 *   during start-up (a bad config, with Prometheus's message in the output).
 */
export async function startPrometheus(options: PrometheusOptions): Promise<PrometheusFixture> {
  const binary = findPrometheusBinary();
  const [port, dir] = await Promise.all([freePort(), mkdtemp(join(tmpdir(), 'ratchet-prometheus-'))]);
  const interval = `${options.scrapeIntervalSeconds ?? 1}s`;
  // YAML is a superset of JSON: every value is written as a JSON string, so nothing needs escaping rules of its own.
  const lines = ['global:', `  scrape_interval: ${interval}`, `  scrape_timeout: ${interval}`, `  evaluation_interval: ${interval}`, 'scrape_configs:'];
  for (const [index, job] of options.jobs.entries()) {
    lines.push(`  - job_name: ${quote(job.name)}`, `    metrics_path: ${quote(job.metricsPath ?? '/metrics')}`);
    if (job.bearerToken !== undefined) {
      const tokenFile = join(dir, `token-${index}`);
      await writeFile(tokenFile, job.bearerToken, { mode: 0o600 });
      lines.push('    authorization:', '      type: Bearer', `      credentials_file: ${quote(tokenFile)}`);
    }
    lines.push('    static_configs:');
    for (const target of job.targets) {
      lines.push(`      - targets: [${quote(target.address)}]`, `        labels: ${JSON.stringify(target.labels ?? {})}`);
    }
  }
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, `${lines.join('\n')}\n`);
  const url = `http://127.0.0.1:${port}`;

  const supervisor = new ServerSupervisor({
    name: 'prometheus',
    launchOptions: () => ({
      command: binary,
      args: [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      cwd: dir,
    }),
    isReady: async () => (await httpStatus(`${url}/-/ready`, 1000)) === 200,
    startTimeoutMs: options.startTimeoutMs ?? 20_000,
    stopSignal: 'SIGTERM',
    stopTimeoutMs: 10_000,
    directories: [dir],
  });
  await supervisor.start();

  const api = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${url}${path}`);
    const body = (await response.json()) as { status: string; data?: T; error?: string; errorType?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.errorType ?? response.status}: ${body.error ?? 'no error message'}`);
    return body.data as T;
  };
  return {
    url,
    async query(expr) {
      const data = await api<{ resultType: string; result: unknown }>(`/api/v1/query?query=${encodeURIComponent(expr)}`);
      if (data.resultType === 'scalar') return [{ metric: {}, value: Number((data.result as [number, string])[1]) }];
      if (data.resultType !== 'vector') throw new Error(`Prometheus answered ${expr} with a ${data.resultType}; ask for an instant vector`);
      return (data.result as { metric: Record<string, string>; value: [number, string] }[]).map((series) => ({ metric: series.metric, value: Number(series.value[1]) }));
    },
    async targets() {
      const data = await api<{ activeTargets: (Omit<PrometheusTargetState, 'lastScrape'> & { lastScrape: string })[] }>('/api/v1/targets?state=active');
      return data.activeTargets.map(({ labels, scrapeUrl, health, lastError, lastScrape }) => ({ labels, scrapeUrl, health, lastError, lastScrape: Math.max(0, Date.parse(lastScrape) || 0) }));
    },
    stop: () => supervisor.stop(),
    output: () => supervisor.output(),
  };
}
