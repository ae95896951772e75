import { AppError, ErrorCode } from '@ratchet/errors';
import { chown, mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { findPostgresBinaries, postgresRunAsUser, type UnprivilegedUser } from './binaries';
import { freePort } from './free-port';
import { ManagedProcess } from './managed-process';
import { OutputTail } from './output-tail';
import { ServerSupervisor, withControls, type ServerControls } from './server-supervisor';

export interface PostgresOptions {
  /** Database created after start. Default "ratchet_test". */
  readonly database?: string;
  /** Superuser created by initdb; connects without a password. Default "postgres". */
  readonly user?: string;
  /**
   * Server settings passed as `-c name=value`, over the defaults
   * (listen_addresses=127.0.0.1, fsync=off, synchronous_commit=off,
   * full_page_writes=off).
   */
  readonly settings?: Readonly<Record<string, string | number | boolean>>;
  /** How long initdb may take, in ms. Default 60000. */
  readonly initdbTimeoutMs?: number;
  /** How long start() and restart() wait for connections, in ms. Default 30000. */
  readonly startTimeoutMs?: number;
  /** How long stop() waits for a fast shutdown before SIGKILL, in ms. Default 10000. */
  readonly stopTimeoutMs?: number;
}

export interface PostgresFixture extends ServerControls {
  /** `postgres://<user>@127.0.0.1:<port>/<database>` (trust auth, no password). */
  readonly connectionString: string;
  /** Always 127.0.0.1. */
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  /** The cluster directory (initdb -D); kept across restart(), removed by stop() with the other temp dirs (stop is a fast shutdown, SIGINT). */
  readonly dataDir: string;
  /**
   * SIGKILLs the postmaster, to simulate a crash. With the default
   * synchronous_commit=off, commits from the last fraction of a second may be
   * lost; set `settings.synchronous_commit = 'on'` to test crash durability.
   */
  kill(): Promise<void>;
}

const defaultSettings = {
  listen_addresses: '127.0.0.1',
  // A test cluster is thrown away; durability across OS crashes buys nothing.
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
};

function formatSetting(value: string | number | boolean): string {
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  return String(value);
}

async function connectAndQuery(config: { port: number; user: string; database: string }, sql: string): Promise<void> {
  const client = new Client({ host: '127.0.0.1', ...config, connectionTimeoutMillis: 2000 });
  // A refused connection also surfaces as an 'error' event on some pg versions.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query(sql);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function runInitdb(
  initdb: string,
  args: readonly string[],
  runAs: UnprivilegedUser | undefined,
  cwd: string,
  timeoutMs: number,
): Promise<void> {
  const output = new OutputTail();
  const run = await ManagedProcess.launch({
    command: initdb,
    args,
    cwd,
    env: { ...process.env, LC_ALL: 'C' },
    ...(runAs === undefined ? {} : { uid: runAs.uid, gid: runAs.gid }),
    output,
  });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const exit = await Promise.race([run.exited, timedOut]);
    if (exit === 'timeout') {
      await run.kill();
      throw new AppError(ErrorCode.DEADLINE_EXCEEDED, `initdb did not finish within ${timeoutMs} ms\n--- last output of initdb ---\n${output.text()}`);
    }
    if (exit.code !== 0) {
      const how = exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `initdb ${how}\n--- last output of initdb ---\n${output.text()}`);
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Creates a throwaway PostgreSQL cluster with initdb (trust auth, UTF8, C
 * locale) in a temp directory, starts it on a free 127.0.0.1 port with
 * durability switched off for speed, waits until it accepts connections and
 * creates `database`.
 *
 * Binaries: RATCHET_PG_BIN_DIR, else the newest /usr/lib/postgresql/<v>/bin,
 * else PATH. As root, initdb and postgres run as the `postgres` system user
 * (they refuse to run as root). The server is SIGKILLed and the temp dir
 * removed if the test process exits without stop().
 *
 * @throws AppError FAILED_PRECONDITION when the binaries or (as root) the
 *   postgres user are missing, or initdb fails; DEADLINE_EXCEEDED when the
 *   server does not accept connections within `startTimeoutMs` (30 s);
 *   UNAVAILABLE when it exits during startup. Startup errors carry the tail
 *   of the server's output.
 */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresFixture> {
  const { database = 'ratchet_test', user = 'postgres', initdbTimeoutMs = 60_000, startTimeoutMs = 30_000, stopTimeoutMs = 10_000 } = options;
  const binaries = findPostgresBinaries();
  const runAs = postgresRunAsUser();
  const port = await freePort();

  const baseDir = await mkdtemp(join(tmpdir(), 'ratchet-pg-'));
  const dataDir = join(baseDir, 'data');
  const socketDir = join(baseDir, 'socket');
  const runAsOptions = runAs === undefined ? {} : { uid: runAs.uid, gid: runAs.gid };

  const settings = { ...defaultSettings, ...options.settings };
  const serverArgs = ['-D', dataDir, '-p', String(port), '-k', socketDir];
  for (const [name, value] of Object.entries(settings)) serverArgs.push('-c', `${name}=${formatSetting(value)}`);

  const supervisor = new ServerSupervisor({
    name: 'postgres',
    prepare: async () => {
      await mkdir(socketDir, { mode: 0o700 });
      if (runAs !== undefined) {
        await chown(baseDir, runAs.uid, runAs.gid);
        await chown(socketDir, runAs.uid, runAs.gid);
      }
      const initdbArgs = ['-D', dataDir, '-U', user, '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'];
      await runInitdb(binaries.initdb, initdbArgs, runAs, baseDir, initdbTimeoutMs);
    },
    launchOptions: () => ({ command: binaries.postgres, args: serverArgs, cwd: baseDir, ...runAsOptions }),
    isReady: async () => {
      await connectAndQuery({ port, user, database: 'postgres' }, 'SELECT 1');
      return true;
    },
    startTimeoutMs,
    stopSignal: 'SIGINT',
    stopTimeoutMs,
    directories: [baseDir],
  });
  await supervisor.start();

  if (database !== 'postgres') {
    try {
      await connectAndQuery({ port, user, database: 'postgres' }, `CREATE DATABASE ${escapeIdentifier(database)}`);
    } catch (error) {
      await supervisor.stop();
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `could not create database "${database}": ${(error as Error).message}`, { cause: error });
    }
  }

  return withControls(supervisor, {
    connectionString: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`,
    host: '127.0.0.1',
    port,
    database,
    user,
    dataDir,
  });
}

function escapeIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
