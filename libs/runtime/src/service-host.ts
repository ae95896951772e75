import { hostname } from 'node:os';
import { NatsTransport, serveService } from '@ratchet/bus';
import type { MethodDefinition, ServiceDefinition, ServiceImplementation, ServiceServer, Transport } from '@ratchet/bus';
import type { HealthRequest, HealthResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { DependencyCheck } from './health';
import { healthReport, runChecks } from './health';

/** A service definition that has the Health RPC every Ratchet service serves. */
export type HealthServiceDefinition = ServiceDefinition & {
  readonly methods: { readonly health: MethodDefinition<HealthRequest, HealthResponse> & { readonly requestStream: false; readonly responseStream: false } };
};

export interface ServiceSpec<D extends HealthServiceDefinition> {
  /** Queue group and config name, e.g. `planner`. */
  readonly name: string;
  readonly version: string;
  readonly definition: D;
  /** The domain RPCs this build serves; Health is provided by the host. */
  readonly implementation?: Omit<ServiceImplementation<D>, 'health'>;
  /** Dependencies reported by Health, besides the bus itself. */
  readonly checks?: readonly DependencyCheck[];
  /**
   * This replica's own subject token: every RPC is also served on the
   * replica's own subject, for calls pinned to it (see ServeOptions.instance).
   */
  readonly instance?: string;
}

export interface HostOptions {
  readonly transport: Transport;
  readonly logger?: { info(details: object, message: string): void; warn(details: object, message: string): void; error(details: object, message: string): void };
  /** Per-check time limit on Health, ms. Default 1000. */
  readonly healthCheckTimeoutMs?: number;
  /** Identifies this replica in Health answers. Default `<hostname>:<pid>`. */
  readonly instanceId?: string;
  /** Clock, for tests. */
  readonly now?: () => number;
}

export interface RunningService {
  readonly server: ServiceServer;
  /** Stops taking calls and finishes or hands back the ones in flight; see `ServiceServer.drain`. */
  stop(graceMs: number): Promise<void>;
}

/** Serves `spec` on the bus: its domain RPCs plus a Health RPC that probes the bus and `spec.checks`. */
export function hostService<D extends HealthServiceDefinition>(spec: ServiceSpec<D>, options: HostOptions): RunningService {
  const now = options.now ?? Date.now;
  const startedAt = now();
  const instanceId = options.instanceId ?? `${hostname()}:${process.pid}`;
  let draining = false;
  const checks: DependencyCheck[] = [
    {
      name: `bus:${options.transport.kind}`,
      required: true,
      check: () => Promise.resolve(options.transport.isConnected() ? { ok: true, detail: 'connected' } : { ok: false, detail: 'disconnected, reconnecting' }),
    },
    ...(spec.checks ?? []),
  ];
  const health = async (): Promise<HealthResponse> =>
    healthReport({
      service: spec.name,
      version: spec.version,
      instanceId,
      startedAt,
      now: now(),
      draining,
      results: await runChecks(checks, options.healthCheckTimeoutMs ?? 1_000),
    });
  const implementation = { ...spec.implementation, health } as unknown as ServiceImplementation<D>;
  const server = serveService(options.transport, spec.definition, implementation, { queue: spec.name, version: spec.version, logger: options.logger, ...(spec.instance === undefined ? {} : { instance: spec.instance }) });
  options.logger?.info({ service: spec.name, version: spec.version, subjects: `${spec.definition.fullName}.*` }, 'serving');
  return {
    server,
    stop: async (graceMs) => {
      draining = true;
      await server.drain(graceMs);
    },
  };
}

/**
 * Connects to NATS, retrying with backoff until it answers or `signal` aborts,
 * so a service can start before the bus does (as pods often do).
 * @throws AppError CANCELLED when aborted first.
 */
export async function connectWithRetry(
  options: { url: string; name: string; onAttemptFailed?: (error: AppError, attempt: number, retryInMs: number) => void },
  signal: AbortSignal,
): Promise<NatsTransport> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await NatsTransport.connect({ url: options.url, name: options.name, connectTimeoutMs: 2_000 });
    } catch (error) {
      const retryInMs = Math.min(5_000, 250 * 2 ** (attempt - 1));
      options.onAttemptFailed?.(AppError.from(error), attempt, retryInMs);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, retryInMs);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true });
      });
      if (signal.aborted) throw new AppError(ErrorCode.CANCELLED, `stopped before NATS at ${options.url} answered`);
    }
  }
}
