import { AppError, ErrorCode } from '@ratchet/errors';
import { rm } from 'node:fs/promises';
import { ManagedProcess, type LaunchOptions, type ProcessExit } from './managed-process';
import { OutputTail } from './output-tail';
import { removeOnExit } from './process-cleanup';
import { waitFor } from './wait-for';

/** What a test does with a server a fixture runs for it (nats-server, Postgres): crash it, bring it back, read it, end it. */
export interface ServerControls {
  /** The server's pid while it runs; undefined after kill() or stop(). */
  readonly pid: number | undefined;
  /** Graceful shutdown (the server's own signal, SIGKILL after `stopTimeoutMs`), then removes its directories. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL, to simulate a crash. The port refuses connections until restart(). */
  kill(): Promise<void>;
  /**
   * Starts the server again on the same port(s) and directory, so what it
   * stored survives (after crash recovery if it was killed); stops it
   * gracefully first if it runs.
   * @throws AppError FAILED_PRECONDITION after stop(); as the fixture's start otherwise.
   */
  restart(): Promise<void>;
  /** The last ~200 lines the server wrote. */
  output(): string;
}

export interface SupervisorOptions {
  /** Binary name for messages, e.g. "nats-server". */
  readonly name: string;
  /** Runs once before the first launch, e.g. initdb. */
  readonly prepare?: () => Promise<void>;
  /** How to spawn one run; called again by restart(). */
  readonly launchOptions: () => Omit<LaunchOptions, 'output'>;
  /** Resolves truthy once the server serves; may throw while it starts. */
  readonly isReady: () => Promise<boolean>;
  readonly startTimeoutMs: number;
  /** The signal for a graceful shutdown. */
  readonly stopSignal: NodeJS.Signals;
  /** How long a graceful shutdown may take before SIGKILL. */
  readonly stopTimeoutMs: number;
  /** Temporary directories, removed by stop(). */
  readonly directories: readonly string[];
}

function describeExit(exit: ProcessExit): string {
  if (exit.error !== undefined) return `could not be started: ${exit.error.message}`;
  return exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
}

/**
 * The lifecycle both fixtures share: start and wait until ready, stop
 * gracefully (idempotent, removes the temp dirs), kill (crash), restart with
 * the same arguments. Operations run one at a time, in call order.
 */
export class ServerSupervisor {
  #process: ManagedProcess | undefined;
  #stopped = false;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #output = new OutputTail();
  readonly #forgetDirectories: Array<() => void>;

  constructor(private readonly options: SupervisorOptions) {
    this.#forgetDirectories = options.directories.map((directory) => removeOnExit(directory));
  }

  /** The running server's pid; undefined after kill() or stop(). */
  get pid(): number | undefined {
    const current = this.#process;
    return current !== undefined && !current.hasExited ? current.pid : undefined;
  }

  /** The last lines the server wrote (both runs, if restarted). */
  output(): string {
    return this.#output.text();
  }

  start(): Promise<void> {
    return this.#serialize(async () => {
      try {
        await this.options.prepare?.();
        await this.#launch();
      } catch (error) {
        await this.#cleanUp();
        throw error;
      }
    });
  }

  stop(): Promise<void> {
    return this.#serialize(async () => {
      if (this.#stopped) return;
      this.#stopped = true;
      await this.#process?.terminate(this.options.stopSignal, this.options.stopTimeoutMs);
      await this.#cleanUp();
    });
  }

  kill(): Promise<void> {
    return this.#serialize(async () => {
      await this.#process?.kill();
    });
  }

  restart(): Promise<void> {
    return this.#serialize(async () => {
      if (this.#stopped) {
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `${this.options.name} fixture was stopped and its data removed: start a new one`);
      }
      await this.#process?.terminate(this.options.stopSignal, this.options.stopTimeoutMs);
      this.#output.note(`restart of ${this.options.name}`);
      await this.#launch();
    });
  }

  #serialize<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(operation);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  async #cleanUp(): Promise<void> {
    this.#stopped = true;
    await this.#process?.kill();
    await Promise.all(this.options.directories.map((directory) => rm(directory, { recursive: true, force: true, maxRetries: 5 })));
    for (const forget of this.#forgetDirectories) forget();
  }

  async #launch(): Promise<void> {
    const { name, startTimeoutMs } = this.options;
    const output = this.#output;
    const withOutput = (message: string): string => `${message}\n--- last output of ${name} ---\n${output.text()}`;

    let started: ManagedProcess;
    try {
      started = await ManagedProcess.launch({ ...this.options.launchOptions(), output });
    } catch (error) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `${name} could not be started: ${(error as Error).message}`, { cause: error });
    }
    this.#process = started;

    const died = new AbortController();
    void started.exited.then((exit) =>
      died.abort(new AppError(ErrorCode.UNAVAILABLE, withOutput(`${name} ${describeExit(exit)} before it was ready`), { retryable: false })),
    );
    try {
      await waitFor(() => this.options.isReady(), {
        timeoutMs: startTimeoutMs,
        intervalMs: 50,
        message: `${name} to accept connections`,
        signal: died.signal,
      });
    } catch (error) {
      // Read before kill(): killing aborts the signal too.
      const diedBeforeReady = died.signal.aborted;
      await started.kill();
      if (diedBeforeReady) throw died.signal.reason;
      throw new AppError(ErrorCode.DEADLINE_EXCEEDED, withOutput((error as Error).message), { cause: error });
    }
  }
}

/** `fields` with the controls of the server `supervisor` runs (its pid read when asked), as a fixture hands them to a test. */
export function withControls<T extends object>(supervisor: ServerSupervisor, fields: T): T & ServerControls {
  const controls = { ...fields, stop: () => supervisor.stop(), kill: () => supervisor.kill(), restart: () => supervisor.restart(), output: () => supervisor.output() };
  return Object.defineProperty(controls, 'pid', { get: () => supervisor.pid, enumerable: true }) as T & ServerControls;
}
