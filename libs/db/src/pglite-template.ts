import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * A new PGlite database runs initdb in WASM: 5-6 s of CPU on every fresh
 * data directory (every new user, every bench pass, every test). A cluster
 * just after initdb is the same everywhere, so the first one made on a
 * machine is kept as a tarball (PGlite's `dumpDataDir`) in the user's cache,
 * and later new databases start from it (`loadDataDir`, about 1.4 s).
 *
 * The file is only ever a speed-up: named after the PGlite version that
 * made it, written whole or not at all (temporary file, then rename), and a
 * file that cannot be read or loaded is removed and the database made the
 * slow way.
 */
export interface ClusterTemplate {
  /** The stored cluster, when there is one for this PGlite version. */
  read(): Promise<Blob | undefined>;
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
  return {
    async read() {
      try {
        return new Blob([await readFile(file)]);
      } catch {
        return undefined;
      }
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
    },
  };
}

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
