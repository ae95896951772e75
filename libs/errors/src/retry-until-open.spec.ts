import { describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from './app-error';
import { retryUntilOpen } from './retry-until-open';

const unavailable = () => new AppError(ErrorCode.UNAVAILABLE, 'down', { retryable: true });

describe('retryUntilOpen', () => {
  it('retries what shouldRetry accepts, with doubling waits up to the cap, until open resolves', async () => {
    let calls = 0;
    const waits: number[] = [];
    const value = await retryUntilOpen(
      async () => {
        calls += 1;
        if (calls < 4) throw unavailable();
        return 'open';
      },
      { signal: new AbortController().signal, what: 'the thing', shouldRetry: (error) => error.code === ErrorCode.UNAVAILABLE, initialDelayMs: 1, maxDelayMs: 3, onAttemptFailed: (_error, _attempt, wait) => waits.push(wait) },
    );
    expect(value).toBe('open');
    expect(waits).toEqual([1, 2, 3]);
  });

  it('throws at once what shouldRetry refuses', async () => {
    let calls = 0;
    const failing = retryUntilOpen(
      async () => {
        calls += 1;
        throw new AppError(ErrorCode.UNAUTHENTICATED, 'wrong password');
      },
      { signal: new AbortController().signal, what: 'the thing', shouldRetry: (error) => error.code === ErrorCode.UNAVAILABLE, initialDelayMs: 1, maxDelayMs: 1 },
    );
    await expect(failing).rejects.toMatchObject({ code: ErrorCode.UNAUTHENTICATED });
    expect(calls).toBe(1);
  });

  it('stops waiting when aborted, naming what it was waiting for, and leaves no listener behind', async () => {
    const controller = new AbortController();
    let listeners = 0;
    const signal = controller.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => (listeners++, add(...args))) as typeof add;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => (listeners--, remove(...args))) as typeof remove;
    let calls = 0;
    const waiting = retryUntilOpen(
      async () => {
        calls += 1;
        if (calls === 3) setTimeout(() => controller.abort(), 5);
        throw unavailable();
      },
      { signal, what: 'Qdrant at http://q:6333', shouldRetry: () => true, initialDelayMs: 1, maxDelayMs: 60_000 },
    );
    await expect(waiting).rejects.toMatchObject({ code: ErrorCode.CANCELLED, message: 'stopped before Qdrant at http://q:6333 answered' });
    // The first two waits ended on their timers and removed their listeners; the third ended on the abort (once: true).
    expect(listeners).toBe(1);
  });
});
