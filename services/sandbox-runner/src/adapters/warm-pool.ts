import type { SupervisedSandbox } from './supervised-job';

export interface WarmPoolOptions<T extends SupervisedSandbox> {
  /** Sandboxes kept ready; 0 turns the pool off. */
  readonly size: number;
  /** A pool idle this long is emptied; a pooled sandbox is never older, ms. */
  readonly idleMs: number;
  /** Starts one sandbox (the pool waits for its supervisor to be ready). */
  readonly launch: () => Promise<T>;
  /** Ends a sandbox that will not be used. */
  readonly discard: (sandbox: T) => void;
}

/**
 * Pre-started, single-use sandboxes: a job takes one (or none, and starts
 * its own); the pool refills in the background when the job has finished
 * (`replenish`), so starting its replacement does not compete for CPU with
 * the job itself; it empties after `idleMs` without a job, and waits 5 s
 * after a failed start before trying again.
 */
export class WarmPool<T extends SupervisedSandbox> {
  private readonly ready: { sandbox: T; createdAt: number }[] = [];
  private filling = 0;
  private lastUsed = Date.now();
  private retryAfter = 0;
  private closed = false;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: WarmPoolOptions<T>) {
    if (options.size > 0) {
      this.timer = setInterval(() => this.shrinkIfIdle(), Math.max(1_000, Math.floor(options.idleMs / 4)));
      this.timer.unref();
    }
  }

  /** Sandboxes ready now. */
  get size(): number {
    return this.ready.length;
  }

  /** A ready sandbox, or undefined when none is. Call replenish() when the job is done. */
  take(): T | undefined {
    if (this.options.size === 0) return undefined;
    this.lastUsed = Date.now();
    let taken: T | undefined;
    while (taken === undefined && this.ready.length > 0) {
      const entry = this.ready.shift() as { sandbox: T; createdAt: number };
      if (Date.now() - entry.createdAt < this.options.idleMs && !entry.sandbox.ended) taken = entry.sandbox;
      else this.options.discard(entry.sandbox);
    }
    return taken;
  }

  /** Starts the sandboxes the pool lacks, in the background. */
  replenish(): void {
    this.refill();
  }

  /** Resolves once the pool is full, or a start failed. */
  async fill(): Promise<void> {
    this.refill();
    while (!this.closed && this.filling > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /** Ends the ready sandboxes and stops refilling. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    while (this.filling > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    for (const { sandbox } of this.ready.splice(0)) this.options.discard(sandbox);
  }

  private refill(): void {
    if (this.options.size === 0 || this.closed || Date.now() < this.retryAfter) return;
    while (this.ready.length + this.filling < this.options.size) {
      this.filling += 1;
      void this.options
        .launch()
        .then(async (sandbox) => {
          // Pooled means the supervisor is loaded and waiting: a job starts its first command at once.
          await Promise.race([sandbox.session.whenReady(), sandbox.closed]);
          if (this.closed || sandbox.ended) this.options.discard(sandbox);
          else this.ready.push({ sandbox, createdAt: Date.now() });
        })
        .catch(() => {
          // Jobs still start their own sandboxes, which report the problem themselves.
          this.retryAfter = Date.now() + 5_000;
        })
        .finally(() => {
          this.filling -= 1;
        });
    }
  }

  private shrinkIfIdle(): void {
    if (Date.now() - this.lastUsed < this.options.idleMs) return;
    for (const { sandbox } of this.ready.splice(0)) this.options.discard(sandbox);
  }
}
