import { ManagedProcess } from './managed-process';
import type { ProcessExit } from './managed-process';
import { OutputTail } from './output-tail';
import { waitFor } from './wait-for';

export interface NodeProcessOptions {
  /** The script to run, e.g. a service's `dist/main.js`. */
  readonly script: string;
  readonly args?: readonly string[];
  /** Flags for node itself, e.g. `['--require', '@ratchet/telemetry/register']`. */
  readonly nodeArgs?: readonly string[];
  /** Added to (not replacing) the test process's environment; `undefined` removes a variable. */
  readonly env?: Record<string, string | undefined>;
  readonly cwd?: string;
}

export interface NodeProcessFixture {
  readonly pid: number;
  /** Settles when the process has exited; never rejects. */
  readonly exited: Promise<ProcessExit>;
  /** The last 500 lines of stdout and stderr. */
  output(): string;
  /**
   * Resolves with the first output line matching `pattern`.
   * @throws Error naming the pattern, with the output so far, after `timeoutMs` (default 10 000) or when the process exits first.
   */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends `signal`, waits up to `timeoutMs`, then SIGKILLs. */
  terminate(signal: NodeJS.Signals, timeoutMs: number): Promise<ProcessExit>;
  kill(): Promise<ProcessExit>;
}

/**
 * Runs a Node script as a real child process with the same Node binary as the
 * tests, for tests of process entry points (config, signals, exit codes). The
 * child is killed if the test process exits first.
 */
export async function startNodeProcess(options: NodeProcessOptions): Promise<NodeProcessFixture> {
  const output = new OutputTail(500);
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [key, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  const child = await ManagedProcess.launch({
    command: process.execPath,
    args: [...(options.nodeArgs ?? []), options.script, ...(options.args ?? [])],
    cwd: options.cwd,
    env,
    output,
  });
  return {
    pid: child.pid,
    exited: child.exited,
    output: () => output.text(),
    waitForLine: async (pattern, timeoutMs = 10_000) => {
      const find = () => output.text().split('\n').find((candidate) => pattern.test(candidate));
      const stopWaiting = new AbortController();
      // An exit ends the wait at once instead of at the timeout.
      const exitedFirst = child.exited.then(() => {
        const line = find();
        if (line !== undefined) return line;
        throw new Error(`process exited before printing ${pattern}; output:\n${output.text()}`);
      });
      try {
        return await Promise.race([
          waitFor(find, { timeoutMs, intervalMs: 25, signal: stopWaiting.signal, message: `an output line matching ${pattern}` }).catch((error: unknown) => {
            throw new Error(`${(error as Error).message}; output so far:\n${output.text()}`, { cause: error });
          }),
          exitedFirst,
        ]);
      } finally {
        stopWaiting.abort();
        exitedFirst.catch(() => undefined);
      }
    },
    terminate: (signal, timeoutMs) => child.terminate(signal, timeoutMs),
    kill: () => child.kill(),
  };
}
