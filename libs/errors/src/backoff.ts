/** How `backoffDelay` spreads its waits. */
export interface BackoffOptions {
  /**
   * Wait a random time between half and all of the computed delay, rounded to
   * whole ms, so that clients that failed together do not all come back at
   * the same moment. Default false: the exact delay, for waits that are shown
   * to a person or recorded.
   */
  readonly jitter?: boolean;
}

/**
 * The one retry backoff every caller uses: the wait, in ms, before attempt
 * `attempt + 1`, `initialMs` after the first failure and doubling after each
 * next one, never more than `maxMs`.
 *
 * @param attempt 1-based number of the attempt that just failed (0 counts as 1).
 * @param initialMs the wait after the first failed attempt, ms.
 * @param maxMs the cap, ms; jitter only ever shortens a wait, so it holds with jitter too.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, options: BackoffOptions = {}): number {
  // The exponent stops at 30: the cap has long been reached by then, and
  // 2 ** 1024 would be Infinity (and 0 ms times Infinity NaN) after a long outage.
  const delay = Math.min(maxMs, initialMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return options.jitter === true ? Math.round(delay * (0.5 + Math.random() * 0.5)) : delay;
}

/**
 * Resolves after `ms`, or at once when `signal` aborts (it never rejects);
 * the abort listener is removed either way, so a long outage does not pile
 * listeners on the signal. Without a signal it is a plain timer.
 */
export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const stop = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    signal?.addEventListener('abort', stop, { once: true });
  });
}
