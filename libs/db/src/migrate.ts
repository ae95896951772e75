import { createHash } from 'node:crypto';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Database } from './database';

/** One schema change, applied once, in id order. */
export interface Migration {
  /** Sorts in apply order, e.g. `0001_create_tasks`. */
  readonly id: string;
  readonly sql: string;
}

const checksum = (sql: string) => createHash('sha256').update(sql).digest('hex');

/**
 * Creates `schema` if needed and applies the migrations not yet recorded in
 * `<schema>.schema_migrations`, all in one transaction (all or none are
 * applied) with the schema on the search path. Re-runnable; never drops anything. On Postgres an
 * advisory lock per schema makes concurrent callers take turns.
 *
 * @throws AppError FAILED_PRECONDITION when an applied migration's SQL
 *   changed (checksum) or the database has a migration this code does not
 *   know (it is newer than this code); INVALID_ARGUMENT for a bad schema name
 *   or duplicate ids.
 */
export async function migrate(db: Database, schema: string, migrations: readonly Migration[]): Promise<{ readonly applied: readonly string[] }> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `schema name ${JSON.stringify(schema)} must be lower-case letters, digits and _`);
  const ordered = [...migrations].sort((left, right) => left.id.localeCompare(right.id));
  if (new Set(ordered.map((migration) => migration.id)).size !== ordered.length) throw new AppError(ErrorCode.INVALID_ARGUMENT, `duplicate migration ids for schema ${schema}`);

  return db.transaction(async (tx) => {
    if (db.kind === 'postgres') await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`ratchet.migrate.${schema}`]);
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await tx.query(`CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (id text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const recorded = new Map((await tx.query<{ id: string; checksum: string }>(`SELECT id, checksum FROM ${schema}.schema_migrations`)).rows.map((row) => [row.id, row.checksum]));
    const known = new Set(ordered.map((migration) => migration.id));
    const unknown = [...recorded.keys()].filter((id) => !known.has(id));
    if (unknown.length > 0) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `schema ${schema} has migration(s) ${unknown.join(', ')} that this version does not know; it was written by a newer Ratchet, so upgrade instead of downgrading`);
    }
    const applied: string[] = [];
    for (const migration of ordered) {
      const sum = checksum(migration.sql);
      const previous = recorded.get(migration.id);
      if (previous !== undefined) {
        if (previous !== sum) throw new AppError(ErrorCode.FAILED_PRECONDITION, `migration ${migration.id} of schema ${schema} changed after it was applied; add a new migration instead of editing it`);
        continue;
      }
      await tx.query(`SET LOCAL search_path TO ${schema}, public`);
      await tx.execute(migration.sql);
      await tx.query(`INSERT INTO ${schema}.schema_migrations (id, checksum) VALUES ($1, $2)`, [migration.id, sum]);
      applied.push(migration.id);
    }
    return { applied };
  });
}
