/**
 * Exponential backoff with jitter: attempt 1 waits about `baseMs`, each next
 * attempt doubles, capped at `maxMs`. Jitter keeps retrying clients from
 * arriving in lock step.
 * @param attempt 1-based number of the attempt that just failed.
 * @returns milliseconds to wait, between half and all of the computed delay.
 */
export function backoffDelay(attempt: number, baseMs: number, maxMs = 5_000): number {
  const delay = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(delay * (0.5 + Math.random() * 0.5));
}

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
