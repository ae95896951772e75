import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { tmpfsInodes } from '../domain/job-limits';
import { ensureHostDirectory, type HostDirectoryOutcome } from './host-directory';

const run = promisify(execFile);
/** Where the per-sandbox file systems are mounted on the host by default. */
export const defaultStateDirectory = '/run/ratchet-sandbox';
/**
 * The state directory's mode: the runner's alone to change and list, but
 * enterable by everyone, since bwrap (running as the sandbox user) must reach
 * its sandbox's tmpfs below it. Each tmpfs is 0700 and the sandbox user's.
 */
const stateDirectoryMode = 0o711;

/**
 * One sandbox's writable file system: a tmpfs with a size and an inode cap
 * (bwrap's own --tmpfs takes no inode cap, and a flood of empty files would
 * otherwise only stop at the job's memory limit), holding the /work and /tmp
 * that bwrap binds in. Owned by the unprivileged user bwrap runs as, mode
 * 0700. Mounting needs root.
 */
export class PrivateTmpfs {
  private constructor(readonly directory: string) {}

  get work(): string {
    return path.join(this.directory, 'work');
  }

  get tmp(): string {
    return path.join(this.directory, 'tmp');
  }

  /**
   * Makes `base`, the directory the tmpfs mounts go under, root's with mode
   * 0711, whatever an earlier run, another version or a person left there.
   *
   * @throws AppError FAILED_PRECONDITION from ensureHostDirectory, saying how to fix what it cannot.
   */
  static prepare(base: string): Promise<HostDirectoryOutcome> {
    return ensureHostDirectory(base, { mode: stateDirectoryMode, uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 });
  }

  /**
   * Mounts a tmpfs of `bytes` for sandbox `name` under `base` (made ready
   * by prepare()), owned by `owner`.
   *
   * @throws the mount's error (not root, no tmpfs).
   */
  static async create(base: string, name: string, bytes: number, owner: number): Promise<PrivateTmpfs> {
    const directory = path.join(base, name);
    await mkdir(directory, { mode: 0o700 });
    await run('mount', ['-t', 'tmpfs', '-o', `size=${bytes},nr_inodes=${tmpfsInodes(bytes)},uid=${owner},gid=${owner},mode=0700,nosuid,nodev`, 'ratchet-sandbox', directory]);
    const mounted = new PrivateTmpfs(directory);
    for (const [sub, mode] of [
      [mounted.work, 0o700],
      [mounted.tmp, 0o1777],
    ] as const) {
      await mkdir(sub);
      await chown(sub, owner, owner);
      await chmod(sub, mode);
    }
    return mounted;
  }

  /**
   * Unmounts (lazily, should a process still hold it) and removes the mount
   * point. Never throws: what cannot go now goes in removeStale().
   */
  async remove(): Promise<void> {
    await run('umount', ['-l', this.directory]).catch(() => undefined);
    await rm(this.directory, { recursive: true, force: true }).catch(() => undefined);
  }

  /** Removes what runners that died (SIGKILL) left under `base`: mount points older than ten minutes. */
  static async removeStale(base: string): Promise<void> {
    for (const entry of await readdir(base).catch(() => [] as string[])) {
      const directory = path.join(base, entry);
      const age = Date.now() - ((await stat(directory).catch(() => undefined))?.mtimeMs ?? Date.now());
      if (age > 600_000) await new PrivateTmpfs(directory).remove();
    }
  }
}
