import { AppError, ErrorCode } from './app-error';
import { backoffDelay, sleepUnlessAborted } from './backoff';

export interface RetryUntilOpenOptions {
  /** Aborting stops the waiting at once; the call then rejects with CANCELLED. */
  readonly signal: AbortSignal;
  /** What is being reached, for the CANCELLED message: "Postgres", "NATS at nats://...". */
  readonly what: string;
  /** Whether a failure is worth another attempt; the others are thrown as they are. */
  readonly shouldRetry: (error: AppError) => boolean;
  /** First wait, ms; doubles after every failed attempt up to `maxDelayMs`. */
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** Told of each failed attempt that will be retried, with the wait before the next. */
  readonly onAttemptFailed?: ((error: AppError, attempt: number, retryInMs: number) => void) | undefined;
}

/**
 * Calls `open` until it resolves: the way a service reaches a server that may
 * come up after it (as pods often do). Waits with exponential backoff between
 * attempts, for as long as it takes, and removes its abort listener after
 * every wait, so a long outage does not pile listeners on the signal.
 * @throws AppError CANCELLED when `signal` aborts first; any error
 *   `shouldRetry` refuses, as AppError.
 */
export async function retryUntilOpen<T>(open: () => Promise<T>, options: RetryUntilOpenOptions): Promise<T> {
  const { signal } = options;
  const cancelled = () => new AppError(ErrorCode.CANCELLED, `stopped before ${options.what} answered`);
  for (let attempt = 1; ; attempt += 1) {
    if (signal.aborted) throw cancelled();
    try {
      return await open();
    } catch (error) {
      const appError = AppError.from(error);
      if (!options.shouldRetry(appError)) throw appError;
      const retryInMs = backoffDelay(attempt, options.initialDelayMs, options.maxDelayMs);
      options.onAttemptFailed?.(appError, attempt, retryInMs);
      await sleepUnlessAborted(retryInMs, signal);
    }
  }
}
