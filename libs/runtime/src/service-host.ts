import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { inboxPrefixOf, NatsTransport, serveService } from '@ratchet/bus';
import type { MethodDefinition, NatsTransportOptions, ServiceDefinition, ServiceImplementation, ServiceServer, Transport } from '@ratchet/bus';
import type { BaseConfig } from '@ratchet/config';
import type { HealthRequest, HealthResponse } from '@ratchet/contracts';
import { AppError, ErrorCode, retryUntilOpen } from '@ratchet/errors';
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
  /** The report the Health RPC answers with, run now (also behind the operations server's `/readyz`). */
  health(): Promise<HealthResponse>;
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
    health,
    stop: async (graceMs) => {
      draining = true;
      await server.drain(graceMs);
    },
  };
}

/**
 * Connects to NATS, retrying with backoff until it answers or `signal` aborts,
 * so a service can start before the bus does (as pods often do). Refused
 * credentials are not retried: they will not get better.
 * @throws AppError CANCELLED when aborted first; UNAUTHENTICATED when the
 *   server refuses the credentials.
 */
export async function connectWithRetry(
  options: { url: string; name: string; connection?: NatsConnectionSettings; onAttemptFailed?: (error: AppError, attempt: number, retryInMs: number) => void },
  signal: AbortSignal,
): Promise<NatsTransport> {
  return retryUntilOpen(() => NatsTransport.connect({ url: options.url, name: options.name, connectTimeoutMs: 2_000, ...options.connection }), {
    signal,
    what: `NATS at ${options.url}`,
    // Refused credentials will not get better.
    shouldRetry: (error) => error.code !== ErrorCode.UNAUTHENTICATED,
    initialDelayMs: 250,
    maxDelayMs: 5_000,
    onAttemptFailed: options.onAttemptFailed,
  });
}

/** Who a process is on NATS and how it reaches the server, from its `bus` config. */
export type NatsConnectionSettings = Pick<NatsTransportOptions, 'credentials' | 'tls' | 'inboxPrefix'>;

/**
 * The credentials, TLS files and inbox prefix of `role` from the `bus`
 * section: a user and password, a creds file or an NKey seed file (read
 * now), and replies under the role's own inbox prefix, the only one its
 * NATS permissions let it read.
 * @throws AppError CONFIG_INVALID when more than one kind of credential is
 *   set, a password has no user, or a file cannot be read.
 */
export function natsConnectionOf(bus: BaseConfig['bus'], role: string): NatsConnectionSettings {
  const kinds = [bus.natsUser !== undefined || bus.natsPassword !== undefined, bus.natsCredsFile !== undefined, bus.natsNkeySeedFile !== undefined].filter(Boolean).length;
  if (kinds > 1) throw new AppError(ErrorCode.CONFIG_INVALID, 'bus: set one kind of NATS credentials: natsUser with natsPassword, natsCredsFile, or natsNkeySeedFile', { retryable: false });
  if (bus.natsPassword !== undefined && bus.natsUser === undefined) {
    throw new AppError(ErrorCode.CONFIG_INVALID, 'bus.natsPassword is set without bus.natsUser: set RATCHET_BUS_NATS_USER too', { retryable: false });
  }
  const read = (key: string, file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (error) {
      throw new AppError(ErrorCode.CONFIG_INVALID, `bus.${key}: cannot read ${file}: ${(error as Error).message}`, { cause: error, retryable: false });
    }
  };
  let credentials: NatsConnectionSettings['credentials'];
  if (bus.natsUser !== undefined) credentials = { user: bus.natsUser, password: bus.natsPassword ?? '' };
  else if (bus.natsCredsFile !== undefined) credentials = { creds: read('natsCredsFile', bus.natsCredsFile) };
  else if (bus.natsNkeySeedFile !== undefined) credentials = { nkeySeed: read('natsNkeySeedFile', bus.natsNkeySeedFile) };
  const tlsFiles = { caFile: bus.natsTlsCaFile, certFile: bus.natsTlsCertFile, keyFile: bus.natsTlsKeyFile };
  if ((tlsFiles.certFile === undefined) !== (tlsFiles.keyFile === undefined)) {
    throw new AppError(ErrorCode.CONFIG_INVALID, 'bus: natsTlsCertFile and natsTlsKeyFile go together (a client certificate and its key)', { retryable: false });
  }
  for (const [key, file] of Object.entries(tlsFiles)) if (file !== undefined) read(`natsTls${key[0]?.toUpperCase()}${key.slice(1)}`, file);
  const tls = Object.values(tlsFiles).some((file) => file !== undefined)
    ? Object.fromEntries(Object.entries(tlsFiles).filter(([, file]) => file !== undefined))
    : undefined;
  return { ...(credentials === undefined ? {} : { credentials }), ...(tls === undefined ? {} : { tls }), inboxPrefix: inboxPrefixOf(role) };
}
