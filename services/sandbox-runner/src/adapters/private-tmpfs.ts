import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { tmpfsInodes } from '../domain/job-limits';

const run = promisify(execFile);
/** Where the per-sandbox file systems are mounted on the host. */
const base = '/run/ratchet-sandbox';

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
   * Mounts a tmpfs of `bytes` for sandbox `name`, owned by `owner`.
   *
   * @throws the mount's error (not root, no tmpfs).
   */
  static async create(name: string, bytes: number, owner: number): Promise<PrivateTmpfs> {
    const directory = path.join(base, name);
    await mkdir(directory, { recursive: true, mode: 0o700 });
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

  /** Removes what runners that died (SIGKILL) left: mount points older than ten minutes. */
  static async removeStale(): Promise<void> {
    for (const entry of await readdir(base).catch(() => [] as string[])) {
      const directory = path.join(base, entry);
      const age = Date.now() - ((await stat(directory).catch(() => undefined))?.mtimeMs ?? Date.now());
      if (age > 600_000) await new PrivateTmpfs(directory).remove();
    }
  }
}
