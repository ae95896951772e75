import { randomUUID } from 'node:crypto';
import { PassThrough, type Duplex } from 'node:stream';
import { Language, SandboxDriver, type CommandResult, type SandboxJob, type SandboxJobResult } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import Docker from 'dockerode';
import tar from 'tar-stream';
import { CappedBuffer } from '../domain/capped-buffer';
import { effectiveLimits, validateJob, type EffectiveLimits } from '../domain/job-limits';
import { parseJUnit } from '../domain/junit';

export interface DockerDriverOptions {
  /** Docker engine socket. Default /var/run/docker.sock. */
  readonly socketPath?: string;
  /** Image used when a job names none. Default ratchet-sandbox:1. */
  readonly image?: string;
  /** Limits for values a job leaves at 0. */
  readonly defaults?: EffectiveLimits;
  /** Reported in results. Default a random id. */
  readonly runnerId?: string;
  /**
   * Started, idle containers kept ready for jobs with the default image and
   * limits, so a job skips container creation and start. Each is used by
   * one job only and removed after it. Default 0 (a fresh container per job).
   */
  readonly warmPool?: number;
  /** A pool idle this long is emptied (and refilled by the next job); a pooled container is never older. Default 300000. */
  readonly warmIdleMs?: number;
}

interface PooledContainer {
  readonly container: Docker.Container;
  readonly createdAt: number;
}

/** The uid:gid jobs run as; the image has a `sandbox` user with this id and nothing owned by it. */
const sandboxUser = '10001:10001';
/** Label on every job container, so leftovers can be found and removed. */
export const jobLabel = 'dev.ratchet.job-id';
/** Largest JUnit report read back, bytes. */
const maxReportBytes = 8 * 1024 * 1024;

const imageAdvice = 'build it with deploy/sandbox/build-image.sh (tools/ensure-docker.sh does it when missing)';

/**
 * Runs sandbox jobs in Docker: per job a fresh container with no network, a
 * read-only root filesystem, all capabilities dropped, no-new-privileges,
 * memory (no swap), pids and CPU limits, an init process, a tmpfs /work and
 * /tmp, and an unprivileged user. Files go in through `tar -x` on an exec's
 * stdin (the archive API cannot write to a read-only root or a tmpfs), the
 * commands run as execs, and the JUnit report is read back with `cat`. A
 * timeout kills the container, which takes the whole process tree with it.
 * The container is removed afterwards whatever happened.
 */
export class DockerDriver {
  private readonly docker: Docker;
  private readonly image: string;
  private readonly defaults: EffectiveLimits | undefined;
  readonly runnerId: string;
  private readonly poolSize: number;
  private readonly idleMs: number;
  private readonly pool: PooledContainer[] = [];
  private filling = 0;
  private lastUsed = Date.now();
  /** After a failed refill (engine down, image missing), the next attempt waits until then. */
  private refillAfter = 0;
  private closed = false;
  /** Containers of finished jobs still being removed. */
  private readonly removals = new Set<Promise<unknown>>();
  private readonly idleTimer: NodeJS.Timeout | undefined;

  constructor(options: DockerDriverOptions = {}) {
    this.docker = new Docker({ socketPath: options.socketPath ?? '/var/run/docker.sock' });
    this.image = options.image ?? 'ratchet-sandbox:1';
    this.defaults = options.defaults;
    this.runnerId = options.runnerId ?? `docker-${randomUUID().slice(0, 8)}`;
    this.poolSize = Math.max(0, options.warmPool ?? 0);
    this.idleMs = options.warmIdleMs ?? 300_000;
    if (this.poolSize > 0) {
      this.idleTimer = setInterval(() => this.shrinkIfIdle(), Math.max(1_000, Math.floor(this.idleMs / 4)));
      this.idleTimer.unref();
    }
  }

  /** Idle containers ready in the warm pool now. */
  get warmContainers(): number {
    return this.pool.length;
  }

  /**
   * Fills the warm pool (if any) and resolves once it is full (or a container
   * could not be made) and the containers of finished jobs are removed.
   */
  async warm(): Promise<void> {
    this.refill();
    while (!this.closed && this.filling > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await Promise.all([...this.removals]);
  }

  /** Removes the idle pooled containers and those of finished jobs, and stops refilling. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer !== undefined) clearInterval(this.idleTimer);
    while (this.filling > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await Promise.all(this.pool.splice(0).map(({ container }) => container.remove({ force: true }).catch(() => undefined)));
    await Promise.all([...this.removals]);
  }

  /**
   * Checks that the engine answers and the default image exists.
   *
   * @throws AppError UNAVAILABLE (retryable) when Docker is unreachable;
   *   FAILED_PRECONDITION when the image is missing.
   */
  async ping(): Promise<void> {
    try {
      await this.docker.ping();
    } catch (error) {
      throw unreachable(error);
    }
    await this.checkImage(this.image);
  }

  /**
   * Runs `job` and returns its result. Failures of the code under test are
   * results (exit code, timed out, no report); only problems of the job or
   * the engine throw.
   *
   * @throws AppError INVALID_ARGUMENT for a malformed job; UNAVAILABLE when
   *   Docker is unreachable; FAILED_PRECONDITION when the image is missing;
   *   CANCELLED when `signal` aborts (the container is removed).
   */
  async run(job: SandboxJob, signal?: AbortSignal): Promise<SandboxJobResult> {
    const limits = effectiveLimits(job.limits, this.defaults);
    validateJob(job, limits);
    const image = job.image || this.image;
    const startedAt = new Date();
    const started = performance.now();
    const pooled = this.take(image, limits);
    const container = pooled ?? (await this.create(image, limits, job.jobId));
    // The job's environment goes to its commands (a pooled container was made before the job was known).
    const env = Object.entries(job.env).map(([name, value]) => `${name}=${value}`);
    const stdout = new CappedBuffer(limits.outputLimitBytes);
    const stderr = new CappedBuffer(limits.outputLimitBytes);
    const commandResults: CommandResult[] = [];
    let killed = false;
    const kill = () => {
      killed = true;
      return container.kill().catch(() => undefined);
    };
    const onAbort = () => void kill();
    signal?.addEventListener('abort', onAbort, { once: true });
    const deadline = started + limits.timeoutMs;
    let timedOut = false;
    let exitCode = 0;
    let reportXml: string | undefined;
    try {
      if (pooled === undefined) await container.start();
      await this.copyFiles(container, job);
      for (const command of job.commands) {
        const commandTimeout = command.timeout === undefined ? Number.POSITIVE_INFINITY : command.timeout.seconds * 1000 + command.timeout.nanos / 1e6;
        const budget = Math.min(deadline - performance.now(), commandTimeout > 0 ? commandTimeout : Number.POSITIVE_INFINITY);
        const commandStarted = performance.now();
        const outcome = await this.exec(container, command.argv, command.workingDirectory, env, { stdout, stderr }, budget, kill);
        const durationMs = performance.now() - commandStarted;
        commandResults.push({ name: command.name, exitCode: outcome.exitCode, duration: duration(durationMs), timedOut: outcome.timedOut });
        exitCode = outcome.exitCode;
        if (outcome.timedOut) timedOut = true;
        if (outcome.timedOut || killed || outcome.exitCode !== 0) break;
      }
      if (signal?.aborted === true) throw new AppError(ErrorCode.CANCELLED, `sandbox job ${job.jobId} was cancelled`);
      if (!killed && job.testReportPath !== '') reportXml = await this.readFile(container, job.testReportPath);
      const state = await container.inspect().catch(() => undefined);
      // A process killed by the kernel's OOM killer inside an exec does not set
      // State.OOMKilled (that covers the container's init only); exit 137
      // (SIGKILL) that the runner did not send is the sign then.
      const oomKilled = state?.State.OOMKilled === true || (!timedOut && !killed && exitCode === 137);
      const report = parseJUnit(reportXml, frameworkOf(job));
      return {
        jobId: job.jobId,
        taskId: job.taskId,
        exitCode,
        stdout: stdout.toBuffer(),
        stderr: stderr.toBuffer(),
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        timedOut,
        oomKilled,
        resourceUsage: { wallTime: duration(performance.now() - started), cpuTime: undefined, peakMemoryBytes: 0, peakPids: 0 },
        testReport: timedOut ? { ...report, parseError: report.parsed ? '' : `the run timed out after ${limits.timeoutMs} ms, before a report was written` } : report,
        commandResults,
        driver: SandboxDriver.SANDBOX_DRIVER_DOCKER,
        runnerId: this.runnerId,
        startedAt,
        completedAt: new Date(),
        error: undefined,
      };
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // The result does not wait for the removal (about 100 ms); close() does.
      this.removeLater(container);
    }
  }

  /** A pooled container for a job with the pool's image and limits, or undefined. */
  private take(image: string, limits: EffectiveLimits): Docker.Container | undefined {
    if (this.poolSize === 0 || this.defaults === undefined || image !== this.image || !sameContainerLimits(limits, this.defaults)) return undefined;
    this.lastUsed = Date.now();
    let taken: Docker.Container | undefined;
    while (taken === undefined && this.pool.length > 0) {
      const entry = this.pool.shift() as PooledContainer;
      if (Date.now() - entry.createdAt < this.idleMs) taken = entry.container;
      else void entry.container.remove({ force: true }).catch(() => undefined);
    }
    this.refill();
    return taken;
  }

  private refill(): void {
    if (this.poolSize === 0 || this.defaults === undefined || this.closed || Date.now() < this.refillAfter) return;
    const limits = this.defaults;
    while (this.pool.length + this.filling < this.poolSize) {
      this.filling += 1;
      void (async () => {
        const container = await this.create(this.image, limits, `pool-${this.runnerId}`, this.idleMs);
        try {
          await container.start();
        } catch (error) {
          await container.remove({ force: true }).catch(() => undefined);
          throw error;
        }
        if (this.closed) await container.remove({ force: true }).catch(() => undefined);
        else this.pool.push({ container, createdAt: Date.now() });
      })()
        .catch(() => {
          // Jobs still run in fresh containers, which report the problem themselves.
          this.refillAfter = Date.now() + 5_000;
        })
        .finally(() => {
          this.filling -= 1;
        });
      if (Date.now() < this.refillAfter) break;
    }
  }

  private removeLater(container: Docker.Container): void {
    const removal = container
      .remove({ force: true })
      .catch(() => undefined)
      .finally(() => this.removals.delete(removal));
    this.removals.add(removal);
  }

  private shrinkIfIdle(): void {
    if (Date.now() - this.lastUsed < this.idleMs) return;
    for (const { container } of this.pool.splice(0)) void container.remove({ force: true }).catch(() => undefined);
  }

  /**
   * A started-to-be container with the job's limits. Its life is bounded even
   * if this runner dies (SIGKILL): its init exits a minute after the job's
   * timeout (plus `waitMs` it may sit in the pool) and AutoRemove deletes it.
   */
  private async create(image: string, limits: EffectiveLimits, label: string, waitMs = 0): Promise<Docker.Container> {
    try {
      return await this.docker.createContainer({
        Image: image,
        Cmd: ['sleep', String(Math.ceil((limits.timeoutMs + waitMs) / 1000) + 60)],
        User: sandboxUser,
        WorkingDir: '/work',
        NetworkDisabled: true,
        Labels: { [jobLabel]: label },
        HostConfig: {
          NetworkMode: 'none',
          AutoRemove: true,
          ReadonlyRootfs: true,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          Memory: limits.memoryBytes,
          MemorySwap: limits.memoryBytes,
          PidsLimit: limits.pids,
          NanoCpus: Math.round(limits.cpus * 1e9),
          Init: true,
          Tmpfs: {
            '/work': `rw,exec,nosuid,nodev,size=${limits.workDirBytes},uid=10001,gid=10001,mode=0700`,
            '/tmp': 'rw,exec,nosuid,nodev,size=67108864,mode=1777',
          },
        },
      });
    } catch (error) {
      if (statusOf(error) === 404) throw new AppError(ErrorCode.FAILED_PRECONDITION, `the sandbox image ${image} is missing; ${imageAdvice}`, { cause: error });
      if (statusOf(error) === undefined) throw unreachable(error);
      throw new AppError(ErrorCode.INTERNAL, `Docker refused to create the sandbox container: ${(error as Error).message}`, { cause: error });
    }
  }

  private async checkImage(image: string): Promise<void> {
    try {
      await this.docker.getImage(image).inspect();
    } catch (error) {
      if (statusOf(error) === 404) throw new AppError(ErrorCode.FAILED_PRECONDITION, `the sandbox image ${image} is missing; ${imageAdvice}`, { cause: error });
      throw unreachable(error);
    }
  }

  private async copyFiles(container: Docker.Container, job: SandboxJob): Promise<void> {
    const pack = tar.pack();
    const directories = new Set<string>();
    for (const file of job.files) {
      const parts = file.path.split('/');
      for (let depth = 1; depth < parts.length; depth += 1) directories.add(parts.slice(0, depth).join('/'));
    }
    for (const directory of [...directories].sort()) pack.entry({ name: `${directory}/`, type: 'directory', mode: 0o755 });
    for (const file of job.files) pack.entry({ name: file.path, mode: 0o644 }, file.content);
    pack.finalize();
    const exec = await container.exec({ Cmd: ['tar', '-x', '-C', '/work', '-f', '-'], AttachStdin: true, AttachStdout: true, AttachStderr: true, User: sandboxUser });
    const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    const errors = new CappedBuffer(4096);
    const sink = new PassThrough();
    sink.on('data', (chunk: Buffer) => errors.write(chunk));
    this.docker.modem.demuxStream(stream, sink, sink);
    pack.pipe(stream);
    await ended(stream);
    const info = await exec.inspect();
    if (info.ExitCode !== 0) throw new AppError(ErrorCode.INTERNAL, `copying the job's files into the sandbox failed (tar exit ${info.ExitCode}): ${errors.toBuffer().toString('utf8')}`);
  }

  private async exec(
    container: Docker.Container,
    argv: readonly string[],
    workingDirectory: string,
    env: readonly string[],
    output: { stdout: CappedBuffer; stderr: CappedBuffer },
    budgetMs: number,
    kill: () => Promise<unknown>,
  ): Promise<{ exitCode: number; timedOut: boolean }> {
    if (budgetMs <= 0) return { exitCode: -1, timedOut: true };
    const exec = await container.exec({ Cmd: [...argv], Env: [...env], AttachStdout: true, AttachStderr: true, WorkingDir: workingDirectory === '' ? '/work' : `/work/${workingDirectory}`, User: sandboxUser });
    const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
    const out = new PassThrough();
    const err = new PassThrough();
    out.on('data', (chunk: Buffer) => output.stdout.write(chunk));
    err.on('data', (chunk: Buffer) => output.stderr.write(chunk));
    this.docker.modem.demuxStream(stream, out, err);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void kill();
    }, budgetMs);
    try {
      await ended(stream);
    } finally {
      clearTimeout(timer);
    }
    if (timedOut) return { exitCode: -1, timedOut: true };
    const info = await exec.inspect().catch(() => undefined);
    return { exitCode: info?.ExitCode ?? -1, timedOut: false };
  }

  private async readFile(container: Docker.Container, path: string): Promise<string | undefined> {
    const exec = await container.exec({ Cmd: ['cat', '--', path], AttachStdout: true, AttachStderr: true, User: sandboxUser });
    const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
    const content = new CappedBuffer(maxReportBytes);
    const out = new PassThrough();
    out.on('data', (chunk: Buffer) => content.write(chunk));
    this.docker.modem.demuxStream(stream, out, new PassThrough().resume());
    await ended(stream);
    const info = await exec.inspect().catch(() => undefined);
    if (info?.ExitCode !== 0 || content.truncated) return undefined;
    return content.toBuffer().toString('utf8');
  }
}

/** Whether two jobs' limits make the same container (the pool's containers are made for the defaults). */
function sameContainerLimits(left: EffectiveLimits, right: EffectiveLimits): boolean {
  return left.memoryBytes === right.memoryBytes && left.pids === right.pids && left.cpus === right.cpus && left.workDirBytes === right.workDirBytes && left.timeoutMs <= right.timeoutMs;
}

function frameworkOf(job: SandboxJob): string {
  return job.language === Language.LANGUAGE_PYTHON ? 'pytest' : 'node:test';
}

function ended(stream: Duplex): Promise<void> {
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        resolve();
      }
    };
    stream.once('end', finish);
    stream.once('close', finish);
    stream.once('error', finish);
  });
}

function duration(ms: number) {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

function statusOf(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && 'statusCode' in error && typeof (error as { statusCode: unknown }).statusCode === 'number' ? (error as { statusCode: number }).statusCode : undefined;
}

function unreachable(error: unknown): AppError {
  return new AppError(ErrorCode.UNAVAILABLE, `the Docker engine is not reachable (${error instanceof Error ? error.message : String(error)}); start it (tools/ensure-docker.sh on Debian) or set sandbox.dockerSocket`, {
    cause: error,
    retryable: true,
  });
}
