import { sandboxConfigSection, sandboxLimitsOf, type SandboxSettings } from '@ratchet/agent';
import { instanceToken, type CallContext, type ServiceImplementation } from '@ratchet/bus';
import { SandboxDriver, type SandboxJob, type SandboxJobResult, type SandboxLimits, type SandboxRunnerServiceDefinition } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { DependencyCheck } from '@ratchet/runtime';
import { BubblewrapDriver, type SandboxLogger } from './adapters/bubblewrap-driver';
import { DependencySandbox, type DependencyOptions } from './adapters/dependency-sandbox';
import { DockerDriver } from './adapters/docker-driver';
import { defaultLayerCache } from './adapters/layer-cache';
import { observeJob } from './adapters/metrics';
import { SessionManager } from './adapters/session-manager';
import type { SessionLaunch, SessionSandbox } from './adapters/session-sandbox';
import { defaultLimits, effectiveLimits, type EffectiveLimits } from './domain/job-limits';

export { BubblewrapDriver, defaultRootfs } from './adapters/bubblewrap-driver';
export type { BubblewrapDriverOptions, SandboxLogger } from './adapters/bubblewrap-driver';
export { DockerDriver, jobLabel } from './adapters/docker-driver';
export { SessionManager } from './adapters/session-manager';
export type { SessionDriver, SessionManagerOptions } from './adapters/session-manager';
export type { DockerDriverOptions } from './adapters/docker-driver';
export { DependencySandbox } from './adapters/dependency-sandbox';
export type { DependencyLogger, DependencyOptions, LayeredDriver } from './adapters/dependency-sandbox';
export { defaultLayerCache, LayerCache } from './adapters/layer-cache';
export { RegistryProxy } from './adapters/registry-proxy';
export type { ReadOnlyMount, SandboxRunOptions } from './adapters/supervised-job';
export { layerKey, requirementLines } from './domain/dependencies';
export { stripControlSequences } from './domain/terminal-text';
export { CappedBuffer } from './domain/capped-buffer';
export { defaultLimits, effectiveLimits, maximumLimits, validateJob } from './domain/job-limits';
export type { EffectiveLimits } from './domain/job-limits';
export { parseJUnit } from './domain/junit';
export { countJobTaken, jobOutcome, reportRunner } from './adapters/metrics';

/** What the runner needs of a driver; DockerDriver and BubblewrapDriver both are one. */
export interface Sandbox {
  readonly runnerId: string;
  run(job: SandboxJob, signal?: AbortSignal): Promise<SandboxJobResult>;
  openSession(launch: SessionLaunch): Promise<SessionSandbox>;
  /** Resolves, with what it checked, when the driver can run jobs; throws AppError saying what to fix. */
  ping(): Promise<string>;
  warm(): Promise<void>;
  /** Sandboxes started ahead and waiting for a job now. */
  readonly warmPoolSize: number;
  close(): Promise<void>;
}

export type DriverName = 'docker' | 'bwrap';

export interface SandboxRunnerOptions {
  /** Default docker. */
  readonly driver?: DriverName;
  /** bwrap: the root filesystem (default defaultRootfs()). */
  readonly rootfs?: string;
  /** docker: OCI runtime, for example runsc. */
  readonly runtime?: string;
  /** Image for jobs that name none. Default ratchet-sandbox:3. */
  readonly image?: string;
  /** Docker engine socket. Default /var/run/docker.sock. */
  readonly socketPath?: string;
  /** Limits for values a job leaves unset. */
  readonly defaultLimits?: SandboxLimits;
  /** Names this runner in results (`runner_id`). Default: docker- and a random suffix. */
  readonly runnerId?: string;
  /** Warm pool size and idle time (see DockerDriverOptions). Default none. */
  readonly warmPool?: number;
  readonly warmIdleMs?: number;
  /** Told what the bwrap driver changed on the host (see BubblewrapDriverOptions.logger), and of a session left without git history. */
  readonly logger?: SandboxLogger;
  /** Sessions idle this long are closed, ms. Default 600000. */
  readonly sessionIdleMs?: number;
  /** Sessions held at once. Default 16. */
  readonly maxSessions?: number;
  /** Installing jobs' dependencies (`sandbox.dependencies`); cacheDirectory defaults to defaultLayerCache(). Default: the section's defaults. */
  readonly dependencies?: Omit<DependencyOptions, 'cacheDirectory'> & { readonly cacheDirectory?: string };
}

type Implementation = Required<Omit<ServiceImplementation<typeof SandboxRunnerServiceDefinition>, 'health'>>;

export interface SandboxRunnerService {
  readonly implementation: Implementation;
  /**
   * This runner's subject token: session calls must be sent to it (a client
   * created with `{ instance }`), as OpenSessionResponse.runner_id says.
   */
  readonly instance: string;
  readonly sessions: SessionManager;
  /** For Health: the engine answers and the image exists. */
  readonly checks: DependencyCheck[];
  readonly driver: Sandbox;
  close(): Promise<void>;
}

/** Runner options from a config file's `sandbox` section. */
export function sandboxRunnerOptionsOf(settings: SandboxSettings, runnerId?: string): SandboxRunnerOptions {
  return {
    driver: settings.driver,
    ...(settings.rootfs === undefined ? {} : { rootfs: settings.rootfs }),
    ...(settings.runtime === undefined ? {} : { runtime: settings.runtime }),
    ...(runnerId === undefined ? {} : { runnerId }),
    image: settings.image,
    socketPath: settings.dockerSocket,
    defaultLimits: sandboxLimitsOf(settings),
    warmPool: settings.warmPool,
    warmIdleMs: settings.warmIdleSeconds * 1000,
    sessionIdleMs: settings.sessionIdleSeconds * 1000,
    maxSessions: settings.maxSessions,
    dependencies: settings.dependencies,
  };
}

/**
 * The driver `options` name, configured, that also installs jobs'
 * dependencies (DependencySandbox); nothing is checked yet.
 */
export function createDriver(options: SandboxRunnerOptions = {}): Sandbox {
  const defaults = effectiveLimits(options.defaultLimits, defaultLimits);
  const dependencies = options.dependencies ?? sandboxConfigSection.parse({}).dependencies;
  const layered = {
    ...dependencies,
    cacheDirectory: dependencies.cacheDirectory ?? defaultLayerCache(),
  };
  const driverKind = options.driver === 'bwrap' ? SandboxDriver.SANDBOX_DRIVER_BUBBLEWRAP : SandboxDriver.SANDBOX_DRIVER_DOCKER;
  return new DependencySandbox(bareDriver(options, defaults), layered, { defaults, driverKind, ...(options.logger === undefined ? {} : { logger: options.logger }) });
}

/** The driver `options` name, without the dependency step. */
function bareDriver(options: SandboxRunnerOptions, defaults: EffectiveLimits): DockerDriver | BubblewrapDriver {
  if (options.driver === 'bwrap') {
    return new BubblewrapDriver({
      ...(options.rootfs === undefined ? {} : { rootfs: options.rootfs }),
      ...(options.image === undefined ? {} : { image: options.image }),
      ...(options.runnerId === undefined ? {} : { runnerId: options.runnerId }),
      ...(options.warmPool === undefined ? {} : { warmPool: options.warmPool }),
      ...(options.warmIdleMs === undefined ? {} : { warmIdleMs: options.warmIdleMs }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      defaults,
    });
  }
  return new DockerDriver({
    ...(options.image === undefined ? {} : { image: options.image }),
    ...(options.socketPath === undefined ? {} : { socketPath: options.socketPath }),
    ...(options.runnerId === undefined ? {} : { runnerId: options.runnerId }),
    ...(options.warmPool === undefined ? {} : { warmPool: options.warmPool }),
    ...(options.warmIdleMs === undefined ? {} : { warmIdleMs: options.warmIdleMs }),
    ...(options.runtime === undefined ? {} : { runtime: options.runtime }),
    defaults,
  });
}

/**
 * The sandbox runner's RPCs on the Docker driver, ready for `hostService`.
 * Nothing is checked at creation, so the service starts (and reports
 * not-ready on Health) while Docker is down.
 */
export function createSandboxRunnerService(options: SandboxRunnerOptions = {}): SandboxRunnerService {
  const driver = createDriver(options);
  const name = options.driver ?? 'docker';
  const served = name === 'bwrap' ? SandboxDriver.SANDBOX_DRIVER_BUBBLEWRAP : SandboxDriver.SANDBOX_DRIVER_DOCKER;
  const instance = instanceToken(driver.runnerId);
  const sessions = new SessionManager(driver, instance, {
    defaults: effectiveLimits(options.defaultLimits, defaultLimits),
    ...(options.sessionIdleMs === undefined ? {} : { idleMs: options.sessionIdleMs }),
    ...(options.maxSessions === undefined ? {} : { maxSessions: options.maxSessions }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  return {
    instance,
    sessions,
    implementation: {
      async openSession(request) {
        if (request.driver !== SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED && request.driver !== served) {
          const wanted = request.driver === SandboxDriver.SANDBOX_DRIVER_DOCKER ? 'docker' : 'bwrap';
          throw new AppError(ErrorCode.FAILED_PRECONDITION, `the session asks for the ${wanted} driver and this runner runs ${name}; leave driver unset or send it to a runner with sandbox.driver: ${wanted}`);
        }
        return sessions.open(request);
      },
      sessionExec: (request) => sessions.exec(request),
      sessionReadFiles: (request) => sessions.readFiles(request),
      sessionWriteFiles: (request) => sessions.writeFiles(request),
      sessionListFiles: (request) => sessions.listFiles(request),
      sessionDiff: (request) => sessions.diff(request),
      closeSession: (request) => sessions.close(request),
      async runJob(request, context: CallContext) {
        if (request.job === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'job is missing');
        if (request.job.driver !== SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED && request.job.driver !== served) {
          const wanted = request.job.driver === SandboxDriver.SANDBOX_DRIVER_DOCKER ? 'docker' : 'bwrap';
          throw new AppError(ErrorCode.FAILED_PRECONDITION, `the job asks for the ${wanted} driver and this runner runs ${name}; leave driver unset or send it to a runner with sandbox.driver: ${wanted}`);
        }
        const job = request.job;
        return { result: await observeJob(() => driver.run(job, context.signal)) };
      },
    },
    checks: [
      {
        name: name,
        required: true,
        check: () =>
          driver.ping().then(
            (detail) => ({ ok: true, detail }),
            (error: unknown) => ({ ok: false, detail: AppError.from(error).message }),
          ),
      },
      // Jobs without dependencies run whatever its state: a problem here degrades the runner, no more.
      ...(driver instanceof DependencySandbox ? [{ name: 'dependency-layers', required: false, check: () => driver.cache.check() }] : []),
    ],
    driver,
    close: async () => {
      await sessions.closeAll();
      await driver.close();
    },
  };
}
