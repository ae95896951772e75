import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { EffectiveLimits } from '../domain/job-limits';

const root = '/sys/fs/cgroup';
/** Parent of every job's cgroup, so leftovers are easy to find. */
const parentName = 'ratchet-sandbox';

/**
 * One job's control group: memory (no swap), pids and CPU limits, the OOM
 * kill counter, and a way to kill every process in it. cgroup v2 (unified)
 * and v1 (memory, pids and cpu hierarchies) are both handled. Needs write
 * access to /sys/fs/cgroup (root, or a delegated subtree).
 */
export class JobCgroup {
  private constructor(
    private readonly version: 1 | 2,
    /** v2: the one directory; v1: memory, pids and cpu directories. */
    private readonly directories: { memory: string; pids: string; cpu: string },
  ) {}

  /** Whether this host lets this process make job cgroups; why not when it does not. */
  static availability(): { available: boolean; detail: string } {
    if (existsSync(path.join(root, 'cgroup.controllers'))) return probe(root, 'cgroup v2');
    if (existsSync(path.join(root, 'memory', 'memory.limit_in_bytes'))) return probe(path.join(root, 'memory'), 'cgroup v1');
    return { available: false, detail: 'no cgroup memory controller is mounted at /sys/fs/cgroup' };
  }

  /**
   * A new cgroup for job `name` with `limits`.
   *
   * @throws the file system's error when the cgroup cannot be made or limited.
   */
  static async create(name: string, limits: EffectiveLimits): Promise<JobCgroup> {
    const quota = Math.max(1_000, Math.round(limits.cpus * 100_000));
    if (existsSync(path.join(root, 'cgroup.controllers'))) {
      const parent = path.join(root, parentName);
      await mkdir(parent, { recursive: true });
      const wanted = (await readFile(path.join(root, 'cgroup.subtree_control'), 'utf8').catch(() => '')).split(/\s+/);
      for (const controller of ['memory', 'pids', 'cpu']) {
        if (!wanted.includes(controller)) await writeFile(path.join(root, 'cgroup.subtree_control'), `+${controller}`).catch(() => undefined);
      }
      await writeFile(path.join(parent, 'cgroup.subtree_control'), '+memory +pids +cpu').catch(() => undefined);
      const directory = path.join(parent, name);
      await mkdir(directory);
      const group = new JobCgroup(2, { memory: directory, pids: directory, cpu: directory });
      await writeFile(path.join(directory, 'memory.max'), String(limits.memoryBytes));
      await writeFile(path.join(directory, 'memory.swap.max'), '0').catch(() => undefined);
      await writeFile(path.join(directory, 'pids.max'), String(limits.pids));
      await writeFile(path.join(directory, 'cpu.max'), `${quota} 100000`).catch(() => undefined);
      return group;
    }
    const directories = {
      memory: path.join(root, 'memory', parentName, name),
      pids: path.join(root, 'pids', parentName, name),
      cpu: path.join(root, 'cpu', parentName, name),
    };
    for (const directory of Object.values(directories)) await mkdir(directory, { recursive: true });
    const group = new JobCgroup(1, directories);
    await writeFile(path.join(directories.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // Without swap accounting (memsw) the kernel cannot swap a cgroup's pages beyond the limit either way here.
    await writeFile(path.join(directories.memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(() => undefined);
    await writeFile(path.join(directories.pids, 'pids.max'), String(limits.pids));
    await writeFile(path.join(directories.cpu, 'cpu.cfs_period_us'), '100000').catch(() => undefined);
    await writeFile(path.join(directories.cpu, 'cpu.cfs_quota_us'), String(quota)).catch(() => undefined);
    return group;
  }

  /**
   * Removes job cgroups left by runners that died (SIGKILL) before removing
   * them: empty ones (the kernel refuses to remove others) older than ten
   * minutes, so a cgroup another runner is just setting up is left alone.
   */
  static async removeStale(): Promise<void> {
    const parents = existsSync(path.join(root, 'cgroup.controllers')) ? [path.join(root, parentName)] : ['memory', 'pids', 'cpu'].map((name) => path.join(root, name, parentName));
    for (const parent of parents) {
      for (const entry of await readdir(parent, { withFileTypes: true }).catch(() => [])) {
        if (!entry.isDirectory()) continue;
        const directory = path.join(parent, entry.name);
        const age = Date.now() - ((await stat(directory).catch(() => undefined))?.mtimeMs ?? Date.now());
        if (age > 600_000) await rmdir(directory).catch(() => undefined);
      }
    }
  }

  /** Moves process `pid` (and so everything it starts later) into the cgroup. */
  async add(pid: number): Promise<void> {
    const targets = this.version === 2 ? [this.directories.memory] : Object.values(this.directories);
    for (const directory of targets) await writeFile(path.join(directory, 'cgroup.procs'), String(pid));
  }

  /** OOM kills in this cgroup so far. */
  async oomKills(): Promise<number> {
    const file = this.version === 2 ? 'memory.events' : 'memory.oom_control';
    const text = await readFile(path.join(this.directories.memory, file), 'utf8').catch(() => '');
    const line = text.split('\n').find((entry) => entry.startsWith('oom_kill '));
    return line === undefined ? 0 : Number(line.split(' ')[1]);
  }

  /** Highest memory use seen, bytes; 0 when the kernel does not say. */
  async peakMemory(): Promise<number> {
    const file = this.version === 2 ? 'memory.peak' : 'memory.max_usage_in_bytes';
    return Number((await readFile(path.join(this.directories.memory, file), 'utf8').catch(() => '0')).trim()) || 0;
  }

  /** SIGKILLs every process in the cgroup. */
  async killAll(): Promise<void> {
    if (this.version === 2 && (await writeFile(path.join(this.directories.pids, 'cgroup.kill'), '1').then(() => true, () => false))) return;
    for (let round = 0; round < 50; round += 1) {
      const pids = (await readFile(path.join(this.directories.pids, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter((pid) => pid !== '');
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Kills what is left and removes the cgroup (retrying while exiting processes let go of it). */
  async remove(): Promise<void> {
    await this.killAll();
    const directories = this.version === 2 ? [this.directories.memory] : Object.values(this.directories);
    for (const directory of directories) {
      for (let attempt = 0; attempt < 50; attempt += 1) {
        const removed = await rmdir(directory).then(
          () => true,
          (error: NodeJS.ErrnoException) => error.code === 'ENOENT',
        );
        if (removed) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }
}

function probe(directory: string, kind: string): { available: boolean; detail: string } {
  try {
    const probeDirectory = path.join(directory, parentName);
    mkdirSync(probeDirectory, { recursive: true });
    accessSync(probeDirectory, constants.W_OK);
    return { available: true, detail: `${kind} at ${directory}` };
  } catch (error) {
    return { available: false, detail: `${kind} is not writable by this process (${(error as Error).message})` };
  }
}
