import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ErrorCode } from '@ratchet/errors';
import { freePort, startPostgres, type PostgresFixture } from '@ratchet/testing';
import { migrate, openPostgres } from '../src';
import { databaseContract } from './database-contract';

jest.setTimeout(90_000);

let server: PostgresFixture;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server.stop();
});

databaseContract('real Postgres', () => openPostgres({ connectionString: server.connectionString, maxConnections: 4 }));

describe('Postgres specifics', () => {
  it('lets concurrent migrators take turns: each migration is applied exactly once', async () => {
    const databases = await Promise.all([1, 2, 3].map(() => openPostgres({ connectionString: server.connectionString, maxConnections: 2 })));
    try {
      const migrations = [{ id: '0001_counter', sql: 'CREATE TABLE counter (n int); INSERT INTO counter VALUES (1);' }];
      const results = await Promise.all(databases.map((db) => migrate(db, 'concurrent', migrations)));
      expect(results.map((result) => result.applied.length).sort()).toEqual([0, 0, 1]);
      expect((await databases[0]!.query<{ n: number }>('SELECT count(*)::int AS n FROM concurrent.counter')).rows[0]?.n).toBe(1);
    } finally {
      await Promise.all(databases.map((db) => db.close()));
    }
  });

  it('says where it could not connect, retryably, without the password', async () => {
    const port = await freePort();
    const error = await openPostgres({ connectionString: `postgres://ratchet:s3cret@127.0.0.1:${port}/x` }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true, message: expect.stringContaining(`127.0.0.1:${port}/x`) });
    expect((error as Error).message).not.toContain('s3cret');
  });
});
