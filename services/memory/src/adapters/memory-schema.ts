import { migrate, type Database, type Queryable } from '@ratchet/db';
import { memoryMigrations } from './migrations';

/**
 * Brings the `memory` schema up to date (its migrations, once per database)
 * and refreshes the planner's statistics: PGlite has no autovacuum, and
 * without statistics the planner takes a scope filter for one row and scans
 * every lesson. Sampled, so cheap on Postgres too.
 */
export async function openMemorySchema(db: Database): Promise<void> {
  await migrate(db, 'memory', memoryMigrations);
  await db.query('ANALYZE memory.lessons, memory.evidence, memory.outcomes, memory.terms');
}

/**
 * Holds `key` until `tx` ends, so two record calls with the same idempotency
 * key (a retry racing the call it repeats) run one after the other and the
 * second finds what the first stored. Failures and successes share it.
 */
export async function lockIdempotencyKey(tx: Queryable, key: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`memory:${key}`]);
}
