import { AppError, ErrorCode } from '@ratchet/errors';
import type { SupervisorSession } from '../domain/supervisor-session';

/** A started sandbox (container or bwrap) whose supervisor waits for a job. */
export interface SupervisedSandbox {
  readonly session: SupervisorSession;
  /** Resolves when the sandbox is gone (killed, or its supervisor exited). */
  readonly closed: Promise<void>;
  /** True once `closed` resolved. */
  readonly ended: boolean;
}

/** After its timeout, the supervisor gets this long to end the job before the runner kills the sandbox, ms. */
const backstopGraceMs = 5_000;

export interface SuperviseOptions {
  readonly jobId: string;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  /** Hands the job input to the supervisor. */
  readonly send: () => void;
  /** Ends the sandbox at once. */
  readonly kill: () => unknown;
}

/**
 * Sends the job and waits until the supervisor reports its end or the
 * sandbox is gone. The supervisor enforces the job's timeout itself; a
 * backstop kills the sandbox `backstopGraceMs` later, for a supervisor the
 * code stopped or killed. Aborting `signal` kills it too.
 *
 * @returns whether the backstop ended the job.
 * @throws AppError CANCELLED when `signal` aborted.
 */
export async function superviseJob(sandbox: SupervisedSandbox, options: SuperviseOptions): Promise<{ killedAtDeadline: boolean }> {
  let killedAtDeadline = false;
  const onAbort = () => void options.kill();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const backstop = setTimeout(() => {
    killedAtDeadline = true;
    void options.kill();
  }, options.timeoutMs + backstopGraceMs);
  try {
    options.send();
    await Promise.race([sandbox.session.whenDone(), sandbox.closed]);
    if (options.signal?.aborted === true) throw new AppError(ErrorCode.CANCELLED, `sandbox job ${options.jobId} was cancelled`);
    return { killedAtDeadline };
  } finally {
    clearTimeout(backstop);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/** A host directory bound read-only into a sandbox. */
export interface ReadOnlyMount {
  /** Absolute host path (for Docker, as the engine's host sees it). */
  readonly source: string;
  /** Absolute path inside the sandbox. */
  readonly target: string;
}

/**
 * What the dependency step adds to a run (see DependencySandbox): a job
 * given any of these never runs in a pooled sandbox, which was started
 * without them.
 */
export interface SandboxRunOptions {
  /** Directories bound read-only: the layer at /deps, the proxy's socket directory. */
  readonly mounts?: readonly ReadOnlyMount[];
  /** The supervisor relays 127.0.0.1:port to this socket (a path inside the sandbox). */
  readonly relay?: { readonly port: number; readonly socket: string };
  /** After the commands succeeded, the files under this work directory path come back as a tar, chunk by chunk, to `onExport`. */
  readonly exportDirectory?: string;
  readonly onExport?: (chunk: Buffer) => void;
}

/** Whether `options` asks for anything a pooled sandbox was not started with. */
export function needsOwnSandbox(options: SandboxRunOptions | undefined): boolean {
  return options !== undefined && ((options.mounts?.length ?? 0) > 0 || options.relay !== undefined || options.exportDirectory !== undefined);
}
