import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { PGlite, type PGliteOptions, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Database, Queryable, QueryResult } from './database';
import { PreparedStatements } from './pglite-statements';
import { clusterTemplate, lockFile, type ClusterTemplate } from './pglite-template';
import { sqlError } from './sql-error';

export interface PgliteOptions {
  /** Directory of the database files, created when missing; absent = in memory. */
  readonly dataDir?: string;
  /** Loads pgvector and creates the `vector` extension. */
  readonly vector?: boolean;
  /** Where a new database's cluster comes from instead of initdb (see ClusterTemplate); default the user's cache, `false` = always initdb. */
  readonly template?: ClusterTemplate | false;
  /** Postgres' buffer cache in MB (`shared_buffers`); default `defaultSharedBuffersMb`. */
  readonly sharedBuffersMb?: number;
}

/**
 * PGlite's own default is 128 MB, and Postgres prepares every buffer when it
 * starts: in WASM that cost about 1.3 s of CPU per open, against about 0.5 s
 * with 16 MB (measured on PGlite 0.5, Node 24 with --liftoff-only). An
 * embedded database is one user's task history and lessons, and the files
 * stay in the operating system's page cache either way. Memory retrieval at
 * 20,000 lessons (services/memory/bench/retrieval.mts) measured 7.2 ms p50
 * against 6.0 ms with 128 MB for lessons and vectors in PGlite, and 5.1
 * against 5.7 ms for vectors alone (the memory service's `pglite` store).
 */
export const defaultSharedBuffersMb = 16;

/**
 * Opens PGlite (Postgres compiled to WASM) in `dataDir`. PGlite has one
 * connection and does not lock its directory itself, so a lock file keeps a
 * second process from opening the same data (which would corrupt it); a lock
 * left by a dead process is taken over.
 *
 * @throws AppError FAILED_PRECONDITION when another live process holds the
 *   directory (naming its pid); INTERNAL when the directory cannot be
 *   created or the database cannot start.
 */
export async function openPglite(options: PgliteOptions = {}): Promise<Database> {
  const dataDir = options.dataDir === undefined ? undefined : path.resolve(options.dataDir);
  const buffers = options.sharedBuffersMb;
  if (buffers !== undefined && (!Number.isInteger(buffers) || buffers < 1)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `the database cache must be a whole number of MB, at least 1 (got ${buffers})`);
  }
  if (dataDir !== undefined) {
    try {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new AppError(ErrorCode.INTERNAL, `cannot create the data directory ${dataDir}: ${(error as Error).message}; choose another with --data-dir or RATCHET_STORAGE_DATA_DIR`, { cause: error });
    }
    makePrivate(dataDir);
    takeLock(dataDir);
  }
  let db: PGlite;
  try {
    db = await createCluster(dataDir, options);
    if (options.vector === true) await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
  } catch (error) {
    if (dataDir !== undefined) releaseLock(dataDir);
    throw new AppError(ErrorCode.INTERNAL, `cannot open the database${dataDir === undefined ? '' : ` in ${dataDir}`}: ${(error as Error).message}`, { cause: error });
  }
  return new PgliteDatabase(db, dataDir);
}

/**
 * PGlite in `dataDir` (or in memory). A new cluster starts from the stored
 * template when there is one; otherwise initdb makes it and the result is
 * stored for the next. A template that does not load is discarded, what it
 * left in the directory removed, and initdb used.
 */
async function createCluster(dataDir: string | undefined, options: PgliteOptions): Promise<PGlite> {
  const sharedBuffersMb = options.sharedBuffersMb ?? defaultSharedBuffersMb;
  const settings = {
    ...(dataDir === undefined ? {} : { dataDir }),
    ...(options.vector === true ? { extensions: { vector } } : {}),
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffersMb}MB`],
  };
  const fresh = dataDir === undefined || !existsSync(path.join(dataDir, 'PG_VERSION'));
  const template = fresh && options.template !== false ? (options.template ?? clusterTemplate()) : undefined;
  if (template === undefined) return PGlite.create(settings);
  const made = await fromTemplate(template, dataDir, settings);
  if (made !== undefined) return made;
  const db = await PGlite.create(settings);
  try {
    await template.write(await db.dumpDataDir('none'));
  } catch {
    // The template only saves the next database time; this one is open either way.
  }
  return db;
}

/**
 * A new database from the stored cluster: copied into `dataDir`, or loaded
 * into memory. Undefined when none is stored or it does not load; one that
 * does not is discarded, and what it left in the directory removed.
 */
async function fromTemplate(template: ClusterTemplate, dataDir: string | undefined, settings: PGliteOptions): Promise<PGlite | undefined> {
  const before = new Set(dataDir === undefined ? [] : readdirSync(dataDir));
  try {
    if (dataDir !== undefined) return (await template.copyTo(dataDir)) ? await PGlite.create(settings) : undefined;
    const stored = await template.read();
    return stored === undefined ? undefined : await PGlite.create({ ...settings, loadDataDir: stored });
  } catch {
    await template.discard();
    if (dataDir !== undefined) for (const entry of readdirSync(dataDir)) if (!before.has(entry)) rmSync(path.join(dataDir, entry), { recursive: true, force: true });
    return undefined;
  }
}

class PgliteDatabase implements Database {
  readonly kind = 'pglite' as const;
  private closed = false;
  private readonly statements: PreparedStatements;

  constructor(
    private readonly db: PGlite,
    private readonly dataDir: string | undefined,
  ) {
    this.statements = new PreparedStatements(db);
  }

  async query<R = Record<string, unknown>>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
    // As PGlite's own query: not before it is ready or after it closed, never inside another caller's transaction, never beside another statement.
    try {
      await this.db._checkReady();
    } catch (error) {
      throw sqlError(error, sql);
    }
    return this.db._runExclusiveTransaction(() => this.db._runExclusiveQuery(() => run<R>(this.statements, sql, params)));
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    // PGlite serialises transactions against other queries on its one connection.
    return this.db.transaction(async (tx) => {
      // As PGlite's own transaction object: no use once the transaction is over, when a statement would run outside it.
      let open = true;
      const inside = () => {
        if (!open) throw new AppError(ErrorCode.INTERNAL, 'this transaction is over; run the statement in a new one');
      };
      try {
        return await fn({
          query: <R>(sql: string, params: readonly unknown[] = []) => {
            inside();
            return this.db._runExclusiveQuery(() => run<R>(this.statements, sql, params));
          },
          execute: async (sql: string) => {
            inside();
            await script(tx, sql);
            await this.db._runExclusiveQuery(() => this.statements.clear());
          },
        });
      } finally {
        open = false;
      }
    });
  }

  async execute(sql: string): Promise<void> {
    await script(this.db, sql);
    // A script changes the schema (migrations): statements prepared before it may no longer fit.
    await this.db._runExclusiveTransaction(() => this.db._runExclusiveQuery(() => this.statements.clear()));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.db.close();
    } finally {
      if (this.dataDir !== undefined) releaseLock(this.dataDir);
    }
  }
}

async function run<R>(statements: PreparedStatements, sql: string, params: readonly unknown[]): Promise<QueryResult<R>> {
  try {
    const result = await statements.run<R>(sql, params);
    // affectedRows is 0 for a SELECT; pg counts the rows returned there.
    return { rows: result.rows, rowCount: result.rows.length > 0 ? result.rows.length : (result.affectedRows ?? 0) };
  } catch (error) {
    throw sqlError(error, sql);
  }
}

async function script(target: PGlite | Transaction, sql: string): Promise<void> {
  try {
    await target.exec(sql);
  } catch (error) {
    throw sqlError(error, sql);
  }
}

/**
 * PGlite writes its files readable and writable by everyone (0666) and,
 * unlike Postgres, never checks the directory: another user of the machine
 * could read the task history or plant lessons that later prompts carry. As
 * Postgres requires, the directory is the owner's alone (0700).
 */
function makePrivate(dataDir: string): void {
  if ((statSync(dataDir).mode & 0o077) === 0) return;
  try {
    chmodSync(dataDir, 0o700);
  } catch (error) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `the data directory ${dataDir} is open to other users and cannot be made private (${(error as Error).message}); run chmod 700 ${dataDir}, or choose another with --data-dir or RATCHET_STORAGE_DATA_DIR`, { cause: error });
  }
}

function takeLock(dataDir: string): void {
  const file = path.join(dataDir, lockFile);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new AppError(ErrorCode.INTERNAL, `cannot lock ${dataDir}: ${(error as Error).message}`, { cause: error });
      const holder = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
      if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder)) {
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `the data directory ${dataDir} is in use by process ${holder} (another ratchet command); wait for it to finish or use another --data-dir`);
      }
      if (holder === process.pid) throw new AppError(ErrorCode.FAILED_PRECONDITION, `the data directory ${dataDir} is already open in this process; close it first`);
      // The holder died without cleaning up: take the directory over.
      rmSync(file, { force: true });
    }
  }
  throw new AppError(ErrorCode.FAILED_PRECONDITION, `cannot lock the data directory ${dataDir}; another process keeps taking it`);
}

function releaseLock(dataDir: string): void {
  rmSync(path.join(dataDir, lockFile), { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
