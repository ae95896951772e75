import { randomBytes } from 'node:crypto';
import { constants, existsSync, type Stats } from 'node:fs';
import { lstat, mkdir, open, rename, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { isRepositoryMetadata } from '@ratchet/agent';
import { AppError, ErrorCode } from '@ratchet/errors';

const directoryFlags = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0);
// O_EXCL creates the temporary file or fails, so a file or symlink planted
// under its name is never written through; O_NOFOLLOW says the same for links.
const createFlags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);
/** Linux names an open directory by its descriptor: paths under it resolve from that very directory, as openat(2) does. */
const descriptorPaths = existsSync('/proc/self/fd');

/** Says why a path cannot be written; the caller's words (which directory, what to do). */
export type Refusal = (relativePath: string, why: string) => AppError;

/**
 * An open directory that files are written into without following links.
 * Every entry is reached from the directory's descriptor (on Linux through
 * `/proc/self/fd/N/name`, which is openat(2) without a native binding), so a
 * directory renamed or replaced by a symlink after it was opened cannot
 * redirect a write; each directory below is opened with O_NOFOLLOW, so a
 * symlink at any component is refused. Elsewhere entries are reached by the
 * real path of the directory, each component still opened with O_NOFOLLOW.
 */
export class SafeDirectory {
  private constructor(
    private readonly handle: FileHandle,
    private readonly realPath: string,
  ) {}

  /**
   * Opens `directory` itself without following a link there; with `create`,
   * makes it (and missing parents) first when it does not exist.
   * @throws AppError FAILED_PRECONDITION (from `refuse`) when it is a symlink or not a directory.
   */
  static async open(directory: string, refuse: Refusal, create: boolean): Promise<SafeDirectory | undefined> {
    const root = path.resolve(directory);
    const opened = await openDirectory(root, '.', refuse);
    if (opened !== undefined || !create) return opened === undefined ? undefined : new SafeDirectory(opened, root);
    await mkdir(root, { recursive: true });
    const created = await openDirectory(root, '.', refuse);
    if (created === undefined) throw refuse('.', 'the directory vanished while it was being created');
    return new SafeDirectory(created, root);
  }

  /** A path naming `name` in this very directory, whatever happened to the path it was opened by. */
  entry(name: string): string {
    return descriptorPaths ? `/proc/self/fd/${this.handle.fd}/${name}` : path.join(this.realPath, name);
  }

  stat(): Promise<Stats> {
    return this.handle.stat();
  }

  close(): Promise<void> {
    return this.handle.close();
  }

  /**
   * The directory holding `relativePath` (a `/`-separated path below this
   * one), each component opened without following links; with `create`,
   * missing ones are made (mkdir does not follow a link of the same name:
   * it fails). Undefined when one is missing and `create` is false. The
   * caller closes it (it may be this directory itself).
   */
  async parentOf(relativePath: string, refuse: Refusal, create: boolean): Promise<SafeDirectory | undefined> {
    const segments = relativePath.split('/').slice(0, -1);
    // Undefined while still at this directory, which the caller's handle keeps open.
    let below: SafeDirectory | undefined;
    for (let index = 0; index < segments.length; index++) {
      const name = segments[index] as string;
      const shown = segments.slice(0, index + 1).join('/');
      const current = below ?? this;
      let next = await openDirectory(current.entry(name), shown, (_, why) => refuse(relativePath, why));
      if (next === undefined && create) {
        await mkdir(current.entry(name)).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'EEXIST') throw error;
        });
        next = await openDirectory(current.entry(name), shown, (_, why) => refuse(relativePath, why));
      }
      await below?.close();
      if (next === undefined) return undefined;
      below = new SafeDirectory(next, path.join(current.realPath, name));
    }
    return below ?? this;
  }

  /** The entry `relativePath` points at, checked: undefined when absent; refused when a symlink or not a regular file. */
  async existing(relativePath: string, refuse: Refusal): Promise<Stats | undefined> {
    const parent = await this.parentOf(relativePath, refuse, false);
    if (parent === undefined) return undefined;
    try {
      return regularOrAbsent(relativePath, await lstatOrUndefined(parent.entry(path.posix.basename(relativePath))), refuse);
    } finally {
      if (parent !== this) await parent.close();
    }
  }

  /**
   * Writes `content` to `relativePath` whole or not at all: a new temporary
   * file in the target's own directory (O_CREAT|O_EXCL|O_NOFOLLOW), synced,
   * then renamed over the target, which replaces a link planted there
   * meanwhile instead of following it. An overwritten file keeps its
   * permission bits.
   * @throws AppError from `refuse` when a component or the target is a symlink or not what it should be;
   *   INVALID_ARGUMENT for a path inside version-control metadata (callers check first; this is the last line).
   */
  async writeFile(relativePath: string, content: string, refuse: Refusal): Promise<void> {
    refuseMetadata(relativePath);
    const parent = (await this.parentOf(relativePath, refuse, true)) as SafeDirectory;
    try {
      const target = parent.entry(path.posix.basename(relativePath));
      const existing = regularOrAbsent(relativePath, await lstatOrUndefined(target), refuse);
      // A short fixed-length name: the target's own name may already be as long as the file system allows.
      const temporary = parent.entry(`.ratchet-${randomBytes(8).toString('hex')}.tmp`);
      const handle = await open(temporary, createFlags, 0o666);
      try {
        try {
          await handle.writeFile(content, 'utf8');
          if (existing !== undefined) await handle.chmod(existing.mode & 0o7777);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temporary, target);
      } catch (error) {
        await unlink(temporary).catch(() => undefined);
        throw error;
      }
    } finally {
      if (parent !== this) await parent.close();
    }
  }

  /**
   * Deletes the regular file at `relativePath`, then the directories that
   * leaves empty up to (not including) this one.
   * @returns false when it did not exist.
   * @throws AppError INVALID_ARGUMENT for a path inside version-control metadata.
   */
  async deleteFile(relativePath: string, refuse: Refusal): Promise<boolean> {
    refuseMetadata(relativePath);
    const segments = relativePath.split('/');
    const parent = await this.parentOf(relativePath, refuse, false);
    if (parent === undefined) return false;
    try {
      const target = parent.entry(segments.at(-1) as string);
      if (regularOrAbsent(relativePath, await lstatOrUndefined(target), refuse) === undefined) return false;
      await unlink(target);
    } finally {
      if (parent !== this) await parent.close();
    }
    // rmdir fails on a directory that is not empty, which ends the climb.
    for (let depth = segments.length - 1; depth > 0; depth--) {
      const name = segments[depth - 1] as string;
      const holder = await this.parentOf(segments.slice(0, depth).join('/'), refuse, false);
      if (holder === undefined) break;
      const removed = await rmdir(holder.entry(name)).then(
        () => true,
        () => false,
      );
      if (holder !== this) await holder.close();
      if (!removed) break;
    }
    return true;
  }
}

/** Whatever a caller checked, nothing is written into or deleted from `.git/` (or other metadata) through this class. */
function refuseMetadata(relativePath: string): void {
  if (isRepositoryMetadata(relativePath)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `refusing to change ${JSON.stringify(relativePath)}: it is inside version-control metadata, which only the user's own tools may write`);
  }
}

async function openDirectory(file: string, shown: string, refuse: Refusal): Promise<FileHandle | undefined> {
  try {
    return await open(file, directoryFlags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    const name = shown === '.' ? 'it' : shown;
    // With O_DIRECTORY, Linux reports a link to a directory as ENOTDIR rather than ELOOP.
    const link = code === 'ELOOP' || (code === 'ENOTDIR' && (await lstatOrUndefined(file))?.isSymbolicLink() === true);
    if (link) throw refuse(shown, `${name} is a symlink`);
    if (code === 'ENOTDIR') throw refuse(shown, `${name} is not a directory`);
    throw error;
  }
}

function regularOrAbsent(relativePath: string, stats: Stats | undefined, refuse: Refusal): Stats | undefined {
  if (stats?.isSymbolicLink()) throw refuse(relativePath, 'it is a symlink');
  if (stats !== undefined && !stats.isFile()) throw refuse(relativePath, 'it is not a regular file');
  return stats;
}

async function lstatOrUndefined(file: string): Promise<Stats | undefined> {
  try {
    return await lstat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
