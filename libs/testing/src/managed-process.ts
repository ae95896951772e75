import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { parentDeathPrefix } from './binaries';
import { OutputTail } from './output-tail';
import { killOnExit } from './process-cleanup';

export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (e.g. EACCES). */
  readonly error?: Error;
}

export interface LaunchOptions {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Run as this uid/gid (only possible as root). */
  readonly uid?: number;
  readonly gid?: number;
  /** Where stdout and stderr lines go. */
  readonly output: OutputTail;
}

/**
 * One run of a server binary. The child is unref'd so a fixture someone forgot
 * to stop does not keep the test process alive; the exit registry and the
 * parent-death signal kill it instead.
 */
export class ManagedProcess {
  readonly pid: number;
  /** Settles when the process has exited; never rejects. */
  readonly exited: Promise<ProcessExit>;
  #exit: ProcessExit | undefined;

  private constructor(
    private readonly child: ChildProcess,
    pid: number,
    exited: Promise<ProcessExit>,
  ) {
    this.pid = pid;
    this.exited = exited.then((exit) => (this.#exit = exit));
  }

  /** Starts `options.command`; rejects when it cannot be spawned. */
  static async launch(options: LaunchOptions): Promise<ManagedProcess> {
    const [command, ...args] = [...parentDeathPrefix(), options.command, ...options.args] as [string, ...string[]];
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so kill() takes the children too (postgres
      // backends), as a crashed container would.
      detached: true,
      ...(options.uid === undefined ? {} : { uid: options.uid }),
      ...(options.gid === undefined ? {} : { gid: options.gid }),
    });
    const { output } = options;
    for (const [name, stream] of [['stdout', child.stdout], ['stderr', child.stderr]] as const) {
      stream?.on('data', (chunk: Buffer) => output.append(name, chunk));
      (stream as (Readable & { unref?: () => void }) | null)?.unref?.();
    }

    const exited = new Promise<ProcessExit>((resolve) => {
      child.on('error', (error) => {
        // 'error' without 'exit' means spawn failed; after a successful spawn
        // 'exit' follows and resolves first.
        if (child.pid === undefined) resolve({ code: null, signal: null, error });
      });
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });

    const pid = child.pid;
    if (pid === undefined) {
      const exit = await exited;
      throw exit.error ?? new Error(`${options.command} could not be started`);
    }
    // 'exit' is emitted on a later tick, so the pid cannot be stale here.
    const forgetPid = killOnExit(pid);
    child.unref();
    return new ManagedProcess(child, pid, exited.finally(forgetPid));
  }

  get hasExited(): boolean {
    return this.#exit !== undefined;
  }

  /**
   * Sends `signal`, waits up to `timeoutMs` for the exit, then SIGKILLs.
   * Resolves once the process is gone.
   */
  async terminate(signal: NodeJS.Signals, timeoutMs: number): Promise<ProcessExit> {
    if (this.#exit !== undefined) return this.#exit;
    this.child.ref(); // keep the event loop alive until the exit is seen
    this.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      const first = await Promise.race([this.exited, timedOut]);
      if (first !== 'timeout') return first;
    } finally {
      clearTimeout(timer);
    }
    return this.kill();
  }

  /**
   * SIGKILLs the process and its group, and resolves once they are gone:
   * the process's exit, then the rest of its group (a killed postmaster's
   * backends hold its shared memory until they are, and a restart in the
   * same directory would be refused).
   */
  async kill(): Promise<ProcessExit> {
    if (this.#exit !== undefined) return this.#exit;
    this.child.ref(); // keep the event loop alive until the exit is seen
    let group = true;
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      group = false;
      this.child.kill('SIGKILL');
    }
    const exit = await this.exited;
    if (group) await groupGone(this.pid, groupExitTimeoutMs);
    return exit;
  }
}

/** How long kill() waits for the rest of a killed process group, ms. */
const groupExitTimeoutMs = 5_000;

/** Waits until no process is left in group `pgid`, or `timeoutMs` passes. */
async function groupGone(pgid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return; // ESRCH: the group is empty
    }
    await delay(10);
  }
}
