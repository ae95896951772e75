import { AppError, ErrorCode } from '@ratchet/errors';
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForOptions {
  /** Give up after this many milliseconds. Default 5000. */
  timeoutMs?: number;
  /** Pause between attempts, in milliseconds. Default 50. */
  intervalMs?: number;
  /** What was awaited, for the timeout error. Default "condition". */
  message?: string;
  /** Stops waiting early; waitFor then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Calls `predicate` until it returns a truthy value, and returns that value.
 * A predicate that throws counts as "not yet" (a refused connection while a
 * server starts is the normal case); the last error becomes the timeout
 * error's cause. Use `signal` to give up early, e.g. when the awaited process
 * has died.
 *
 * @throws AppError DEADLINE_EXCEEDED ("timed out after <n> ms waiting for
 *   <message>") when `timeoutMs` passes; the signal's reason when aborted.
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, options: WaitForOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 5000, intervalMs = 50, message = 'condition', signal } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const value = await predicate();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    signal?.throwIfAborted();
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new AppError(ErrorCode.DEADLINE_EXCEEDED, `timed out after ${timeoutMs} ms waiting for ${message}${detail}`, {
        cause: lastError,
      });
    }
    try {
      await sleep(Math.min(intervalMs, remaining), undefined, signal ? { signal } : undefined);
    } catch {
      // Aborted while sleeping: the check at the top of the loop rethrows the signal's reason.
    }
  }
}
