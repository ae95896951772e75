import type { CallContext } from '@ratchet/bus';
import type { RunJobRequest, RunJobResponse, SandboxLimits } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { DependencyCheck } from '@ratchet/runtime';
import { DockerDriver } from './adapters/docker-driver';
import { defaultLimits, effectiveLimits } from './domain/job-limits';

export { DockerDriver, jobLabel } from './adapters/docker-driver';
export type { DockerDriverOptions } from './adapters/docker-driver';
export { CappedBuffer } from './domain/capped-buffer';
export { defaultLimits, effectiveLimits, maximumLimits, validateJob } from './domain/job-limits';
export type { EffectiveLimits } from './domain/job-limits';
export { parseJUnit } from './domain/junit';

export interface SandboxRunnerOptions {
  /** Image for jobs that name none. Default ratchet-sandbox:1. */
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
}

export interface SandboxRunnerService {
  readonly implementation: { runJob(request: RunJobRequest, context: CallContext): Promise<RunJobResponse> };
  /** For Health: the engine answers and the image exists. */
  readonly checks: DependencyCheck[];
  readonly driver: DockerDriver;
  close(): Promise<void>;
}

/**
 * The sandbox runner's RPCs on the Docker driver, ready for `hostService`.
 * Nothing is checked at creation, so the service starts (and reports
 * not-ready on Health) while Docker is down.
 */
export function createSandboxRunnerService(options: SandboxRunnerOptions = {}): SandboxRunnerService {
  const driver = new DockerDriver({
    ...(options.image === undefined ? {} : { image: options.image }),
    ...(options.socketPath === undefined ? {} : { socketPath: options.socketPath }),
    ...(options.runnerId === undefined ? {} : { runnerId: options.runnerId }),
    ...(options.warmPool === undefined ? {} : { warmPool: options.warmPool }),
    ...(options.warmIdleMs === undefined ? {} : { warmIdleMs: options.warmIdleMs }),
    defaults: effectiveLimits(options.defaultLimits, defaultLimits),
  });
  return {
    implementation: {
      async runJob(request, context) {
        if (request.job === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'job is missing');
        return { result: await driver.run(request.job, context.signal) };
      },
    },
    checks: [
      {
        name: 'docker',
        required: true,
        check: () =>
          driver.ping().then(
            () => ({ ok: true, detail: 'engine up, image present' }),
            (error: unknown) => ({ ok: false, detail: AppError.from(error).message }),
          ),
      },
    ],
    driver,
    close: () => driver.close(),
  };
}
