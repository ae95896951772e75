import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from '@ratchet/errors';
import { migrate, type Database } from '../src';

let counter = 0;
/** A fresh schema name per test, so tests on one database do not see each other. */
const freshSchema = () => `contract_${process.pid}_${(counter += 1)}`;

/** The AppError a query fails with. */
async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!AppError.is(error)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

/** The behaviour every Database must show, run against each implementation. */
export function databaseContract(name: string, open: () => Promise<Database>): void {
  describe(`Database contract: ${name}`, () => {
    let db: Database;
    beforeAll(async () => {
      db = await open();
    });
    afterAll(async () => {
      await db.close();
    });

    it('round-trips parameters of the types the stores use', async () => {
      const schema = freshSchema();
      await db.execute(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (i int, b bigint, x text, j jsonb, ts timestamptz, a text[], raw bytea)`);
      const when = new Date('2026-01-02T03:04:05.678Z');
      await db.query(`INSERT INTO ${schema}.t VALUES ($1,$2,$3,$4,$5,$6,$7)`, [7, 9_007_199_254_740, 'héllo', JSON.stringify({ nested: [1, 'two'] }), when, ['a', 'b'], Buffer.from([0, 1, 255])]);
      const { rows, rowCount } = await db.query<{ i: number; b: string | number; x: string; j: unknown; ts: Date; a: string[]; raw: Uint8Array }>(`SELECT * FROM ${schema}.t`);
      expect(rowCount).toBe(1);
      const row = rows[0]!;
      expect(row.i).toBe(7);
      expect(Number(row.b)).toBe(9_007_199_254_740);
      expect(row.x).toBe('héllo');
      expect(row.j).toEqual({ nested: [1, 'two'] });
      expect(new Date(row.ts).toISOString()).toBe(when.toISOString());
      expect(row.a).toEqual(['a', 'b']);
      expect([...row.raw]).toEqual([0, 1, 255]);
    });

    it('commits a transaction that resolves and rolls back one that throws', async () => {
      const schema = freshSchema();
      await db.execute(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (id int PRIMARY KEY)`);
      await db.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${schema}.t VALUES (1)`);
      });
      await expect(
        db.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${schema}.t VALUES (2)`);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect((await db.query<{ id: number }>(`SELECT id FROM ${schema}.t ORDER BY id`)).rows.map((row) => row.id)).toEqual([1]);
    });

    it('reports a unique violation as ALREADY_EXISTS, and other SQL errors as INTERNAL, without the statement or the SQLSTATE (those are for the log)', async () => {
      const schema = freshSchema();
      await db.execute(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (id int PRIMARY KEY)`);
      await db.query(`INSERT INTO ${schema}.t VALUES (1)`);
      const duplicate = await rejection(db.query(`INSERT INTO ${schema}.t VALUES (1)`));
      expect(duplicate).toMatchObject({ code: ErrorCode.ALREADY_EXISTS, message: 'a record with the same key already exists' });
      const missing = await rejection(db.query('SELECT * FROM no_such_table_here'));
      expect(missing).toMatchObject({ code: ErrorCode.INTERNAL, message: 'database error; the server log has the details' });
      for (const error of [duplicate, missing]) {
        expect(error.message).not.toMatch(/INSERT|SELECT|no_such_table_here|duplicate key|_pkey/);
        expect(error.message).not.toContain(schema);
        // The statement and the SQLSTATE stay available for the log.
        expect(String((error.cause as Error).message)).toMatch(/\(SQLSTATE (23505|42P01)\) in: (INSERT INTO|SELECT \* FROM)/);
      }
    });

    it('refuses a NUL character in text or JSON as INVALID_ARGUMENT with a plain message, not the statement or the value', async () => {
      const schema = freshSchema();
      await db.execute(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (x text, j jsonb)`);
      for (const [column, value] of [['x', 'secret\u0000value'], ['j', JSON.stringify({ content: 'secret\u0000value' })]] as const) {
        const error = await rejection(db.query(`INSERT INTO ${schema}.t (${column}) VALUES ($1)`, [value]));
        expect(error).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('NUL character') });
        expect(error.message).not.toMatch(/INSERT|secret|cannot be converted|invalid byte sequence/);
        expect(error.message).not.toContain(schema);
      }
      expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.t`)).rows[0]?.n).toBe(0);
    });

    it('applies migrations once, in order; later ones on a re-run; refuses edited or unknown ones', async () => {
      const schema = freshSchema();
      const first = { id: '0001_items', sql: 'CREATE TABLE items (id int PRIMARY KEY); INSERT INTO items VALUES (1);' };
      const second = { id: '0002_more', sql: 'INSERT INTO items VALUES (2);' };
      expect((await migrate(db, schema, [first])).applied).toEqual(['0001_items']);
      expect((await migrate(db, schema, [first])).applied).toEqual([]);
      expect((await migrate(db, schema, [second, first])).applied).toEqual(['0002_more']);
      expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.items`)).rows[0]?.n).toBe(2);
      await expect(migrate(db, schema, [{ ...first, sql: first.sql + ' -- edited' }, second])).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('changed after it was applied') });
      await expect(migrate(db, schema, [first])).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('0002_more') });
      await expect(migrate(db, 'Bad-Name', [])).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    });

    it('applies nothing when one migration of a batch fails', async () => {
      const schema = freshSchema();
      await expect(migrate(db, schema, [{ id: '0001_ok', sql: 'CREATE TABLE a (id int)' }, { id: '0002_bad', sql: 'CREATE TABLE nope (' }])).rejects.toMatchObject({ code: ErrorCode.INTERNAL });
      expect((await migrate(db, schema, [{ id: '0001_ok', sql: 'CREATE TABLE a (id int)' }])).applied).toEqual(['0001_ok']);
    });
  });
}
