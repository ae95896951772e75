import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, lstat, mkdtemp, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { layerLayout, layerManifestName, type LayerManifest } from '../domain/dependencies';
import { ensureHostDirectory } from './host-directory';

/** Where layers are kept by default for this user. */
export function defaultLayerCache(): string {
  return process.getuid?.() === 0 ? '/var/lib/ratchet/deps' : path.join(os.homedir(), '.cache', 'ratchet', 'deps');
}

/** Staging copies and proxy directories older than this were left by a runner that died, ms. */
const staleAfterMs = 3_600_000;

/**
 * The host directory of dependency layers:
 *
 *     <cache>/            0755, the runner's: the sandbox user reads layers, only the runner writes
 *       layers/<key>/     0755, one complete layer: python/ or npm/, and layer.json, written last
 *       staging/          0700: layers being built, each renamed into layers/ when complete
 *       proxy/<id>/       0711: one install's proxy socket, bound into its install sandbox
 *
 * A layer is complete only when its layer.json is there: it is written last
 * in the staging copy, and the copy is renamed into place in one step, so a
 * reader sees a whole layer or none. Two runners building one key both
 * rename; the second finds the first's layer there and drops its own copy.
 */
export class LayerCache {
  private staleRemoved = false;

  constructor(readonly directory: string) {}

  get layers(): string {
    return path.join(this.directory, 'layers');
  }

  private get staging(): string {
    return path.join(this.directory, 'staging');
  }

  private get proxies(): string {
    return path.join(this.directory, 'proxy');
  }

  /** The directory of layer `key` (complete or not). */
  layerDirectory(key: string): string {
    return path.join(this.layers, key);
  }

  /**
   * Makes the cache's directories with their modes and the runner as owner,
   * repairing what another umask or a hand-made mkdir left (a few lstat calls,
   * so it runs before every install and lookup); the first time, also removes
   * the staging copies and proxy directories of runners that died.
   *
   * @returns what was repaired ("<dir>: mode 0700 -> 0755").
   * @throws AppError FAILED_PRECONDITION from ensureHostDirectory, saying how to fix what it cannot.
   */
  async prepare(): Promise<string[]> {
    const owner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const repaired: string[] = [];
    for (const [directory, mode] of [
      [this.directory, 0o755],
      [this.layers, 0o755],
      [this.staging, 0o700],
      [this.proxies, 0o711],
    ] as const) {
      const outcome = await ensureHostDirectory(directory, { mode, ...owner });
      repaired.push(...outcome.repaired.map((change) => `${directory}: ${change}`));
    }
    if (!this.staleRemoved) {
      this.staleRemoved = true;
      await Promise.all([this.removeStale(this.staging), this.removeStale(this.proxies)]);
    }
    return repaired;
  }

  /**
   * Whether the runner can use the cache, changing nothing (for Health):
   * the directory is a directory the runner owns (its mode is repaired at
   * the first install), or is missing below a directory it may write.
   */
  async check(): Promise<{ ok: boolean; detail: string }> {
    const uid = process.getuid?.() ?? 0;
    const found = await lstat(this.directory).catch(() => undefined);
    if (found === undefined) {
      let parent = path.dirname(this.directory);
      while ((await lstat(parent).catch(() => undefined)) === undefined && parent !== path.dirname(parent)) parent = path.dirname(parent);
      const writable = await access(parent, constants.W_OK | constants.X_OK).then(
        () => true,
        () => false,
      );
      return writable ? { ok: true, detail: `${this.directory} is made at the first install` } : { ok: false, detail: `${this.directory} is missing and the runner (uid ${uid}) cannot make it in ${parent}; as root: install -d -o ${uid} -g ${process.getgid?.() ?? 0} -m 0755 ${this.directory}` };
    }
    if (!found.isDirectory()) return { ok: false, detail: `${this.directory} is not a directory; remove it, or set sandbox.dependencies.cacheDirectory` };
    if (found.uid !== uid && uid !== 0) return { ok: false, detail: `${this.directory} belongs to uid ${found.uid}, not the runner (uid ${uid}); as root: chown -R ${uid}:${process.getgid?.() ?? 0} ${this.directory}` };
    const layers = await readdir(this.layers).catch(() => [] as string[]);
    return { ok: true, detail: `${layers.length} layer${layers.length === 1 ? '' : 's'} in ${this.directory}` };
  }

  /** The manifest of layer `key` when it is complete, else undefined. */
  async read(key: string): Promise<LayerManifest | undefined> {
    const manifest = await readManifest(path.join(this.layerDirectory(key), layerManifestName));
    return manifest?.key === key && manifest.layout === layerLayout ? manifest : undefined;
  }

  /** A new, empty staging directory for layer `key` (0755: it becomes the layer). */
  async stage(key: string): Promise<string> {
    const directory = await mkdtemp(path.join(this.staging, `${key.slice(0, 16)}-`));
    await chmod(directory, 0o755);
    return directory;
  }

  /** A path for a temporary file of the runner's beside the staging copies. */
  temporaryFile(suffix: string): string {
    return path.join(this.staging, `${randomUUID()}${suffix}`);
  }

  /** A new directory for one install's proxy socket: 0711, so the sandbox user can reach the socket in it but not list the others. */
  async proxyDirectory(): Promise<string> {
    const directory = await mkdtemp(path.join(this.proxies, 'install-'));
    await chmod(directory, 0o711);
    return directory;
  }

  /**
   * Completes a staged layer: writes its manifest (last), then renames it to
   * layers/<key>. When another runner got there first, its layer is kept and
   * this copy removed.
   *
   * @returns the manifest of the layer now in place.
   */
  async commit(staged: string, manifest: LayerManifest): Promise<LayerManifest> {
    const file = await open(path.join(staged, layerManifestName), 'wx', 0o644);
    try {
      await file.writeFile(`${JSON.stringify(manifest, null, 2)}\n`);
      await file.sync();
    } finally {
      await file.close();
    }
    const target = this.layerDirectory(manifest.key);
    for (let attempt = 0; ; attempt += 1) {
      try {
        await rename(staged, target);
        return manifest;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
        const theirs = await this.read(manifest.key);
        if (theirs !== undefined) {
          await rm(staged, { recursive: true, force: true });
          return theirs;
        }
        // A directory without a manifest cannot come from a rename (the manifest goes first): a broken leftover, replaced once.
        if (attempt > 0) throw error;
        await rm(target, { recursive: true, force: true });
      }
    }
  }

  private async removeStale(directory: string): Promise<void> {
    for (const entry of await readdir(directory).catch(() => [] as string[])) {
      const child = path.join(directory, entry);
      const found = await stat(child).catch(() => undefined);
      if (found !== undefined && Date.now() - found.mtimeMs > staleAfterMs) await rm(child, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

/** A layer manifest read without following a link; undefined when missing or unreadable. */
async function readManifest(file: string): Promise<LayerManifest | undefined> {
  const found = await lstat(file).catch(() => undefined);
  if (found?.isFile() !== true) return undefined;
  try {
    return JSON.parse(await readFile(file, 'utf8')) as LayerManifest;
  } catch {
    return undefined;
  }
}
