import { waitFor } from './wait-for';

describe('waitFor', () => {
  it('returns the first truthy value, treating throws as "not yet"', async () => {
    let calls = 0;
    const value = await waitFor(
      async () => {
        calls += 1;
        if (calls === 1) throw new Error('connection refused');
        return calls === 3 ? 'ready' : undefined;
      },
      { intervalMs: 1 },
    );
    expect(value).toBe('ready');
    expect(calls).toBe(3);
  });

  it('times out with the message and the last error as cause', async () => {
    const lastError = new Error('connection refused');
    const waiting = waitFor(
      () => {
        throw lastError;
      },
      { timeoutMs: 30, intervalMs: 5, message: 'the server' },
    );
    await expect(waiting).rejects.toMatchObject({
      code: 'DEADLINE_EXCEEDED',
      message: 'timed out after 30 ms waiting for the server (last error: connection refused)',
      cause: lastError,
    });
  });

  it('stops early with the abort reason', async () => {
    const controller = new AbortController();
    const reason = new Error('server exited');
    setTimeout(() => controller.abort(reason), 10);
    const started = Date.now();
    await expect(waitFor(() => false, { timeoutMs: 5000, intervalMs: 1000, signal: controller.signal })).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
