import { AppError, ErrorCode } from '@ratchet/errors';
import type { Headers, StoredEvent, WorkQueueOptions } from '../transport';

/**
 * The shared state behind in-process transports, standing in for a
 * nats-server: several `InProcessTransport`s on one broker behave like
 * several connections to one server. Timers are real; a transport that is
 * closed abandons its deliveries exactly like a dropped connection.
 */

interface Member {
  readonly owner: object;
  readonly deliver: (subject: string, data: Uint8Array, headers: Headers, reply: (data: Uint8Array, headers: Headers) => void) => void;
}

interface QueuedJob {
  readonly sequence: number;
  readonly id: string;
  readonly data: Uint8Array;
  readonly headers: Headers;
  deliveryCount: number;
  state: 'ready' | 'in-flight' | 'exhausted';
  availableAt: number;
  ackTimer?: NodeJS.Timeout;
  /** Increments on every delivery so a stale delivery's ack is ignored. */
  generation: number;
}

export interface InProcessQueue {
  options: Required<WorkQueueOptions>;
  readonly jobs: Map<number, QueuedJob>;
  readonly recentIds: Map<string, number>;
  readonly waiters: Set<() => void>;
  readonly deadLetters: { id: string; reason: string; data: Uint8Array; headers: Headers }[];
  nextSequence: number;
}

export const DEFAULT_ACK_WAIT_MS = 30_000;
export const DEFAULT_MAX_DELIVER = 5;
const DEDUP_WINDOW_MS = 120_000;

export class InProcessBroker {
  private readonly subjects = new Map<string, Map<string, { members: Member[]; next: number }>>();
  readonly queues = new Map<string, InProcessQueue>();
  private readonly events = new Map<string, StoredEvent[]>();
  private readonly eventListeners = new Map<string, Set<(event: StoredEvent) => void>>();
  private eventSequence = 0;

  addMember(subject: string, queue: string, member: Member): () => void {
    let groups = this.subjects.get(subject);
    if (!groups) this.subjects.set(subject, (groups = new Map()));
    let group = groups.get(queue);
    if (!group) groups.set(queue, (group = { members: [], next: 0 }));
    group.members.push(member);
    return () => {
      const index = group.members.indexOf(member);
      if (index >= 0) group.members.splice(index, 1);
      if (group.members.length === 0) groups.delete(queue);
      if (groups.size === 0) this.subjects.delete(subject);
    };
  }

  removeOwner(owner: object): void {
    for (const [subject, groups] of this.subjects) {
      for (const [queue, group] of groups) {
        group.members = group.members.filter((member) => member.owner !== owner);
        if (group.members.length === 0) groups.delete(queue);
      }
      if (groups.size === 0) this.subjects.delete(subject);
    }
  }

  /** One member of every queue group, round robin within the group; empty when nobody listens. */
  pickMembers(subject: string): Member[] {
    const picked: Member[] = [];
    const pick = (groups: Map<string, { members: Member[]; next: number }>) => {
      for (const group of groups.values()) {
        const member = group.members[group.next % group.members.length];
        group.next = (group.next + 1) % Math.max(1, group.members.length);
        if (member) picked.push(member);
      }
    };
    const exact = this.subjects.get(subject);
    if (exact) pick(exact);
    // Subscriptions with NATS wildcards (`*` one token, `>` the rest) are few; scan them.
    for (const [pattern, groups] of this.subjects) {
      if (pattern !== subject && isWildcard(pattern) && subjectMatches(pattern, subject)) pick(groups);
    }
    return picked;
  }

  ensureQueue(name: string, options: WorkQueueOptions = {}): InProcessQueue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = {
        options: { ackWaitMs: options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS, maxDeliver: options.maxDeliver ?? DEFAULT_MAX_DELIVER },
        jobs: new Map(),
        recentIds: new Map(),
        waiters: new Set(),
        deadLetters: [],
        nextSequence: 1,
      };
      this.queues.set(name, queue);
    } else if (options.ackWaitMs !== undefined || options.maxDeliver !== undefined) {
      // As with NATS, the workers' settings win over those of a producer that created the queue first.
      queue.options = { ackWaitMs: options.ackWaitMs ?? queue.options.ackWaitMs, maxDeliver: options.maxDeliver ?? queue.options.maxDeliver };
    }
    return queue;
  }

  queue(name: string): InProcessQueue {
    const queue = this.queues.get(name);
    if (!queue) throw new AppError(ErrorCode.NOT_FOUND, `work queue "${name}" does not exist: call ensureWorkQueue("${name}") first`);
    return queue;
  }

  enqueue(name: string, id: string, data: Uint8Array, headers: Headers): void {
    const queue = this.queue(name);
    const now = Date.now();
    for (const [seenId, at] of queue.recentIds) if (now - at > DEDUP_WINDOW_MS) queue.recentIds.delete(seenId);
    if (queue.recentIds.has(id)) return;
    queue.recentIds.set(id, now);
    const sequence = queue.nextSequence++;
    queue.jobs.set(sequence, { sequence, id, data, headers, deliveryCount: 0, state: 'ready', availableAt: 0, generation: 0 });
    this.wake(queue);
  }

  /** Hands out the oldest available job, marking it in flight with an ack deadline. */
  take(queue: InProcessQueue): { job: QueuedJob; generation: number } | null {
    const now = Date.now();
    for (const job of queue.jobs.values()) {
      if (job.state !== 'ready' || job.availableAt > now) continue;
      job.state = 'in-flight';
      job.deliveryCount += 1;
      job.generation += 1;
      this.armAckTimer(queue, job);
      return { job, generation: job.generation };
    }
    return null;
  }

  /** Milliseconds until the next nakked job becomes available, or undefined. */
  nextAvailableIn(queue: InProcessQueue): number | undefined {
    let soonest: number | undefined;
    const now = Date.now();
    for (const job of queue.jobs.values()) {
      if (job.state === 'ready' && job.availableAt > now) soonest = Math.min(soonest ?? Infinity, job.availableAt - now);
    }
    return soonest;
  }

  armAckTimer(queue: InProcessQueue, job: QueuedJob): void {
    clearTimeout(job.ackTimer);
    const generation = job.generation;
    job.ackTimer = setTimeout(() => {
      if (job.generation !== generation || job.state !== 'in-flight') return;
      this.release(queue, job, 0);
    }, queue.options.ackWaitMs);
    job.ackTimer.unref();
  }

  release(queue: InProcessQueue, job: QueuedJob, delayMs: number): void {
    clearTimeout(job.ackTimer);
    // Like JetStream: once max deliveries are used up the job stays, undelivered.
    job.state = job.deliveryCount >= queue.options.maxDeliver ? 'exhausted' : 'ready';
    job.availableAt = Date.now() + delayMs;
    if (job.state === 'ready') {
      if (delayMs > 0) setTimeout(() => this.wake(queue), delayMs).unref();
      else this.wake(queue);
    }
  }

  remove(queue: InProcessQueue, job: QueuedJob): void {
    clearTimeout(job.ackTimer);
    queue.jobs.delete(job.sequence);
  }

  private wake(queue: InProcessQueue): void {
    for (const waiter of [...queue.waiters]) waiter();
  }

  appendEvent(taskId: string, data: Uint8Array, headers: Headers): StoredEvent {
    const event: StoredEvent = { sequence: ++this.eventSequence, data, headers };
    let log = this.events.get(taskId);
    if (!log) this.events.set(taskId, (log = []));
    log.push(event);
    for (const listener of this.eventListeners.get(taskId) ?? []) listener(event);
    return event;
  }

  /** Calls `listener` for every stored event from `fromSequence`, then for each new one. Returns an unsubscribe. */
  followEvents(taskId: string, fromSequence: number, listener: (event: StoredEvent) => void): () => void {
    for (const event of this.events.get(taskId) ?? []) if (event.sequence >= fromSequence) listener(event);
    let listeners = this.eventListeners.get(taskId);
    if (!listeners) this.eventListeners.set(taskId, (listeners = new Set()));
    const wrapped = (event: StoredEvent) => {
      if (event.sequence >= fromSequence) listener(event);
    };
    listeners.add(wrapped);
    return () => listeners.delete(wrapped);
  }
}

function isWildcard(pattern: string): boolean {
  return pattern.includes('*') || pattern.endsWith('>');
}

/** NATS subject matching: `*` matches one token, a final `>` one or more. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const wanted = pattern.split('.');
  const tokens = subject.split('.');
  for (let i = 0; i < wanted.length; i++) {
    if (wanted[i] === '>' && i === wanted.length - 1) return tokens.length > i;
    if (i >= tokens.length || (wanted[i] !== '*' && wanted[i] !== tokens[i])) return false;
  }
  return tokens.length === wanted.length;
}
