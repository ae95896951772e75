import { describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { ErrorCode } from '@ratchet/errors';
import { openPglite } from '../src';
import { databaseContract } from './database-contract';

jest.setTimeout(60_000);

databaseContract('PGlite in memory', () => openPglite());

describe('PGlite on disk', () => {
  it('keeps data across a close and reopen, and locks the directory while open', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-db-'));
    try {
      const db = await openPglite({ dataDir: dir });
      await db.execute('CREATE TABLE kept (v text); INSERT INTO kept VALUES (\'still here\')');
      await expect(openPglite({ dataDir: dir })).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('already open in this process') });
      await db.close();
      const reopened = await openPglite({ dataDir: dir });
      expect((await reopened.query<{ v: string }>('SELECT v FROM kept')).rows).toEqual([{ v: 'still here' }]);
      await reopened.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a directory another live process holds, and takes over a dead holder\'s lock', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-db-'));
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(path.join(dir, 'ratchet.lock'), String(sleeper.pid));
      await expect(openPglite({ dataDir: dir })).rejects.toMatchObject({ message: expect.stringContaining(`in use by process ${sleeper.pid}`) });
      sleeper.kill('SIGKILL');
      await new Promise((resolve) => sleeper.once('exit', resolve));
      const db = await openPglite({ dataDir: dir });
      await db.close();
    } finally {
      sleeper.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('stores vectors and orders by cosine distance with pgvector', async () => {
    const db = await openPglite({ vector: true });
    try {
      await db.execute('CREATE TABLE v (id text, e vector(3))');
      await db.query('INSERT INTO v VALUES ($1, $2), ($3, $4), ($5, $6)', ['same', '[1,0,0]', 'close', '[0.9,0.1,0]', 'far', '[0,0,1]']);
      const { rows } = await db.query<{ id: string; score: number }>('SELECT id, 1 - (e <=> $1) AS score FROM v ORDER BY e <=> $1', ['[1,0,0]']);
      expect(rows.map((row) => row.id)).toEqual(['same', 'close', 'far']);
      expect(rows[0]!.score).toBeCloseTo(1, 5);
      expect(rows[2]!.score).toBeCloseTo(0, 5);
    } finally {
      await db.close();
    }
  });
});
