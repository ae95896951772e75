import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { backoffDelay, sleepUnlessAborted } from './backoff';

const attempts = (count: number) => Array.from({ length: count }, (_, index) => index + 1);

describe('backoffDelay', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('starts at the initial wait and doubles after every failed attempt', () => {
    expect(attempts(6).map((attempt) => backoffDelay(attempt, 500, 60_000))).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000]);
  });

  it('stops growing at the cap, also after a very long outage', () => {
    expect(attempts(8).map((attempt) => backoffDelay(attempt, 500, 15_000))).toEqual([500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]);
    expect(backoffDelay(5_000, 500, 15_000)).toBe(15_000);
    // 2 ** 4999 is Infinity; 0 ms times it must still be 0, not NaN.
    expect(backoffDelay(5_000, 0, 15_000)).toBe(0);
  });

  it('counts attempt 0 like attempt 1', () => {
    expect(backoffDelay(0, 500, 15_000)).toBe(500);
  });

  it('with jitter, waits between half and all of the delay, in whole ms', () => {
    const random = jest.spyOn(Math, 'random');
    random.mockReturnValue(0);
    expect(backoffDelay(3, 100, 5_000, { jitter: true })).toBe(200);
    random.mockReturnValue(0.999_999);
    expect(backoffDelay(3, 100, 5_000, { jitter: true })).toBe(400);
    // The cap holds with jitter too: jitter only shortens.
    expect(backoffDelay(20, 100, 5_000, { jitter: true })).toBe(5_000);
    random.mockRestore();

    for (const attempt of attempts(10)) {
      const full = backoffDelay(attempt, 300, 8_000);
      for (let draw = 0; draw < 50; draw += 1) {
        const wait = backoffDelay(attempt, 300, 8_000, { jitter: true });
        expect(Number.isInteger(wait)).toBe(true);
        expect(wait).toBeGreaterThanOrEqual(full / 2);
        expect(wait).toBeLessThanOrEqual(full);
      }
    }
  });

  it('spreads jittered waits rather than repeating one value', () => {
    const waits = new Set(Array.from({ length: 50 }, () => backoffDelay(4, 1_000, 30_000, { jitter: true })));
    expect(waits.size).toBeGreaterThan(1);
  });
});

describe('sleepUnlessAborted', () => {
  it('resolves after the time when nothing aborts, and leaves no listener behind', async () => {
    const controller = new AbortController();
    const remove = jest.spyOn(controller.signal, 'removeEventListener');
    const started = performance.now();
    await sleepUnlessAborted(30, controller.signal);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(remove).toHaveBeenCalledWith('abort', expect.any(Function));
  });

  it('resolves early, without rejecting, when the signal aborts', async () => {
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(), 10);
    await expect(sleepUnlessAborted(60_000, controller.signal)).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('resolves at once when the signal has already aborted', async () => {
    const started = performance.now();
    await sleepUnlessAborted(60_000, AbortSignal.abort());
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('is a plain timer without a signal', async () => {
    const started = performance.now();
    await sleepUnlessAborted(30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });
});
