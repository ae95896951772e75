import { existsSync } from 'node:fs';
import { Client } from 'pg';
import { startPostgres, type PostgresFixture } from './postgres';

// A real Postgres starts with initdb: seconds on an idle machine, more on a loaded one (jest's 5 s default ran out once).
jest.setTimeout(60_000);

async function withClient<T>(database: PostgresFixture, use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: database.connectionString });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

async function titles(database: PostgresFixture): Promise<string[]> {
  return withClient(database, async (client) => {
    const result = await client.query<{ title: string }>('SELECT title FROM tasks ORDER BY id');
    return result.rows.map((row) => row.title);
  });
}

describe('startPostgres', () => {
  let database: PostgresFixture;

  beforeAll(async () => {
    database = await startPostgres();
  });

  afterAll(async () => {
    await database.stop();
  });

  it('creates the database and serves queries on the loopback port', async () => {
    expect(database.connectionString).toBe(`postgres://postgres@127.0.0.1:${database.port}/ratchet_test`);
    await withClient(database, async (client) => {
      const current = await client.query<{ name: string; encoding: string }>(
        'SELECT current_database() AS name, pg_encoding_to_char(encoding) AS encoding FROM pg_database WHERE datname = current_database()',
      );
      expect(current.rows).toEqual([{ name: 'ratchet_test', encoding: 'UTF8' }]);
      await client.query('CREATE TABLE tasks (id serial PRIMARY KEY, title text NOT NULL)');
      await client.query('INSERT INTO tasks (title) VALUES ($1), ($2)', ['plan', 'write code']);
    });
    expect(await titles(database)).toEqual(['plan', 'write code']);
  });

  it('keeps the data across restart()', async () => {
    const firstPid = database.pid;
    await database.restart();
    expect(database.pid).not.toBe(firstPid);
    expect(await titles(database)).toEqual(['plan', 'write code']);
  });

  it('refuses connections after kill() and recovers the data on restart()', async () => {
    await withClient(database, (client) => client.query("INSERT INTO tasks (title) VALUES ('test it')"));
    // A checkpoint puts the row on disk despite synchronous_commit=off.
    await withClient(database, (client) => client.query('CHECKPOINT'));
    const pid = database.pid!;
    await database.kill();
    expect(database.pid).toBeUndefined();
    // Its backends are gone too: they would hold the shared memory a restart needs.
    let signalled = 'a process of the group';
    try {
      process.kill(-pid, 0);
    } catch (error) {
      signalled = (error as NodeJS.ErrnoException).code ?? '';
    }
    expect(signalled).toBe('ESRCH');
    await expect(withClient(database, (client) => client.query('SELECT 1'))).rejects.toMatchObject({ code: 'ECONNREFUSED' });

    await database.restart();
    expect(await titles(database)).toEqual(['plan', 'write code', 'test it']);
  });
});

describe('startPostgres lifecycle', () => {
  it('stop() is idempotent and removes the data directory', async () => {
    const database = await startPostgres({ database: 'other_db', settings: { max_connections: 20 } });
    expect(existsSync(database.dataDir)).toBe(true);
    const maxConnections = await withClient(database, async (client) => (await client.query<{ max_connections: string }>('SHOW max_connections')).rows);
    expect(maxConnections).toEqual([{ max_connections: '20' }]);
    await database.stop();
    await database.stop();
    expect(existsSync(database.dataDir)).toBe(false);
    await expect(database.restart()).rejects.toMatchObject({ code: 'FAILED_PRECONDITION' });
  });

  it('names the package and the variable when the binaries are missing', async () => {
    const saved = process.env['RATCHET_PG_BIN_DIR'];
    process.env['RATCHET_PG_BIN_DIR'] = '/nonexistent';
    try {
      await expect(startPostgres()).rejects.toThrow(/RATCHET_PG_BIN_DIR=\/nonexistent does not contain executable initdb and postgres/);
    } finally {
      if (saved === undefined) delete process.env['RATCHET_PG_BIN_DIR'];
      else process.env['RATCHET_PG_BIN_DIR'] = saved;
    }
  });
});
