import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { ErrorCode } from '@ratchet/errors';
import { clusterTemplate, openPglite, type Database } from '../src';
import { PreparedStatements } from '../src/pglite-statements';

jest.setTimeout(60_000);

/** A bare PGlite, from the stored cluster that openPglite leaves (initdb would cost seconds). */
async function bare(): Promise<PGlite> {
  const stored = await clusterTemplate().read();
  return PGlite.create(stored === undefined ? {} : { loadDataDir: stored });
}

/** The named statements the connection holds (the protocol's, as pg_prepared_statements lists them), by text. */
async function prepared(db: Database): Promise<string[]> {
  const own = "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'ratchet\\_%' ORDER BY name";
  const result = await db.query<{ statement: string }>(own);
  return result.rows.map((row) => row.statement).filter((statement) => statement !== own);
}

describe('PGlite statements, prepared once per text', () => {
  let db: Database;
  beforeAll(async () => {
    db = await openPglite();
    await db.execute("CREATE TABLE items (id text PRIMARY KEY, n integer NOT NULL, tags text[] NOT NULL DEFAULT '{}', doc jsonb, at timestamptz)");
  });
  afterAll(async () => {
    await db.close();
  });

  it("reads and writes every kind of value the stores send as PGlite's own query does", async () => {
    const at = new Date(Date.UTC(2026, 10, 29, 12, 30, 15, 123));
    const insert = 'INSERT INTO items (id, n, tags, doc, at) VALUES ($1, $2, $3, $4, $5) RETURNING *';
    const written = await db.query(insert, ['a', 7, ['x', "it's"], JSON.stringify({ k: [1, 'two'] }), at]);
    expect(written.rows).toEqual([{ id: 'a', n: 7, tags: ['x', "it's"], doc: { k: [1, 'two'] }, at }]);
    expect(written.rowCount).toBe(1);
    await db.query(insert, ['b', 8, [], null, null]);
    const select = 'SELECT id, n, tags, doc, at FROM items WHERE id = ANY($1::text[]) ORDER BY id';
    const plain = await bare();
    await plain.exec("CREATE TABLE items (id text PRIMARY KEY, n integer NOT NULL, tags text[] NOT NULL DEFAULT '{}', doc jsonb, at timestamptz)");
    await plain.query(insert, ['a', 7, ['x', "it's"], JSON.stringify({ k: [1, 'two'] }), at]);
    await plain.query(insert, ['b', 8, [], null, null]);
    expect((await db.query(select, [['a', 'b']])).rows).toEqual((await plain.query(select, [['a', 'b']])).rows);
    await plain.close();
    const updated = await db.query('UPDATE items SET n = n + 1 WHERE id = ANY($1::text[])', [['a', 'b']]);
    expect(updated).toEqual({ rows: [], rowCount: 2 });
  });

  it('prepares a text once however often it runs, and each text apart', async () => {
    const text = 'SELECT n FROM items WHERE id = $1';
    for (const id of ['a', 'b', 'a']) await db.query(text, [id]);
    await db.query('SELECT count(*) AS c FROM items');
    const held = await prepared(db);
    expect(held.filter((statement) => statement === text)).toHaveLength(1);
    expect(held).toContain('SELECT count(*) AS c FROM items');
  });

  it('reports a bad statement or value as before and stays usable, without keeping what failed to prepare', async () => {
    await expect(db.query('SELEC 1')).rejects.toMatchObject({ code: ErrorCode.INTERNAL });
    expect(await prepared(db)).not.toContain('SELEC 1');
    const insert = 'INSERT INTO items (id, n) VALUES ($1, $2)';
    await db.query(insert, ['c', 1]);
    await expect(db.query(insert, ['c', 2])).rejects.toMatchObject({ code: ErrorCode.ALREADY_EXISTS });
    await expect(db.query(insert, ['d', 'not a number'])).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await db.query(insert, ['d', 3]);
    expect((await db.query<{ n: number }>('SELECT n FROM items WHERE id = $1', ['d'])).rows).toEqual([{ n: 3 }]);
  });

  it('keeps transactions whole: a rolled-back one leaves nothing, and its statements stay prepared', async () => {
    const insert = 'INSERT INTO items (id, n) VALUES ($1, $2)';
    await expect(
      db.transaction(async (tx) => {
        await tx.query(insert, ['tx1', 1]);
        await tx.query('INSERT INTO items (id, n) VALUES ($1, $2) RETURNING id', ['tx2', 2]);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect((await db.query('SELECT id FROM items WHERE id LIKE $1', ['tx%'])).rows).toEqual([]);
    expect(await prepared(db)).toContain('INSERT INTO items (id, n) VALUES ($1, $2) RETURNING id');
    await db.transaction(async (tx) => {
      await tx.query(insert, ['tx3', 3]);
    });
    expect((await db.query('SELECT id FROM items WHERE id LIKE $1', ['tx%'])).rows).toEqual([{ id: 'tx3' }]);
    // A transaction's handle kept past its end runs nothing, rather than running outside the transaction.
    const kept = await db.transaction(async (tx) => tx);
    expect(() => kept.query(insert, ['tx4', 4])).toThrow('this transaction is over');
  });

  it('sees a schema change: a script drops the prepared statements, and a statement whose result changed shape is prepared again', async () => {
    const star = 'SELECT * FROM items WHERE id = $1';
    expect(Object.keys((await db.query(star, ['a'])).rows[0]!)).not.toContain('extra');
    await db.execute('ALTER TABLE items ADD COLUMN extra text');
    expect(await prepared(db)).toEqual([]);
    expect(Object.keys((await db.query(star, ['a'])).rows[0]!)).toContain('extra');
    // The same change made by a statement, not a script: the first use after it meets Postgres' refusal and prepares again.
    await db.query('ALTER TABLE items ADD COLUMN more text');
    expect(Object.keys((await db.query(star, ['a'])).rows[0]!)).toContain('more');
  });
});

describe('PreparedStatements', () => {
  it('keeps at most its limit, closing the least recently used', async () => {
    await (await openPglite()).close();
    const pglite = await bare();
    try {
      const statements = new PreparedStatements(pglite, 2);
      await statements.run('SELECT 1 AS one', []);
      await statements.run('SELECT 2 AS two', []);
      await statements.run('SELECT 1 AS one', []);
      await statements.run('SELECT 3 AS three', []);
      const held = await pglite.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'ratchet\\_%' ORDER BY statement");
      expect(held.rows.map((row) => row.statement)).toEqual(['SELECT 1 AS one', 'SELECT 3 AS three']);
      expect((await statements.run<{ two: number }>('SELECT 2 AS two', [])).rows).toEqual([{ two: 2 }]);
    } finally {
      await pglite.close();
    }
  });
});
