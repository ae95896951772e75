import type { SandboxDriver, SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { EffectiveLimits } from '../domain/job-limits';
import type { SessionChannel } from '../domain/session-channel';

/** What a driver needs to start a session's sandbox. */
export interface SessionLaunch {
  readonly sessionId: string;
  readonly files: readonly SourceFile[];
  readonly env: Readonly<Record<string, string>>;
  readonly limits: EffectiveLimits;
  /** Empty: the driver's image. */
  readonly image: string;
  /** The supervisor ends the sandbox when no request comes for this long, s: the bound on a session whose runner died. */
  readonly idleSeconds: number;
}

/** A sandbox whose supervisor serves one session's requests. */
export interface SessionSandbox {
  readonly channel: SessionChannel;
  readonly driver: SandboxDriver;
  /** Resolves when the sandbox is gone, whoever ended it. */
  readonly closed: Promise<void>;
  /** Ends the sandbox and frees what it held (container, cgroup, tmpfs); safe to call twice. */
  end(): Promise<void>;
}

/** The error every call of a session gets once its sandbox is gone without being closed: the caller may start over with a new session. */
export function sandboxGone(sessionId: string): AppError {
  return new AppError(ErrorCode.UNAVAILABLE, `the sandbox of session ${sessionId} is gone (killed, out of memory, or its supervisor ended); open a new session`, { retryable: true });
}

/** The error of calls still waiting when a session is closed. */
export function sessionClosed(sessionId: string): AppError {
  return new AppError(ErrorCode.NOT_FOUND, `session ${sessionId} was closed`);
}
