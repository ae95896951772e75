import { randomUUID } from 'node:crypto';
import { PassThrough, type Duplex } from 'node:stream';
import { SandboxDriver, type SandboxJob, type SandboxJobResult } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type Docker from 'dockerode';
import { effectiveLimits, samePoolLimits, tmpfsInodes, validateJob, type EffectiveLimits } from '../domain/job-limits';
import { jobInput, sessionInput, workDirectory } from '../domain/supervisor-protocol';
import { resultOf, SupervisorSession } from '../domain/supervisor-session';
import { startSession, type SessionLaunch, type SessionSandbox } from './session-sandbox';
import { needsOwnSandbox, superviseJob, type ReadOnlyMount, type SandboxRunOptions, type SupervisedSandbox } from './supervised-job';
import { supervisorArgv } from './supervisor';
import { WarmPool } from './warm-pool';

export interface DockerDriverOptions {
  /** Docker engine socket. Default /var/run/docker.sock. */
  readonly socketPath?: string;
  /** Image used when a job names none. Default ratchet-sandbox:3. */
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
  /**
   * How old a stopped (or never started) job container must be before
   * warm() removes it as a dead runner's leftover, ms. Default 60000.
   */
  readonly leftoverAgeMs?: number;
  /**
   * After a job, the removal of its container and the pool's refill wait
   * this long, ms: together about 0.3 s of CPU in the engine (dockerd,
   * containerd, runc), which would otherwise compete with the work the
   * result starts (the loop's reflection and next step). Default 300; 0
   * does both at once.
   */
  readonly housekeepingDelayMs?: number;
  /**
   * OCI runtime registered with the Docker daemon, for example `runsc`
   * (gVisor); default the daemon's own (runc). See deploy/sandbox/README.md.
   */
  readonly runtime?: string;
}

/** A container whose supervisor is attached: its stdin takes the job, its stdout the frames. */
interface LaunchedSandbox extends SupervisedSandbox {
  readonly container: Docker.Container;
  readonly stream: Duplex;
  ended: boolean;
}

/** The uid:gid jobs run as; the image has a `sandbox` user with this id and nothing owned by it. */
const sandboxUser = '10001:10001';
/** Label on every job container, so leftovers can be found and removed. */
export const jobLabel = 'dev.ratchet.job-id';

const imageAdvice = 'build it with deploy/sandbox/build-image.sh (tools/ensure-docker.sh does it when missing)';

/**
 * Runs sandbox jobs in Docker: per job a container of its own with no
 * network, a read-only root filesystem, all capabilities dropped,
 * no-new-privileges, memory (no swap), pids and CPU limits, size- and
 * inode-capped tmpfs /work and /tmp, and an unprivileged user. The
 * container's process, PID 1, is the supervisor (supervisor/supervisor.py):
 * it reaps orphans itself, and as PID 1 it ignores the code's signals (no
 * kill, no stop from inside). It is attached before start: the
 * job goes to its stdin, frames come back on its stdout, so a job costs no
 * exec and, from the warm pool, no container start either. The container is
 * removed afterwards whatever happened, and is never used for a second job.
 */
export class DockerDriver {
  private readonly docker: Docker;
  private readonly image: string;
  private readonly defaults: EffectiveLimits | undefined;
  readonly runnerId: string;
  private readonly runtime: string | undefined;
  private readonly leftoverAgeMs: number;
  private readonly pool: WarmPool<LaunchedSandbox>;
  /** Containers of finished jobs still being removed. */
  private readonly removals = new Set<Promise<unknown>>();
  /** Containers of finished jobs whose housekeeping waits (see housekeepingDelayMs). */
  private readonly settling = new Map<NodeJS.Timeout, Docker.Container>();
  private readonly housekeepingDelayMs: number;
  private leftoversRemoved: Promise<void> | undefined;

  constructor(options: DockerDriverOptions = {}) {
    // Loaded here, not at import: dockerode (with ssh2) is 0.4 s of start-up that a bubblewrap runner never needs.
    const DockerClient = require('dockerode') as typeof Docker;
    this.docker = new DockerClient({ socketPath: options.socketPath ?? '/var/run/docker.sock' });
    this.image = options.image ?? 'ratchet-sandbox:3';
    this.defaults = options.defaults;
    this.runnerId = options.runnerId ?? `docker-${randomUUID().slice(0, 8)}`;
    this.runtime = options.runtime;
    this.leftoverAgeMs = options.leftoverAgeMs ?? 60_000;
    this.housekeepingDelayMs = Math.max(0, options.housekeepingDelayMs ?? 300);
    const defaults = this.defaults;
    const idleMs = options.warmIdleMs ?? 300_000;
    this.pool = new WarmPool({
      size: defaults === undefined ? 0 : Math.max(0, options.warmPool ?? 0),
      idleMs,
      launch: () => this.launch(this.image, defaults as EffectiveLimits, `pool-${this.runnerId}`, idleMs),
      discard: (sandbox) => this.discard(sandbox),
    });
  }

  /** Idle containers ready in the warm pool now. */
  get warmContainers(): number {
    return this.pool.size;
  }

  /** The same, under the name every driver shares (see Sandbox). */
  get warmPoolSize(): number {
    return this.pool.size;
  }

  /**
   * What identifies the image a job runs on, for the dependency layer's key:
   * the engine's image id (a rebuilt image under the same tag is another
   * image), or the reference when the engine does not know it.
   */
  async imageIdentity(image?: string): Promise<string> {
    const reference = image || this.image;
    const found = await this.docker
      .getImage(reference)
      .inspect()
      .catch(() => undefined);
    return found?.Id ?? reference;
  }

  /**
   * Fills the warm pool (if any) and resolves once it is full (or a container
   * could not be made) and the containers of finished jobs are removed.
   */
  async warm(): Promise<void> {
    this.settleNow({ refill: true });
    await (this.leftoversRemoved ??= this.removeLeftovers());
    await this.pool.fill();
    await Promise.all([...this.removals]);
  }

  /** Removes the idle pooled containers and those of finished jobs, and stops refilling. */
  async close(): Promise<void> {
    this.settleNow({ refill: false });
    await this.pool.close();
    await Promise.all([...this.removals]);
  }

  /**
   * Checks that the engine answers and the default image exists; says so,
   * with the runtime and the number of warm containers.
   *
   * @throws AppError UNAVAILABLE (retryable) when Docker is unreachable;
   *   FAILED_PRECONDITION when the image is missing.
   */
  async ping(): Promise<string> {
    try {
      await this.docker.ping();
    } catch (error) {
      throw unreachable(error);
    }
    await this.checkImage(this.image);
    return `engine up, image ${this.image} present${this.runtime === undefined ? '' : `, runtime ${this.runtime}`}, ${this.pool.size} warm`;
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
  async run(job: SandboxJob, signal?: AbortSignal, options?: SandboxRunOptions): Promise<SandboxJobResult> {
    const takenAtNs = process.hrtime.bigint();
    const limits = effectiveLimits(job.limits, this.defaults);
    validateJob(job, limits);
    const image = job.image || this.image;
    const startedAt = new Date();
    const started = performance.now();
    const input = jobInput(job, limits, { ...(options?.relay === undefined ? {} : { relay: options.relay }), ...(options?.exportDirectory === undefined ? {} : { exportDirectory: options.exportDirectory }) });
    const pooled = needsOwnSandbox(options) ? undefined : this.take(image, limits);
    pooled?.session.capOutput(limits.outputLimitBytes);
    const sandbox = pooled ?? (await this.launch(image, limits, job.jobId, 0, options?.mounts ?? []));
    if (options?.onExport !== undefined) sandbox.session.onExport(options.onExport);
    try {
      const { killedAtDeadline } = await superviseJob(sandbox, {
        jobId: job.jobId,
        timeoutMs: limits.timeoutMs,
        signal,
        send: () => sandbox.stream.write(input),
        kill: () => sandbox.container.kill().catch(() => undefined),
      });
      const hostOomKilled = sandbox.session.done === undefined ? (await sandbox.container.inspect().catch(() => undefined))?.State.OOMKilled === true : false;
      return await resultOf(job, limits, sandbox.session, {
        driver: SandboxDriver.SANDBOX_DRIVER_DOCKER,
        runnerId: this.runnerId,
        startedAt,
        takenAtNs,
        wallMs: performance.now() - started,
        killedAtDeadline,
        hostOomKilled,
      });
    } finally {
      sandbox.stream.destroy();
      // The result waits for neither the removal nor the refill; warm() and close() do them at once.
      this.afterJob(sandbox.container);
    }
  }

  /**
   * Starts a session: a container like a job's (from the warm pool when the
   * image and limits match) whose supervisor took the files and now serves
   * requests. It ends when `end()` is called, or on its own after
   * `idleSeconds` without a request.
   *
   * @throws AppError as `run`; INTERNAL when the files could not be written.
   */
  async openSession(launch: SessionLaunch): Promise<SessionSandbox> {
    const image = launch.image || this.image;
    const sandbox = this.take(image, launch.limits) ?? (await this.launch(image, launch.limits, `session-${launch.sessionId}`, 0));
    const release = async () => {
      sandbox.stream.destroy();
      this.removeLater(sandbox.container);
      this.pool.replenish();
      await Promise.all([...this.removals]);
    };
    const input = sessionInput(launch.files, launch.env, launch.limits, launch.idleSeconds);
    return startSession({ session: sandbox.session, closed: sandbox.closed, write: (data) => sandbox.stream.write(data), release }, launch.sessionId, launch.limits.outputLimitBytes, input, SandboxDriver.SANDBOX_DRIVER_DOCKER);
  }

  /**
   * Removes job containers that stopped, or were created and never started,
   * over a minute ago: what runners that died (SIGKILL) left. Containers are not AutoRemove'd, because the runner
   * reads a stopped container's OOMKilled flag after its supervisor died.
   */
  private async removeLeftovers(): Promise<void> {
    const stopped = await this.docker.listContainers({ all: true, filters: { label: [jobLabel], status: ['created', 'exited', 'dead'] } }).catch(() => []);
    await Promise.all(
      stopped.map(async ({ Id, State, Created }) => {
        const container = this.docker.getContainer(Id);
        // Never started (its runner died between create and start): its age counts from creation.
        const since = State === 'created' ? Created * 1000 : Date.parse((await container.inspect().catch(() => undefined))?.State.FinishedAt ?? '');
        if (Number.isFinite(since) && Date.now() - since > this.leftoverAgeMs) await container.remove({ force: true }).catch(() => undefined);
      }),
    );
  }

  /** A pooled sandbox for a job with the pool's image and limits, or undefined. */
  private take(image: string, limits: EffectiveLimits): LaunchedSandbox | undefined {
    if (this.defaults === undefined || image !== this.image || !samePoolLimits(limits, this.defaults)) return undefined;
    return this.pool.take();
  }

  private discard(sandbox: LaunchedSandbox): void {
    sandbox.stream.destroy();
    this.removeLater(sandbox.container);
  }

  private afterJob(container: Docker.Container): void {
    const settle = () => {
      this.removeLater(container);
      this.pool.replenish();
    };
    if (this.housekeepingDelayMs === 0) return settle();
    const timer = setTimeout(() => {
      this.settling.delete(timer);
      settle();
    }, this.housekeepingDelayMs);
    this.settling.set(timer, container);
  }

  /** Removes the containers whose housekeeping waits, and refills the pool if asked (not when closing). */
  private settleNow(options: { refill: boolean }): void {
    const pending = [...this.settling];
    this.settling.clear();
    for (const [timer, container] of pending) {
      clearTimeout(timer);
      this.removeLater(container);
    }
    if (options.refill && pending.length > 0) this.pool.replenish();
  }

  private removeLater(container: Docker.Container): void {
    const removal = container
      .remove({ force: true })
      .catch(() => undefined)
      .finally(() => this.removals.delete(removal));
    this.removals.add(removal);
  }

  /**
   * A started container running the supervisor, attached (before start, so
   * no frame is lost). Its life is bounded even if this runner dies: the
   * supervisor exits when no job arrives within `waitMs` plus a minute, or at
   * the job's timeout. A container left behind by a runner that died is
   * removed by the next runner's warm().
   */
  private async launch(image: string, limits: EffectiveLimits, label: string, waitMs: number, mounts: readonly ReadOnlyMount[] = []): Promise<LaunchedSandbox> {
    const container = await this.create(image, limits, label, Math.ceil(waitMs / 1000) + 60, mounts);
    try {
      const stream = (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex;
      const session = new SupervisorSession(limits.outputLimitBytes);
      const out = new PassThrough();
      const err = new PassThrough();
      out.on('data', (chunk: Buffer) => session.accept(chunk));
      err.on('data', (chunk: Buffer) => session.acceptDiagnostics(chunk));
      this.docker.modem.demuxStream(stream, out, err);
      const sandbox: LaunchedSandbox = { container, stream, session, ended: false, closed: ended(stream) };
      void sandbox.closed.then(() => {
        sandbox.ended = true;
      });
      await container.start();
      return sandbox;
    } catch (error) {
      await container.remove({ force: true }).catch(() => undefined);
      throw statusOf(error) === undefined ? unreachable(error) : new AppError(ErrorCode.INTERNAL, `Docker could not start the sandbox container: ${(error as Error).message}`, { cause: error });
    }
  }

  private async create(image: string, limits: EffectiveLimits, label: string, idleSeconds: number, mounts: readonly ReadOnlyMount[]): Promise<Docker.Container> {
    try {
      return await this.docker.createContainer({
        Image: image,
        Cmd: supervisorArgv(idleSeconds),
        User: sandboxUser,
        WorkingDir: workDirectory,
        NetworkDisabled: true,
        OpenStdin: true,
        StdinOnce: true,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        Labels: { [jobLabel]: label },
        HostConfig: {
          NetworkMode: 'none',
          ReadonlyRootfs: true,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          Memory: limits.memoryBytes,
          MemorySwap: limits.memoryBytes,
          PidsLimit: limits.pids,
          NanoCpus: Math.round(limits.cpus * 1e9),
          ...(this.runtime === undefined ? {} : { Runtime: this.runtime }),
          // Host paths as the engine sees them: a runner in a container uses the same paths inside and out (deploy/README.md).
          ...(mounts.length === 0 ? {} : { Mounts: mounts.map((mount) => ({ Type: 'bind' as const, Source: mount.source, Target: mount.target, ReadOnly: true, BindOptions: { Propagation: 'rprivate' as const } })) }),
          Tmpfs: {
            // nr_inodes: a million empty files would cost kernel memory, not tmpfs space.
            [workDirectory]: `rw,exec,nosuid,nodev,size=${limits.workDirBytes},nr_inodes=${tmpfsInodes(limits.workDirBytes)},uid=10001,gid=10001,mode=0700`,
            '/tmp': `rw,exec,nosuid,nodev,size=67108864,nr_inodes=${tmpfsInodes(67108864)},uid=10001,gid=10001,mode=1777`,
          },
        },
      });
    } catch (error) {
      if (statusOf(error) === 404) throw new AppError(ErrorCode.FAILED_PRECONDITION, `the sandbox image ${image} is missing; ${imageAdvice}`, { cause: error });
      if (statusOf(error) === undefined) throw unreachable(error);
      if (mounts.length > 0 && /bind source path does not exist/.test((error as Error).message)) {
        throw new AppError(
          ErrorCode.FAILED_PRECONDITION,
          `Docker cannot bind ${mounts.map((mount) => mount.source).join(', ')} into the sandbox: the engine's host has no such path (${(error as Error).message}); a runner in a container must see the dependency cache at the same path as the host (deploy/README.md)`,
          { cause: error },
        );
      }
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

function statusOf(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && 'statusCode' in error && typeof (error as { statusCode: unknown }).statusCode === 'number' ? (error as { statusCode: number }).statusCode : undefined;
}

function unreachable(error: unknown): AppError {
  return new AppError(ErrorCode.UNAVAILABLE, `the Docker engine is not reachable (${error instanceof Error ? error.message : String(error)}); start it (tools/ensure-docker.sh on Debian) or set sandbox.dockerSocket`, {
    cause: error,
    retryable: true,
  });
}
