import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tar from 'tar-stream';

/** The file that holds a data directory for one process (see openPglite). */
export const lockFile = 'ratchet.lock';

/**
 * A new PGlite database runs initdb in WASM: 5-6 s of CPU on every fresh
 * data directory (every new user, every bench pass, every test). A cluster
 * just after initdb is the same everywhere, so the first one made on a
 * machine is kept as a tarball (PGlite's `dumpDataDir`) in the user's cache,
 * and later new databases start from it (`loadDataDir`, about 1.4 s).
 * A database on disk starts from a copy of the cluster unpacked once next
 * to the tarball instead: PGlite's loader writes each of its thousand files
 * through its WASM file system, about 1.7 s of CPU more than copying them.
 *
 * The file is only ever a speed-up: named after the PGlite version that
 * made it, written whole or not at all (temporary file, then rename), and a
 * file that cannot be read or loaded is removed and the database made the
 * slow way.
 */
export interface ClusterTemplate {
  /** The stored cluster, when there is one for this PGlite version. */
  read(): Promise<Blob | undefined>;
  /**
   * Copies the stored cluster into the directory `dataDir` (which holds at
   * most the lock file); false when none is stored.
   * @throws Error when the stored cluster cannot be unpacked (then discard it)
   */
  copyTo(dataDir: string): Promise<boolean>;
  /** Keeps `dump` for later databases; never throws (a cache that cannot be written costs only time). */
  write(dump: Blob): Promise<void>;
  /** Removes a stored cluster that failed to load. */
  discard(): Promise<void>;
}

/**
 * The template file for the installed PGlite: in `cacheDir` when given
 * (tests), else `$RATCHET_CACHE_DIR`, `$XDG_CACHE_HOME/ratchet` or
 * `~/.cache/ratchet`, under `pglite/`.
 */
export function clusterTemplate(cacheDir: string = defaultCacheDirectory()): ClusterTemplate {
  const file = path.join(cacheDir, 'pglite', `cluster-${pgliteVersion()}.tar`);
  const unpacked = file.replace(/\.tar$/, '');
  return {
    async read() {
      try {
        return new Blob([await readFile(file)]);
      } catch {
        return undefined;
      }
    },
    async copyTo(dataDir) {
      if (!existsSync(path.join(unpacked, 'PG_VERSION'))) {
        let archive: Buffer;
        try {
          archive = await readFile(file);
        } catch {
          return false;
        }
        await unpack(archive, unpacked);
      }
      // Node copies a tree in native code when asked synchronously: about 45 ms for the thousand files, against a second of CPU for the promise version's JavaScript walk.
      cpSync(unpacked, dataDir, { recursive: true });
      return true;
    },
    async write(dump) {
      const temporary = `${file}.${randomUUID()}.tmp`;
      try {
        await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
        await writeFile(temporary, Buffer.from(await dump.arrayBuffer()), { mode: 0o600 });
        await rename(temporary, file);
      } catch {
        await rm(temporary, { force: true });
      }
    },
    async discard() {
      await rm(file, { force: true });
      await rm(unpacked, { recursive: true, force: true });
    },
  };
}

/**
 * Writes the cluster in `archive` (a `dumpDataDir` tarball: names from the
 * root of the data directory) to the directory `target`, whole or not at
 * all: into a temporary directory renamed at the end; when another process
 * got there first, its copy is kept. Only directories and regular files with
 * plain names are accepted; the lock files of the process that dumped it are
 * left out.
 */
async function unpack(archive: Buffer, target: string): Promise<void> {
  const temporary = `${target}.${randomUUID()}.tmp`;
  try {
    await mkdir(temporary, { recursive: true, mode: 0o700 });
    const extract = tar.extract();
    let entries = 0;
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
      stream.on('end', () => {
        const name = header.name.replace(/^\/+/, '').replace(/\/+$/, '');
        const parts = name.split('/');
        if (name === '' || parts.some((part) => part === '' || part === '.' || part === '..')) {
          next(new Error(`the stored cluster holds an entry named ${JSON.stringify(header.name)}`));
          return;
        }
        entries += 1;
        const destination = path.join(temporary, ...parts);
        const written =
          header.type === 'directory'
            ? mkdir(destination, { recursive: true, mode: 0o700 })
            : header.type === 'file'
              ? runtimeFiles.has(name)
                ? Promise.resolve()
                : mkdir(path.dirname(destination), { recursive: true, mode: 0o700 }).then(() => writeFile(destination, Buffer.concat(chunks), { mode: 0o600 }))
              : Promise.reject(new Error(`the stored cluster holds a ${header.type ?? 'nameless'} entry, ${name}`));
        written.then(() => next(), next);
      });
      stream.resume();
    });
    await new Promise<void>((resolve, reject) => {
      extract.on('finish', resolve);
      extract.on('error', reject);
      extract.end(archive);
    });
    if (entries === 0 || !existsSync(path.join(temporary, 'PG_VERSION'))) throw new Error('the stored cluster is not a Postgres data directory');
    try {
      await rename(temporary, target);
    } catch (error) {
      // Another process unpacked it meanwhile: theirs is as good.
      if (!existsSync(path.join(target, 'PG_VERSION'))) throw error;
    }
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
}

/** Files of the running server, not of the cluster: a dump made while it ran holds them. */
const runtimeFiles = new Set([lockFile, 'postmaster.pid']);

/** Where Ratchet keeps caches that only save time: `$RATCHET_CACHE_DIR`, `$XDG_CACHE_HOME/ratchet` or `~/.cache/ratchet`. */
export function defaultCacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env['RATCHET_CACHE_DIR']) return path.resolve(env['RATCHET_CACHE_DIR']);
  if (env['XDG_CACHE_HOME']) return path.join(path.resolve(env['XDG_CACHE_HOME']), 'ratchet');
  return path.join(os.homedir(), '.cache', 'ratchet');
}

let version: string | undefined;

/** The installed PGlite's version (its package.json is not exported, so found next to its entry point). */
function pgliteVersion(): string {
  if (version !== undefined) return version;
  for (let directory = path.dirname(require.resolve('@electric-sql/pglite')); path.dirname(directory) !== directory; directory = path.dirname(directory)) {
    const file = path.join(directory, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
    if (manifest.name === '@electric-sql/pglite' && typeof manifest.version === 'string') return (version = manifest.version);
  }
  throw new Error('cannot find the version of the installed @electric-sql/pglite; reinstall it (npm install)');
}
