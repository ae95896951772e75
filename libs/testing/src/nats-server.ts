import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findNatsServerBinary } from './binaries';
import { freePorts } from './free-port';
import { acceptsTcp, httpStatus } from './probes';
import { ServerSupervisor, withControls, type ServerControls } from './server-supervisor';

export interface NatsServerOptions {
  /** Enable JetStream with its store in `storeDir`. Default true. */
  readonly jetstream?: boolean;
  /** Extra nats-server command-line arguments, appended last. */
  readonly args?: readonly string[];
  /**
   * Configuration file text (e.g. an `authorization` block), given with
   * `-c`; the command line's listen, monitor and JetStream settings win.
   */
  readonly config?: string;
  /** Environment of the server: values for `$VARIABLE`s of `config`. */
  readonly env?: Readonly<Record<string, string>>;
  /** How long start() and restart() wait for readiness, in ms. Default 10000. */
  readonly startTimeoutMs?: number;
  /** How long stop() waits for a graceful exit before SIGKILL, in ms. Default 10000. */
  readonly stopTimeoutMs?: number;
}

export interface NatsServerFixture extends ServerControls {
  /** Client URL, `nats://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** HTTP monitoring port on 127.0.0.1 (/varz, /jsz, /healthz). */
  readonly monitorPort: number;
  /** The JetStream store directory (`-sd`); kept across restart() (streams survive), removed by stop(). */
  readonly storeDir: string;
}

/**
 * Starts a real nats-server on 127.0.0.1 with free client and monitor ports
 * and (by default) JetStream in a fresh temp directory, and waits until
 * /healthz reports ready and the client port accepts connections.
 *
 * Binary: RATCHET_NATS_SERVER_BIN, else `nats-server` on PATH. The server is
 * SIGKILLed if the test process exits without stop().
 *
 * @throws AppError FAILED_PRECONDITION when nats-server is not found;
 *   DEADLINE_EXCEEDED when it is not ready within `startTimeoutMs` (10 s);
 *   UNAVAILABLE when it exits during startup. Startup errors carry the tail
 *   of the server's output.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerFixture> {
  const { jetstream = true, args = [], startTimeoutMs = 10_000, stopTimeoutMs = 10_000 } = options;
  const binary = findNatsServerBinary();
  const [port, monitorPort] = (await freePorts(2)) as [number, number];
  const storeDir = await mkdtemp(join(tmpdir(), 'ratchet-nats-'));

  const serverArgs = ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort)];
  if (options.config !== undefined) {
    // Beside the store, so stop() removes it with the store directory.
    const configFile = join(storeDir, 'nats-server.conf');
    await writeFile(configFile, options.config, { mode: 0o600 });
    serverArgs.push('-c', configFile);
  }
  if (jetstream) serverArgs.push('-js', '-sd', storeDir);
  serverArgs.push(...args);
  const healthUrl = `http://127.0.0.1:${monitorPort}/healthz${jetstream ? '?js-enabled-only=true' : ''}`;

  const supervisor = new ServerSupervisor({
    name: 'nats-server',
    launchOptions: () => ({ command: binary, args: serverArgs, cwd: storeDir, ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } }) }),
    isReady: async () => (await httpStatus(healthUrl, 1000)) === 200 && acceptsTcp(port, 1000),
    startTimeoutMs,
    stopSignal: 'SIGTERM',
    stopTimeoutMs,
    directories: [storeDir],
  });
  await supervisor.start();

  return withControls(supervisor, {
    url: `nats://127.0.0.1:${port}`,
    port,
    monitorPort,
    storeDir,
  });
}
