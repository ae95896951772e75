import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { backoffDelay, sleepUnlessAborted } from '@ratchet/errors';
import { freePort } from './free-port';
import type { ProcessExit } from './managed-process';
import { startNatsServer, type NatsServerFixture } from './nats-server';
import { startNodeProcess, type NodeProcessFixture } from './node-process';
import { startPostgres, type PostgresFixture } from './postgres';

/** The service processes of a distributed Ratchet, in start order. */
export const stackServices = ['memory', 'safety', 'planner', 'coder', 'tester', 'reflector', 'sandbox-runner', 'orchestrator'] as const;
export type StackService = (typeof stackServices)[number];

export interface StackOptions {
  /** The repository root: services run from `services/<name>/dist/main.js`, config from `config/`. */
  readonly repoRoot: string;
  /** Sandbox-runner processes. Default 1. */
  readonly runners?: number;
  /** gRPC port of the orchestrator. Default: a free one. */
  readonly grpcPort?: number;
  /** Bearer token clients must send. Default: none (unauthenticated). */
  readonly token?: string;
  /** More environment for every service (a model, RATCHET_MODEL_SCRIPT, log level, ...). */
  readonly env?: Readonly<Record<string, string>>;
  /** More environment per service, over `env`. */
  readonly serviceEnv?: Partial<Record<StackService, Readonly<Record<string, string>>>>;
  /** How long each service may take to print "ready", ms. Default 90000: a limit for a loaded machine, not a speed check. */
  readonly readyTimeoutMs?: number;
  /** Called with each service's name and process once it is ready (at start, and from `startService`). */
  readonly onStarted?: (name: string, process: NodeProcessFixture) => void;
  /**
   * Starts a service process again when it dies on its own (a crash, an
   * outside `kill -9`, `crashService`), not through `stop` or `killService`:
   * after `restartDelayMs`, doubling to 30 s while it keeps failing to get
   * ready, in the same place in `processes`. Default false, so a test sees
   * a crash as it is; `npm run stack` turns it on.
   */
  readonly restart?: boolean;
  /** First wait before a restart, ms. Default 1000. */
  readonly restartDelayMs?: number;
  /** Called when a service process died on its own, with how it ended and, with `restart`, when it starts again (ms). */
  readonly onExited?: (name: string, exit: ProcessExit, restartInMs: number | undefined) => void;
  /** Called with the new process once a restarted service is ready. */
  readonly onRestarted?: (name: string, process: NodeProcessFixture) => void;
  /**
   * Every process serves its operations endpoints (/metrics, /livez,
   * /readyz) on a free port of its own, `/metrics` behind `token` when
   * given; see `Stack.metricsTargets`. Default: none.
   */
  readonly metrics?: { readonly token?: string };
}

export interface Stack {
  readonly nats: NatsServerFixture;
  /**
   * The NATS password of each role of the shipped authorization
   * (deploy/nats/authorization.conf), made for this stack; the user is the
   * role's name. `probe` may only ask for Health.
   */
  readonly natsPasswords: Readonly<Record<string, string>>;
  readonly postgres: PostgresFixture;
  /** `127.0.0.1:<port>` of the orchestrator's gRPC API. */
  readonly grpcAddress: string;
  /** Running processes by service; sandbox-runner has one per runner. */
  readonly processes: ReadonlyMap<StackService, NodeProcessFixture[]>;
  /** Starts one more process of `service` with the same settings (and `env` over them); resolves when it is ready. */
  startService(service: StackService, env?: Readonly<Record<string, string>>): Promise<NodeProcessFixture>;
  /** SIGKILLs the `index`th process of `service` (a crash) and forgets it: it is not restarted. */
  killService(service: StackService, index?: number): Promise<void>;
  /**
   * SIGKILLs the `index`th process of `service` as something outside the
   * stack would (the OOM killer, `kill -9`): the stack does not forget it,
   * so with `restart` it starts it again. Resolves with how it ended.
   */
  crashService(service: StackService, index?: number): Promise<ProcessExit>;
  /** All services (SIGTERM, orchestrator first), then NATS and Postgres; removes the temp dirs. Idempotent. */
  stop(): Promise<void>;
  /** The output of every process, for a failing test's message. */
  output(): string;
  /** nats-server's log lines about a client acting outside its permissions (of its last ~200 lines). */
  natsViolations(): string[];
  /** With `metrics`: the operations address (`127.0.0.1:<port>`) of every running process, by service. */
  metricsTargets(): { service: StackService; pid: number; address: string }[];
}

/** The users of a shipped nats-server authorization and the environment variable each one's password comes from. */
function natsUsersOf(authorization: string): { user: string; variable: string }[] {
  return [...authorization.matchAll(/user:\s*"([^"]+)"\s+password:\s*\$([A-Z0-9_]+)/g)].map(([, user, variable]) => ({ user: user as string, variable: variable as string }));
}

/**
 * Distributed Ratchet on this machine: a real nats-server with JetStream, a
 * real Postgres, and every service as its own Node process (the built
 * `main.js`), the way `npm run stack` and the end-to-end tests run it. Lesson
 * vectors use PGlite (Debian's Postgres has no pgvector). NATS runs with the
 * shipped authorization (deploy/nats/authorization.conf): each service
 * connects as its own user with a password made for this stack, and a client
 * without one is refused.
 *
 * @throws Error with the output of a service that does not get ready.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const authorization = await readFile(path.join(options.repoRoot, 'deploy', 'nats', 'authorization.conf'), 'utf8');
  const natsUsers = natsUsersOf(authorization);
  // nats-server reads a variable's value as a config value: one starting with a digit would be a number.
  const natsPasswords = Object.fromEntries(natsUsers.map(({ user }) => [user, `p${randomBytes(24).toString('hex')}`]));
  const [nats, postgres, grpcPort, scratch] = await Promise.all([
    startNatsServer({ config: authorization, env: Object.fromEntries(natsUsers.map(({ user, variable }) => [variable, natsPasswords[user] as string])) }),
    // Commits must survive a SIGKILL of the server (fault tests kill it): no asynchronous commit.
    startPostgres({ settings: { synchronous_commit: 'on' } }),
    options.grpcPort === undefined ? freePort() : Promise.resolve(options.grpcPort),
    mkdtemp(path.join(tmpdir(), 'ratchet-stack-')),
  ]);
  const processes = new Map<StackService, NodeProcessFixture[]>(stackServices.map((service) => [service, []]));
  const exited: string[] = [];
  // Processes that are meant to end (killService, a start that failed): their exit is no crash.
  const deliberate = new WeakSet<NodeProcessFixture>();
  // Processes that got ready: only those are restarted (one that never did is retried by the restart that started it).
  const readied = new WeakSet<NodeProcessFixture>();
  // Spawns under way, for stop() to wait for: a process they start must not outlive the stack.
  const starting = new Set<Promise<unknown>>();
  const stopping = new AbortController();
  const restartDelayMs = options.restartDelayMs ?? 1_000;
  const metricsPorts = new WeakMap<NodeProcessFixture, number>();
  // Each service gets only what it needs, as docker-compose.yml gives it: its own NATS user, and the
  // database (orchestrator, memory) and the gRPC API's tokens (orchestrator) only where they are used.
  const envOf = (service: StackService): Record<string, string> => ({
    RATCHET_CONFIG_DIR: path.join(options.repoRoot, 'config'),
    RATCHET_BUS_NATS_URL: nats.url,
    RATCHET_BUS_NATS_USER: service,
    RATCHET_BUS_NATS_PASSWORD: natsPasswords[service] as string,
    // The services load mostly the same modules: V8's compiled code, kept in the stack's own scratch
    // directory, spares the later starts (and every restart) compiling them again.
    NODE_COMPILE_CACHE: path.join(scratch, 'compile-cache'),
    ...(service === 'orchestrator' || service === 'memory' ? { RATCHET_DATABASE_URL: postgres.connectionString } : {}),
    ...(service === 'memory' ? { RATCHET_MEMORY_VECTORS: 'pglite', RATCHET_MEMORY_VECTOR_DATA_DIR: path.join(scratch, 'memory-vectors') } : {}),
    ...(service === 'orchestrator' ? { RATCHET_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`, RATCHET_GRPC_TOKENS: options.token ?? '' } : {}),
    ...options.env,
    ...options.serviceEnv?.[service],
  });
  const track = <T>(promise: Promise<T>): Promise<T> => {
    starting.add(promise);
    void promise.finally(() => starting.delete(promise)).catch(() => undefined);
    return promise;
  };
  /**
   * Spawns a process of `service` in the place of `replacing` (or as a new
   * one), watches its exit, and gives how its readiness turns out: `ready`
   * rejects (after killing it) when it does not print "ready" in time.
   */
  const spawn = async (service: StackService, env: Readonly<Record<string, string>>, replacing?: NodeProcessFixture): Promise<{ child: NodeProcessFixture; ready: Promise<void> }> => {
    const metricsPort = options.metrics === undefined ? undefined : await freePort();
    const metricsEnv: Record<string, string> =
      metricsPort === undefined ? {} : { RATCHET_TELEMETRY_METRICS_PORT: String(metricsPort), ...(options.metrics?.token === undefined ? {} : { RATCHET_TELEMETRY_METRICS_TOKEN: options.metrics.token }) };
    const child = await track(
      startNodeProcess({
        script: path.join(options.repoRoot, 'services', service, 'dist', 'main.js'),
        // Baseline-compiled WebAssembly only, as the CLI runs: a service opening PGlite (memory's vectors) then neither spends
        // seconds of CPU on V8's optimizing compiles while a test waits for it to be ready, nor waits for them at exit.
        nodeArgs: ['--liftoff-only', '--require', '@ratchet/telemetry/register'],
        cwd: options.repoRoot,
        env: { ...envOf(service), ...metricsEnv, ...env },
      }),
    );
    if (metricsPort !== undefined) metricsPorts.set(child, metricsPort);
    const list = processes.get(service) as NodeProcessFixture[];
    const index = replacing === undefined ? -1 : list.indexOf(replacing);
    if (index >= 0) list[index] = child;
    else list.push(child);
    void child.exited.then((exit) => {
      exited.push(`${service} (pid ${child.pid}) exited ${JSON.stringify(exit)}:\n${child.output()}`);
      if (stopped || deliberate.has(child) || !readied.has(child) || !list.includes(child)) return;
      options.onExited?.(service, exit, options.restart === true ? restartDelayMs : undefined);
      if (options.restart === true) void restart(service, env, child);
    });
    const ready = child.waitForLine(/"msg":"ready"/, options.readyTimeoutMs ?? 90_000).then(
      () => void readied.add(child),
      async (error: unknown) => {
        deliberate.add(child);
        await child.kill();
        throw error;
      },
    );
    return { child, ready };
  };
  /** Starts a dead service process again, in its place, with backoff while the new one does not get ready; gives up when the stack stops or the place is gone. */
  const restart = async (service: StackService, env: Readonly<Record<string, string>>, dead: NodeProcessFixture): Promise<void> => {
    let last = dead;
    for (let attempt = 1; ; attempt += 1) {
      const waitMs = backoffDelay(attempt, restartDelayMs, 30_000);
      if (attempt > 1) options.onExited?.(service, await last.exited, waitMs);
      await sleepUnlessAborted(waitMs, stopping.signal);
      if (stopped || !(processes.get(service) ?? []).includes(last)) return;
      try {
        const { child, ready } = await spawn(service, env, last);
        last = child;
        await ready;
        options.onRestarted?.(service, child);
        return;
      } catch {
        if (stopped) return;
      }
    }
  };
  const startService = async (service: StackService, env: Readonly<Record<string, string>> = {}): Promise<NodeProcessFixture> => {
    const { child, ready } = await spawn(service, env);
    await ready;
    options.onStarted?.(service, child);
    return child;
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    stopping.abort();
    // A process being spawned right now takes its place in the lists before it is stopped with the others.
    await Promise.allSettled([...starting]);
    // The orchestrator first, so it hands its tasks over while its services still answer.
    for (const service of [...stackServices].reverse()) {
      await Promise.all((processes.get(service) ?? []).map((child) => child.terminate('SIGTERM', 15_000)));
    }
    await Promise.all([nats.stop(), postgres.stop()]);
    await rm(scratch, { recursive: true, force: true });
  };
  try {
    // The orchestrator first, as in a deployment: it creates the bus's streams and queues, which the others wait for.
    for (const service of ['orchestrator' as const, ...stackServices.filter((name) => name !== 'orchestrator')]) {
      const count = service === 'sandbox-runner' ? (options.runners ?? 1) : 1;
      await Promise.all(Array.from({ length: count }, () => startService(service)));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    nats,
    natsPasswords,
    postgres,
    grpcAddress: `127.0.0.1:${grpcPort}`,
    processes,
    startService,
    async killService(service, index = 0) {
      const list = processes.get(service) ?? [];
      const [child] = list.splice(index, 1);
      if (child === undefined) return;
      deliberate.add(child);
      await child.kill();
    },
    async crashService(service, index = 0) {
      const child = processes.get(service)?.[index];
      if (child === undefined) throw new Error(`the stack has no ${service} process ${index}`);
      return child.kill();
    },
    stop,
    natsViolations: () => nats.output().split('\n').filter((line) => /Violation/.test(line)),
    metricsTargets: () =>
      [...processes].flatMap(([service, children]) =>
        children.flatMap((child) => {
          const port = metricsPorts.get(child);
          return port === undefined ? [] : [{ service, pid: child.pid, address: `127.0.0.1:${port}` }];
        }),
      ),
    output: () =>
      [
        ...[...processes].flatMap(([service, children]) => children.map((child) => `--- ${service} (pid ${child.pid}):\n${child.output()}`)),
        ...exited.map((text) => `--- ${text}`),
      ].join('\n'),
  };
}
