import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { SupervisorSession } from '../domain/supervisor-session';
import type { SupervisedSandbox } from './supervised-job';
import { WarmPool } from './warm-pool';

// The pool's bookkeeping with stand-in sandboxes and a fake clock; the
// drivers' tests run it against real containers and bwrap.

interface FakeSandbox extends SupervisedSandbox {
  readonly id: number;
  ended: boolean;
}

/** A sandbox whose supervisor is ready at once (it sent the ready event). */
function readySandbox(id: number): FakeSandbox {
  const session = new SupervisorSession(1024);
  const event = Buffer.from('{"ready":true}');
  session.accept(Buffer.concat([Buffer.from([3, 0, 0, 0, event.length]), event]));
  return { id, session, closed: new Promise(() => undefined), ended: false };
}

describe('WarmPool', () => {
  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  function pool(size: number, launch: () => Promise<FakeSandbox>) {
    const discarded: number[] = [];
    const warm = new WarmPool<FakeSandbox>({ size, idleMs: 60_000, launch, discard: (sandbox) => discarded.push(sandbox.id) });
    return { warm, discarded };
  }
  /** Lets the pool's promise chains run, advancing the fake clock as fill() polls. */
  async function settle(promise: Promise<unknown>): Promise<void> {
    let done = false;
    void promise.then(() => (done = true));
    while (!done) await jest.advanceTimersByTimeAsync(10);
  }

  it('fills to its size, hands each sandbox out once, and replaces it only when asked after the job', async () => {
    let next = 0;
    const { warm } = pool(2, async () => readySandbox((next += 1)));
    await settle(warm.fill());
    expect(warm.size).toBe(2);
    const first = warm.take();
    const second = warm.take();
    expect([first?.id, second?.id]).toEqual([1, 2]);
    expect(warm.take()).toBeUndefined();
    expect(next).toBe(2); // taking does not start replacements: they would compete with the job
    warm.replenish();
    await settle(warm.fill());
    expect(warm.size).toBe(2);
    expect(warm.take()?.id).toBe(3);
    await warm.close();
  });

  it('skips and discards sandboxes that ended while waiting, and empties itself when idle', async () => {
    const launched: FakeSandbox[] = [];
    const { warm, discarded } = pool(2, async () => {
      launched.push(readySandbox(launched.length + 1));
      return launched.at(-1) as FakeSandbox;
    });
    await settle(warm.fill());
    const taken = warm.take();
    expect(taken?.id).toBe(1);
    warm.replenish();
    await settle(warm.fill());
    // Sandbox 2 died in the pool (its supervisor gave up, or was killed).
    (launched[1] as FakeSandbox).ended = true;
    expect(warm.take()?.id).toBe(3);
    expect(discarded).toEqual([2]);
    await jest.advanceTimersByTimeAsync(90_000);
    expect(warm.size).toBe(0);
    await warm.close();
  });

  it('waits 5 s after a failed start before trying again, and jobs go on without it', async () => {
    let attempts = 0;
    const { warm } = pool(1, async () => {
      attempts += 1;
      throw new Error('engine down');
    });
    await settle(warm.fill());
    expect(warm.size).toBe(0);
    expect(attempts).toBe(1);
    warm.replenish();
    await settle(warm.fill());
    expect(attempts).toBe(1);
    await jest.advanceTimersByTimeAsync(5_001);
    warm.replenish();
    await settle(warm.fill());
    expect(attempts).toBe(2);
    await warm.close();
  });

  it('discards what is still starting when closed, and stays off', async () => {
    let release: (sandbox: FakeSandbox) => void = () => undefined;
    const { warm, discarded } = pool(1, () => new Promise<FakeSandbox>((resolve) => (release = resolve)));
    warm.replenish();
    const closing = warm.close();
    release(readySandbox(7));
    await settle(closing);
    expect(discarded).toEqual([7]);
    warm.replenish();
    expect(warm.take()).toBeUndefined();
  });
});
