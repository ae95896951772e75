import type { SandboxDriver } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { EffectiveLimits } from '../domain/job-limits';
import { SessionChannel } from '../domain/session-channel';
import type { SupervisorSession } from '../domain/supervisor-session';
import type { WorkFile } from '../domain/work-files';

/** What a driver needs to start a session's sandbox. */
export interface SessionLaunch {
  readonly sessionId: string;
  /** Text and data files, written into the work directory before the session starts. */
  readonly files: readonly WorkFile[];
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

/** A started sandbox whose supervisor waits for its first input, as both drivers launch them. */
export interface WaitingSandbox {
  readonly session: SupervisorSession;
  readonly closed: Promise<void>;
  /** Bytes to the supervisor's stdin. */
  write(data: Buffer): void;
  /** Ends the sandbox and frees what it held. */
  release(): Promise<void>;
}

/**
 * Turns a waiting sandbox into a session: its supervisor's output goes to a
 * channel from now on, the session's input (spec and files) is sent, and
 * the session is returned once the supervisor took the files. A sandbox
 * that dies fails every call with `sandboxGone`; `end()` releases it once.
 *
 * @throws what the supervisor reported when it could not take the files (the sandbox is released).
 */
export async function startSession(sandbox: WaitingSandbox, sessionId: string, outputLimitBytes: number, input: Buffer, driver: SandboxDriver): Promise<SessionSandbox> {
  const channel = new SessionChannel((data) => sandbox.write(data), outputLimitBytes);
  sandbox.session.divert((chunk) => channel.accept(chunk));
  void sandbox.closed.then(() => channel.fail(sandboxGone(sessionId)));
  let ending: Promise<void> | undefined;
  const end = () =>
    (ending ??= (async () => {
      channel.fail(sessionClosed(sessionId));
      await sandbox.release();
    })());
  sandbox.write(input);
  try {
    await channel.opened;
  } catch (error) {
    await end();
    throw error;
  }
  return { channel, driver, closed: sandbox.closed, end };
}
