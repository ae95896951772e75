import { AppError, ErrorCode, retryUntilOpen } from '@ratchet/errors';
import pg from 'pg';
import type { Database, Queryable, QueryResult } from './database';
import { sqlError } from './sql-error';

export interface PostgresOptions {
  /** `postgres://user:password@host:port/database`. */
  readonly connectionString: string;
  /** Pool size. Default 10. */
  readonly maxConnections?: number;
  /** Server-side limit per statement, ms. Default 30000. */
  readonly statementTimeoutMs?: number;
}

/**
 * A pooled connection to real Postgres. Connects once to check the server
 * answers before returning.
 *
 * @throws AppError UNAVAILABLE (retryable) naming host and port (never the
 *   password) when the server cannot be reached or refuses the login.
 */
export async function openPostgres(options: PostgresOptions): Promise<Database> {
  const pool = new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 10, statement_timeout: options.statementTimeoutMs ?? 30_000, connectionTimeoutMillis: 5_000 });
  // An idle client losing its connection must not crash the process.
  pool.on('error', () => undefined);
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new AppError(ErrorCode.UNAVAILABLE, `cannot connect to Postgres at ${where(options.connectionString)}: ${(error as Error).message}; check that it runs and the URL is right`, { cause: error, retryable: true });
  }
  return new PostgresDatabase(pool);
}

class PostgresDatabase implements Database {
  readonly kind = 'postgres' as const;

  constructor(private readonly pool: pg.Pool) {}

  query<R = Record<string, unknown>>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
    return run<R>(this.pool, sql, params);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw sqlError(error, 'BEGIN');
    }
    try {
      await run(client, 'BEGIN', []);
      const result = await fn({ query: <R>(sql: string, params: readonly unknown[] = []) => run<R>(client, sql, params), execute: (sql: string) => script(client, sql) });
      await run(client, 'COMMIT', []);
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  execute(sql: string): Promise<void> {
    return script(this.pool, sql);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

async function run<R>(target: pg.Pool | pg.PoolClient, sql: string, params: readonly unknown[]): Promise<QueryResult<R>> {
  try {
    const result = await target.query(sql, [...params]);
    return { rows: result.rows as R[], rowCount: result.rowCount ?? result.rows.length };
  } catch (error) {
    throw sqlError(error, sql);
  }
}

/** Without parameters pg uses the simple protocol, which takes several statements (and returns one result each). */
async function script(target: pg.Pool | pg.PoolClient, sql: string): Promise<void> {
  try {
    await target.query(sql);
  } catch (error) {
    throw sqlError(error, sql);
  }
}

/** host:port/database of a connection string, without credentials. */
function where(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return '(unparseable connection string)';
  }
}

/**
 * `openPostgres`, retried with backoff (0.5 s doubling to 10 s) while the
 * server is unreachable, as a service started before its database must.
 *
 * @throws AppError CANCELLED when `signal` aborts first; what `openPostgres`
 *   throws for anything but an unreachable server.
 */
export async function openPostgresWithRetry(
  options: PostgresOptions,
  signal: AbortSignal,
  onAttemptFailed?: (error: AppError, attempt: number, retryInMs: number) => void,
): Promise<Database> {
  return retryUntilOpen(() => openPostgres(options), {
    signal,
    what: 'Postgres',
    shouldRetry: (error) => error.code === ErrorCode.UNAVAILABLE,
    initialDelayMs: 500,
    maxDelayMs: 10_000,
    onAttemptFailed,
  });
}
