import { describe, expect, it } from '@jest/globals';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { ErrorCode } from '@ratchet/errors';
import { clusterTemplate, defaultCacheDirectory, defaultSharedBuffersMb, openPglite } from '../src';
import tar from 'tar-stream';
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

  it('keeps the data directory to its owner: a new one is made 0700, an existing one open to others is closed to them', async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'ratchet-db-'));
    try {
      const made = path.join(parent, 'made', 'data');
      await (await openPglite({ dataDir: made })).close();
      expect((await stat(made)).mode & 0o777).toBe(0o700);
      const existing = path.join(parent, 'existing');
      await mkdir(existing, { mode: 0o755 });
      await chmod(existing, 0o755);
      await (await openPglite({ dataDir: existing })).close();
      expect((await stat(existing)).mode & 0o777).toBe(0o700);
    } finally {
      await rm(parent, { recursive: true, force: true });
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

  it('starts Postgres with the buffer cache asked for, the small default otherwise, and refuses a size that is not whole MB', async () => {
    const cache = async (db: Awaited<ReturnType<typeof openPglite>>) => {
      try {
        return (await db.query<{ size: string }>("SELECT current_setting('shared_buffers') AS size")).rows[0]!.size;
      } finally {
        await db.close();
      }
    };
    expect(await cache(await openPglite())).toBe(`${defaultSharedBuffersMb}MB`);
    expect(await cache(await openPglite({ sharedBuffersMb: 40 }))).toBe('40MB');
    for (const bad of [0, 1.5, Number.NaN]) {
      await expect(openPglite({ sharedBuffersMb: bad })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('whole number of MB') });
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

describe('a new PGlite database from the stored cluster template', () => {
  /** Runs `body` with a new cache directory and a new data directory, removed after. */
  const withCacheAndDirectory = async (body: (cache: string, dir: string) => Promise<void>) => {
    const cache = await mkdtemp(path.join(os.tmpdir(), 'ratchet-db-cache-'));
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-db-'));
    try {
      await body(cache, dir);
    } finally {
      for (const made of [cache, dir]) await rm(made, { recursive: true, force: true });
    }
  };

  it('stores the first cluster it makes, starts the next from it, and keeps each database its own', async () => {
    const cache = await mkdtemp(path.join(os.tmpdir(), 'ratchet-db-cache-'));
    const dirs = [await mkdtemp(path.join(os.tmpdir(), 'ratchet-db-')), await mkdtemp(path.join(os.tmpdir(), 'ratchet-db-'))];
    try {
      const template = clusterTemplate(cache);
      expect(await template.read()).toBeUndefined();
      const first = await openPglite({ dataDir: dirs[0], template });
      await first.execute("CREATE TABLE mine (v text); INSERT INTO mine VALUES ('first')");
      await first.close();
      const stored = await template.read();
      expect(stored?.size).toBeGreaterThan(1_000_000);
      const files = await readdir(path.join(cache, 'pglite'));
      expect(files).toEqual([expect.stringMatching(/^cluster-\d+\.\d+\.\d+\.tar$/)]);
      expect((await stat(path.join(cache, 'pglite', files[0]!))).mode & 0o777).toBe(0o600);

      // A template is the cluster as initdb left it: the first database's table is not in the second.
      const second = await openPglite({ dataDir: dirs[1], template, vector: true });
      await expect(second.query('SELECT v FROM mine')).rejects.toMatchObject({ cause: expect.objectContaining({ sqlState: '42P01' }) });
      // The template was dumped with its maker's lock file in it; a database made from it holds this process's lock.
      await expect(openPglite({ dataDir: dirs[1], template })).rejects.toMatchObject({ message: expect.stringContaining('already open in this process') });
      await second.execute("CREATE TABLE mine (v text); INSERT INTO mine VALUES ('second')");
      await second.close();
      const reopened = await openPglite({ dataDir: dirs[1], template });
      expect((await reopened.query<{ v: string }>('SELECT v FROM mine')).rows).toEqual([{ v: 'second' }]);
      await reopened.close();
    } finally {
      for (const dir of [cache, ...dirs]) await rm(dir, { recursive: true, force: true });
    }
  });

  it('starts a new database from the template, which it proves by what the template holds', async () => {
    await withCacheAndDirectory(async (cache, dir) => {
      // A template with a marker table in it (a real one never has tables): a database made from it has the table.
      const { PGlite } = await import('@electric-sql/pglite');
      const source = await PGlite.create();
      await source.exec("CREATE TABLE marker (v text); INSERT INTO marker VALUES ('from the template')");
      const template = clusterTemplate(cache);
      await template.write(await source.dumpDataDir('none'));
      await source.close();
      const db = await openPglite({ dataDir: dir, template });
      expect((await db.query<{ v: string }>('SELECT v FROM marker')).rows).toEqual([{ v: 'from the template' }]);
      await db.close();
      // On disk, a copy of the cluster unpacked once beside the tarball, its owner's alone, without the dumping server's lock files.
      const unpacked = path.join(cache, 'pglite', (await readdir(path.join(cache, 'pglite'))).find((name) => !name.endsWith('.tar'))!);
      expect((await stat(unpacked)).mode & 0o777).toBe(0o700);
      expect(await readdir(dir)).not.toContain('postmaster.pid');
      // In memory, the tarball itself.
      const inMemory = await openPglite({ template });
      expect((await inMemory.query<{ v: string }>('SELECT v FROM marker')).rows).toEqual([{ v: 'from the template' }]);
      await inMemory.close();
    });
  });

  it('refuses a stored cluster with an entry that would leave its directory, and makes the database with initdb', async () => {
    await withCacheAndDirectory(async (cache, dir) => {
      const pack = tar.pack();
      pack.entry({ name: '/PG_VERSION' }, '18\n');
      pack.entry({ name: '/../escaped' }, 'outside');
      pack.finalize();
      const chunks: Buffer[] = [];
      for await (const chunk of pack) chunks.push(chunk as Buffer);
      const template = clusterTemplate(cache);
      await template.write(new Blob([Buffer.concat(chunks)]));
      const db = await openPglite({ dataDir: dir, template });
      await db.execute("CREATE TABLE t (v text); INSERT INTO t VALUES ('works')");
      await db.close();
      expect(await readdir(cache)).toEqual(['pglite']);
      expect(await readdir(path.join(cache, 'pglite'))).toEqual([expect.stringMatching(/^cluster-[\d.]+\.tar$/)]);
      expect((await template.read())?.size).toBeGreaterThan(1_000_000);
    });
  });

  it('discards a template that does not load, leaves nothing of it in the directory, and makes the database with initdb', async () => {
    await withCacheAndDirectory(async (cache, dir) => {
      const template = clusterTemplate(cache);
      await template.write(new Blob([Buffer.from('not a tarball of a cluster')]));
      await writeFile(path.join(dir, 'notes.txt'), 'left alone');
      const db = await openPglite({ dataDir: dir, template });
      await db.execute("CREATE TABLE t (v text); INSERT INTO t VALUES ('works')");
      expect((await db.query<{ v: string }>('SELECT v FROM t')).rows).toEqual([{ v: 'works' }]);
      await db.close();
      expect(await readFile(path.join(dir, 'notes.txt'), 'utf8')).toBe('left alone');
      // The bad file was replaced by the cluster initdb made.
      expect((await template.read())?.size).toBeGreaterThan(1_000_000);
    });
  });

  it('keeps the cache under RATCHET_CACHE_DIR, else XDG_CACHE_HOME/ratchet, else ~/.cache/ratchet', () => {
    expect(defaultCacheDirectory({ RATCHET_CACHE_DIR: '/srv/cache', XDG_CACHE_HOME: '/x' })).toBe('/srv/cache');
    expect(defaultCacheDirectory({ XDG_CACHE_HOME: '/x' })).toBe(path.join('/x', 'ratchet'));
    expect(defaultCacheDirectory({})).toBe(path.join(os.homedir(), '.cache', 'ratchet'));
  });
});
