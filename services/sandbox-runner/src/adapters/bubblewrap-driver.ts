import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Socket } from 'node:net';
import { SandboxDriver, type SandboxJob, type SandboxJobResult } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { effectiveLimits, samePoolLimits, validateJob, type EffectiveLimits } from '../domain/job-limits';
import { jobInput, sessionInput, workDirectory } from '../domain/supervisor-protocol';
import { octalMode } from '../domain/host-access';
import { seccompProgram } from '../domain/seccomp-filter';
import { resultOf, SupervisorSession } from '../domain/supervisor-session';
import { JobCgroup } from './cgroup';
import { blockedOnTheWay } from './host-directory';
import { defaultStateDirectory, PrivateTmpfs } from './private-tmpfs';
import { startSession, type SessionLaunch, type SessionSandbox } from './session-sandbox';
import { needsOwnSandbox, superviseJob, type ReadOnlyMount, type SandboxRunOptions, type SupervisedSandbox } from './supervised-job';
import { supervisorArgv } from './supervisor';
import { WarmPool } from './warm-pool';

/** False under gVisor, whose /proc has no user.max_user_namespaces for bwrap's --disable-userns. */
const nestedUserNamespacesLimitable = existsSync('/proc/sys/user/max_user_namespaces');

export interface BubblewrapDriverOptions {
  /**
   * The sandbox image's root filesystem, mounted read-only as `/`. Default
   * /var/lib/ratchet/sandbox-rootfs when running as root, else
   * ~/.cache/ratchet/sandbox-rootfs; tools/ensure-sandbox-rootfs.sh makes it.
   */
  readonly rootfs?: string;
  /** Limits for values a job leaves at 0. */
  readonly defaults?: EffectiveLimits;
  /** Reported in results. Default bwrap- and a random suffix. */
  readonly runnerId?: string;
  /** The bwrap binary. Default `bwrap` on PATH. */
  readonly bwrap?: string;
  /** The image the root filesystem is an export of; jobs naming it (or none) run. Default ratchet-sandbox:3. */
  readonly image?: string;
  /** Sandboxes started ahead with the default limits, their supervisor waiting (as DockerDriverOptions.warmPool). Default 0. */
  readonly warmPool?: number;
  /** See DockerDriverOptions.warmIdleMs. Default 300000. */
  readonly warmIdleMs?: number;
  /** false: limit by setrlimit even where cgroups could be used (what an unprivileged runner gets). Default: cgroups when writable. */
  readonly cgroups?: boolean;
  /** As root: where each sandbox's tmpfs is mounted; the runner keeps it mode 0711 and its own. Default /run/ratchet-sandbox. */
  readonly stateDirectory?: string;
  /** Told what the driver changed on the host (a state directory it repaired). Default: a process warning. */
  readonly logger?: SandboxLogger;
}

/** Where a driver says what it changed on the host; a pino logger is one. */
export interface SandboxLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

const warningLogger: SandboxLogger = { warn: (_fields, message) => process.emitWarning(message, { code: 'RATCHET_SANDBOX_HOST' }) };

/** A started bwrap sandbox, held back by `read` until its cgroup was joined, its supervisor then waiting for the job. */
interface LaunchedSandbox extends SupervisedSandbox {
  readonly child: ChildProcess;
  readonly cgroup: JobCgroup | undefined;
  readonly files: PrivateTmpfs | undefined;
  /** Resolves when the sandbox is gone and its cgroup and tmpfs are removed. */
  readonly released: Promise<void>;
  ended: boolean;
}

/** Host uid and gid a root runner runs bwrap as, so the sandbox maps to no one with rights on the host. */
const sandboxHostId = 10001;
const sandboxHostUser = { uid: sandboxHostId, gid: sandboxHostId };
/** Size of a sandbox's /tmp, as in Docker. */
const tmpBytes = 64 << 20;
/** The descriptor bwrap reads the seccomp filter from (`--seccomp`); bwrap closes it before the supervisor starts. */
const seccompFd = 3;
let cachedSeccompProgram: Buffer | undefined;

/**
 * This host's seccomp filter (see domain/seccomp-filter.ts).
 *
 * @throws AppError FAILED_PRECONDITION on an architecture the filter does not know.
 */
function hostSeccompProgram(): Buffer {
  cachedSeccompProgram ??= seccompProgram(process.arch, os.endianness());
  return cachedSeccompProgram;
}

/** Hands bwrap the seccomp filter on its descriptor 3 (a socket Node made), which bwrap reads to the end and closes. */
function sendSeccompProgram(child: ChildProcess, filter: Buffer): void {
  const channel = child.stdio[seccompFd] as Socket | null | undefined;
  channel?.on('error', () => undefined); // a bwrap that failed early closed it
  channel?.resume(); // nothing comes back; reading lets its end, and so the child's 'close', arrive
  channel?.end(filter);
}

/** Where the root filesystem is by default for this user. */
export function defaultRootfs(): string {
  return process.getuid?.() === 0 ? '/var/lib/ratchet/sandbox-rootfs' : path.join(os.homedir(), '.cache', 'ratchet', 'sandbox-rootfs');
}

/**
 * Runs sandbox jobs with bubblewrap, for hosts without Docker: new user,
 * pid, network, ipc, uts and cgroup namespaces, the sandbox image's root
 * filesystem read-only, private size-limited tmpfs /work and /tmp, an
 * empty environment, no capabilities, no nested user namespaces, a
 * seccomp filter (domain/seccomp-filter.ts) and `--die-with-parent`. The
 * supervisor is the sandbox's PID 1 (`--as-pid-1`, as in Docker): no bwrap
 * process inside holds the runner's pipes, and the code under test can
 * neither signal the supervisor nor, since it is non-dumpable and ptrace
 * and pidfd_getfd are filtered, take its descriptors or memory. Memory, pids and CPU are limited by a cgroup per job
 * when this process may make one (root); otherwise by setrlimit (address
 * space and a per-user process count), which is weaker and said so by ping().
 * Inside runs the same supervisor as in Docker, so the job contract, the
 * timeouts, the output caps and the result checks are the same.
 */
export class BubblewrapDriver {
  readonly runnerId: string;
  private readonly rootfs: string;
  private readonly defaults: EffectiveLimits | undefined;
  private readonly bwrap: string;
  private readonly image: string;
  private readonly cgroups: { available: boolean; detail: string };
  /** Root mounts each sandbox a tmpfs of its own, with an inode cap. */
  private readonly privateTmpfs = process.getuid?.() === 0;
  private readonly stateDirectory: string;
  private readonly logger: SandboxLogger;
  private readonly running = new Set<LaunchedSandbox>();
  private readonly pool: WarmPool<LaunchedSandbox>;
  /** Sandboxes of finished jobs being cleaned up. */
  private readonly endings = new Set<Promise<void>>();

  constructor(options: BubblewrapDriverOptions = {}) {
    this.rootfs = options.rootfs ?? defaultRootfs();
    this.defaults = options.defaults;
    this.runnerId = options.runnerId ?? `bwrap-${randomUUID().slice(0, 8)}`;
    this.bwrap = options.bwrap ?? 'bwrap';
    this.image = options.image ?? 'ratchet-sandbox:3';
    this.stateDirectory = options.stateDirectory ?? defaultStateDirectory;
    this.logger = options.logger ?? warningLogger;
    this.cgroups = options.cgroups === false ? { available: false, detail: 'cgroups turned off by the cgroups option' } : JobCgroup.availability();
    const defaults = this.defaults;
    const idleMs = options.warmIdleMs ?? 300_000;
    this.pool = new WarmPool({
      size: defaults === undefined ? 0 : Math.max(0, options.warmPool ?? 0),
      idleMs,
      launch: () => this.launch(defaults as EffectiveLimits, 'pool', Math.ceil(idleMs / 1000) + 60),
      discard: (sandbox) => this.endLater(sandbox),
    });
  }

  /** Sandboxes ready in the warm pool now. */
  get warmSandboxes(): number {
    return this.pool.size;
  }

  /** The same, under the name every driver shares (see Sandbox). */
  get warmPoolSize(): number {
    return this.pool.size;
  }

  /**
   * Repairs the host directories the driver keeps (logging what it
   * changed), removes cgroups and tmpfs mounts that killed runners left,
   * fills the warm pool, if any, and waits for finished jobs' cleanup. Never
   * throws: a host it cannot prepare is logged here and reported by ping()
   * and run().
   */
  async warm(): Promise<void> {
    const prepared = await this.prepareHost().then(
      () => true,
      (error: unknown) => {
        this.logger.warn({ err: AppError.from(error).message }, `the bubblewrap sandbox cannot start on this host: ${AppError.from(error).message}`);
        return false;
      },
    );
    if (this.cgroups.available) await JobCgroup.removeStale();
    if (this.privateTmpfs) await PrivateTmpfs.removeStale(this.stateDirectory);
    if (prepared) await this.pool.fill();
    await Promise.all([...this.endings]);
  }

  /** Ends the pool, kills jobs still running and waits for every sandbox's cleanup. */
  async close(): Promise<void> {
    await this.pool.close();
    await Promise.all([...this.running].map((sandbox) => this.end(sandbox)));
    await Promise.all([...this.endings]);
  }

  /**
   * Checks that bwrap runs, user namespaces work and the root filesystem
   * has python3. Returns how resources are limited.
   *
   * @throws AppError FAILED_PRECONDITION saying what to install or build.
   */
  async ping(): Promise<string> {
    if (!existsSync(path.join(this.rootfs, 'usr', 'bin', 'python3'))) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `the sandbox root filesystem ${this.rootfs} is missing or has no python3; make it with tools/ensure-sandbox-rootfs.sh (or set sandbox.rootfs)`);
    }
    await this.prepareHost();
    const probe = await this.probe();
    if (probe.error !== undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, `bubblewrap is not installed (${probe.error.message}); apt-get install bubblewrap`);
    if (probe.status !== 0) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `bubblewrap cannot make a sandbox here: ${probe.stderr.toString().trim()}; unprivileged user namespaces must be enabled (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces)`);
    }
    const limitsBy = this.cgroups.available ? `limits by ${this.cgroups.detail}` : `limits by setrlimit only (${this.cgroups.detail})`;
    return `bwrap ok, ${limitsBy}, ${this.pool.size} warm`;
  }

  /**
   * Runs `job` and returns its result; see DockerDriver.run for what is a
   * result and what throws.
   */
  async run(job: SandboxJob, signal?: AbortSignal, options?: SandboxRunOptions): Promise<SandboxJobResult> {
    const takenAtNs = process.hrtime.bigint();
    const limits = effectiveLimits(job.limits, this.defaults);
    validateJob(job, limits);
    if (job.image !== '' && job.image !== this.image) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `image ${job.image}: the bubblewrap driver runs one root filesystem (${this.rootfs}, an export of ${this.image}); leave image empty or use the docker driver`);
    }
    const startedAt = new Date();
    const started = performance.now();
    const pooled = !needsOwnSandbox(options) && this.defaults !== undefined && samePoolLimits(limits, this.defaults) ? this.pool.take() : undefined;
    pooled?.session.capOutput(limits.outputLimitBytes);
    const sandbox = pooled ?? (await this.launch(limits, job.jobId, 60, options?.mounts ?? []));
    this.running.add(sandbox);
    if (options?.onExport !== undefined) sandbox.session.onExport(options.onExport);
    const spec = {
      ...(sandbox.cgroup === undefined ? { extraRlimits: { nproc: limits.pids, as: limits.memoryBytes } } : {}),
      ...(options?.relay === undefined ? {} : { relay: options.relay }),
      ...(options?.exportDirectory === undefined ? {} : { exportDirectory: options.exportDirectory }),
    };
    try {
      const { killedAtDeadline } = await superviseJob(sandbox, {
        jobId: job.jobId,
        timeoutMs: limits.timeoutMs,
        signal,
        send: () => sandbox.child.stdin?.end(jobInput(job, limits, spec)),
        kill: () => this.kill(sandbox),
      });
      if (!sandbox.session.ready && sandbox.session.diagnosticText !== '') {
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `bubblewrap could not start the sandbox: ${sandbox.session.diagnosticText}`);
      }
      const hostOomKilled = sandbox.cgroup === undefined ? undefined : (await sandbox.cgroup.oomKills()) > 0;
      const result = await resultOf(job, limits, sandbox.session, {
        driver: SandboxDriver.SANDBOX_DRIVER_BUBBLEWRAP,
        runnerId: this.runnerId,
        startedAt,
        takenAtNs,
        wallMs: performance.now() - started,
        killedAtDeadline,
        ...(hostOomKilled === undefined ? {} : { hostOomKilled }),
      });
      const peak = sandbox.cgroup === undefined ? 0 : await sandbox.cgroup.peakMemory();
      return peak > 0 && result.resourceUsage !== undefined ? { ...result, resourceUsage: { ...result.resourceUsage, peakMemoryBytes: peak } } : result;
    } finally {
      // The result does not wait for the cgroup's removal; close() does.
      this.endLater(sandbox);
      this.pool.replenish();
    }
  }

  /**
   * What identifies the root filesystem, for the dependency layer's key: the
   * id of the image it was exported from (tools/ensure-sandbox-rootfs.sh
   * records it), so Docker and bubblewrap runners of one image share layers;
   * else its path.
   */
  async imageIdentity(): Promise<string> {
    const id = await readFile(path.join(this.rootfs, '.ratchet-image-id'), 'utf8').catch(() => '');
    return id.trim() !== '' ? id.trim() : `rootfs:${this.rootfs}`;
  }

  /**
   * Starts a session: a sandbox like a job's (from the warm pool when the
   * limits match) whose supervisor took the files and now serves requests;
   * see DockerDriver.openSession.
   */
  async openSession(launch: SessionLaunch): Promise<SessionSandbox> {
    if (launch.image !== '' && launch.image !== this.image) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `image ${launch.image}: the bubblewrap driver runs one root filesystem (${this.rootfs}, an export of ${this.image}); leave image empty or use the docker driver`);
    }
    const pooled = this.defaults !== undefined && samePoolLimits(launch.limits, this.defaults) ? this.pool.take() : undefined;
    const sandbox = pooled ?? (await this.launch(launch.limits, `session-${launch.sessionId}`));
    this.running.add(sandbox);
    const release = async () => {
      await this.end(sandbox);
      this.pool.replenish();
    };
    const options = sandbox.cgroup === undefined ? { extraRlimits: { nproc: launch.limits.pids, as: launch.limits.memoryBytes } } : {};
    const input = sessionInput(launch.files, launch.env, launch.limits, launch.idleSeconds, options);
    try {
      return await startSession({ session: sandbox.session, closed: sandbox.closed, write: (data) => sandbox.child.stdin?.write(data), release }, launch.sessionId, launch.limits.outputLimitBytes, input, SandboxDriver.SANDBOX_DRIVER_BUBBLEWRAP);
    } catch (error) {
      const diagnostics = sandbox.session.diagnosticText;
      throw diagnostics === '' ? error : new AppError(ErrorCode.FAILED_PRECONDITION, `bubblewrap could not start the session's sandbox: ${diagnostics}`);
    }
  }

  /**
   * Starts bwrap with the supervisor in a new cgroup with `limits`. `read`
   * holds bwrap back until the shell that runs it is in the cgroup, so every
   * sandbox process is. The supervisor exits when no job comes within
   * `idleSeconds`.
   */
  private async launch(limits: EffectiveLimits, name: string, idleSeconds = 60, mounts: readonly ReadOnlyMount[] = []): Promise<LaunchedSandbox> {
    const unique = `${name}-${randomUUID().slice(0, 8)}`;
    const filter = hostSeccompProgram();
    await this.prepareMounts(mounts);
    // Both before bwrap starts, and independent of each other: made at once.
    const [cgroupMade, filesMade] = await Promise.allSettled([
      this.cgroups.available ? JobCgroup.create(unique, limits) : Promise.resolve(undefined),
      this.prepareHost().then(() => (this.privateTmpfs ? PrivateTmpfs.create(this.stateDirectory, unique, limits.workDirBytes + tmpBytes, sandboxHostId) : undefined)),
    ]);
    const cgroup = cgroupMade.status === 'fulfilled' ? cgroupMade.value : undefined;
    const files = filesMade.status === 'fulfilled' ? filesMade.value : undefined;
    if (cgroupMade.status === 'rejected' || filesMade.status === 'rejected') {
      await cgroup?.remove();
      await files?.remove();
      throw cgroupMade.status === 'rejected' ? cgroupMade.reason : (filesMade as PromiseRejectedResult).reason;
    }
    const child = spawn('/bin/sh', ['-c', 'read -r go && exec "$@"', 'sh', this.bwrap, ...this.namespaceArguments(limits.workDirBytes, files, mounts), ...supervisorArgv(idleSeconds)], {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      // Nothing of the runner's environment reaches bwrap.
      env: {},
      ...this.hostIdentity(),
    });
    sendSeccompProgram(child, filter);
    const session = new SupervisorSession(limits.outputLimitBytes);
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    // Once the sandbox is gone (its job ended, or its supervisor gave up waiting in the pool), its cgroup and tmpfs go too, once.
    const released = closed.then(async () => {
      sandbox.ended = true;
      await cgroup?.remove();
      await files?.remove();
    });
    const sandbox: LaunchedSandbox = { child, session, cgroup, files, ended: false, closed, released };
    child.stdout.on('data', (chunk: Buffer) => session.accept(chunk));
    child.stderr.on('data', (chunk: Buffer) => session.acceptDiagnostics(chunk));
    child.stdin.on('error', () => undefined); // a sandbox that died early closes its stdin
    try {
      if (child.pid === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, 'could not start /bin/sh for bubblewrap');
      if (cgroup !== undefined) await cgroup.add(child.pid);
      child.stdin.write('go\n');
      return sandbox;
    } catch (error) {
      await this.end(sandbox);
      throw error;
    }
  }

  /**
   * Before any sandbox starts: the state directory exists with its mode and
   * owner (repaired and logged when something else left it wrong), and, as
   * root, the sandbox user that bwrap runs as can reach the root filesystem
   * and the state directory. A few stat calls, so it runs before every
   * launch: what changed on the host since the last one is caught too.
   *
   * @throws AppError FAILED_PRECONDITION naming the directory in the way and the command that fixes it.
   */
  private async prepareHost(): Promise<void> {
    if (this.privateTmpfs) {
      const { repaired } = await PrivateTmpfs.prepare(this.stateDirectory);
      if (repaired.length > 0) {
        this.logger.warn({ directory: this.stateDirectory, repaired }, `repaired the sandbox state directory ${this.stateDirectory}: ${repaired.join(', ')}`);
      }
    }
    if (process.getuid?.() !== 0) return;
    const targets = [
      { target: this.rootfs, what: 'root filesystem', elsewhere: 'or move the root filesystem (sandbox.rootfs) to a directory everyone may enter, such as /var/lib/ratchet/sandbox-rootfs' },
      ...(this.privateTmpfs ? [{ target: this.stateDirectory, what: 'state directory', elsewhere: 'or choose another state directory' }] : []),
    ];
    for (const { target, what, elsewhere } of targets) {
      const blocked = await blockedOnTheWay(target, sandboxHostUser);
      if (blocked !== undefined) {
        throw new AppError(
          ErrorCode.FAILED_PRECONDITION,
          `bubblewrap runs sandboxes as host uid ${sandboxHostId}, which cannot enter ${blocked.path} (mode ${octalMode(blocked.mode)}, owner ${blocked.uid}:${blocked.gid}) on the way to the sandbox ${what} ${target}; let it through (chmod o+x ${blocked.path}) ${elsewhere}`,
        );
      }
    }
  }

  /**
   * Before a sandbox with read-only mounts starts: each target exists in the
   * root filesystem (bwrap binds onto it, and cannot make it below a
   * read-only /), made here when missing; as root, the sandbox user can
   * reach each source.
   *
   * @throws AppError FAILED_PRECONDITION saying which directory to make or open.
   */
  private async prepareMounts(mounts: readonly ReadOnlyMount[]): Promise<void> {
    for (const mount of mounts) {
      const target = path.join(this.rootfs, mount.target);
      const found = await lstat(target).catch(() => undefined);
      if (found?.isDirectory() === true) continue;
      if (found !== undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, `${target} in the sandbox root filesystem is not a directory; bubblewrap binds ${mount.source} there: remove it, or re-export the root filesystem (tools/ensure-sandbox-rootfs.sh)`);
      await mkdir(target, { recursive: true, mode: 0o755 }).catch((error: NodeJS.ErrnoException) => {
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `bubblewrap binds ${mount.source} at ${mount.target}, which the sandbox root filesystem ${this.rootfs} lacks, and the runner cannot make it (${error.code ?? error.message}); as root: mkdir -p ${target}`, { cause: error });
      });
    }
    if (process.getuid?.() !== 0) return;
    for (const mount of mounts) {
      const blocked = await blockedOnTheWay(mount.source, sandboxHostUser);
      if (blocked !== undefined) {
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `bubblewrap runs sandboxes as host uid ${sandboxHostId}, which cannot enter ${blocked.path} (mode ${octalMode(blocked.mode)}, owner ${blocked.uid}:${blocked.gid}) on the way to ${mount.source}; let it through (chmod o+x ${blocked.path}) or move sandbox.dependencies.cacheDirectory`);
      }
    }
  }

  private async kill(sandbox: LaunchedSandbox): Promise<void> {
    if (sandbox.child.exitCode === null && sandbox.child.signalCode === null) sandbox.child.kill('SIGKILL');
    await sandbox.cgroup?.killAll();
  }

  private endLater(sandbox: LaunchedSandbox): void {
    const ending = this.end(sandbox).finally(() => this.endings.delete(ending));
    this.endings.add(ending);
  }

  /** Kills what is left of a sandbox and removes its cgroup. */
  private async end(sandbox: LaunchedSandbox): Promise<void> {
    await this.kill(sandbox);
    await sandbox.released;
    this.running.delete(sandbox);
  }

  /** bwrap's arguments up to the command. */
  private namespaceArguments(workDirBytes: number, files?: PrivateTmpfs, mounts: readonly ReadOnlyMount[] = []): string[] {
    // With a private tmpfs (root), /work and /tmp are its directories, with an inode cap; otherwise bwrap's own tmpfs.
    const writable = files === undefined ? ['--size', String(workDirBytes), '--tmpfs', workDirectory, '--size', String(tmpBytes), '--tmpfs', '/tmp'] : ['--bind', files.work, workDirectory, '--bind', files.tmp, '/tmp'];
    return [
      '--unshare-all',
      '--unshare-user',
      // Forbids user namespaces inside the sandbox by setting its
      // user.max_user_namespaces to 0. gVisor has no such file (google/gvisor
      // issue 11210) and bwrap then fails, so there, where gVisor's own kernel
      // already stands between the jobs and the node's, it is left out.
      ...(nestedUserNamespacesLimitable ? ['--disable-userns'] : []),
      '--die-with-parent',
      // The supervisor is PID 1: no bwrap init inside holds the runner's
      // pipes, and the sandbox's own processes cannot stop or kill it.
      '--as-pid-1',
      '--seccomp',
      String(seccompFd),
      '--new-session',
      '--cap-drop',
      'ALL',
      '--uid',
      String(sandboxHostId),
      '--gid',
      String(sandboxHostId),
      '--hostname',
      'sandbox',
      '--ro-bind',
      this.rootfs,
      '/',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      ...writable,
      ...mounts.flatMap((mount) => ['--ro-bind', mount.source, mount.target]),
      '--chdir',
      workDirectory,
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/local/bin:/usr/bin:/bin',
      '--setenv',
      'HOME',
      '/tmp',
      '--setenv',
      'LANG',
      'C.UTF-8',
      '--',
    ];
  }

  /** Runs `true` in a sandbox like a job's, within 10 s: whether bwrap, its namespaces and the seccomp filter work here. */
  private probe(): Promise<{ status: number | null; stderr: string; error?: Error }> {
    const filter = hostSeccompProgram();
    return new Promise((resolve) => {
      const child = spawn(this.bwrap, [...this.namespaceArguments(64 << 20), 'true'], { env: {}, stdio: ['ignore', 'ignore', 'pipe', 'pipe'], timeout: 10_000, ...this.hostIdentity() });
      const stderr: Buffer[] = [];
      child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.once('error', (error) => resolve({ status: null, stderr: '', error }));
      child.once('close', (status) => resolve({ status, stderr: Buffer.concat(stderr).toString('utf8').trim() }));
      sendSeccompProgram(child, filter);
    });
  }

  /** As root, bwrap runs as an unprivileged host user; otherwise as this process's user. */
  private hostIdentity(): { uid?: number; gid?: number } {
    return process.getuid?.() === 0 ? { uid: sandboxHostId, gid: sandboxHostId } : {};
  }
}
