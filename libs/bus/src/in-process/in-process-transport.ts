import { AppError, ErrorCode } from '@ratchet/errors';
import { AsyncQueue } from '../async-queue';
import { Header, isSubjectToken } from '../headers';
import type {
  DeadLetter,
  Delivery,
  Envelope,
  EventReader,
  Headers,
  IncomingRequest,
  Puller,
  StoredEvent,
  SubscribeOptions,
  Subscription,
  Transport,
  TransportRequestOptions,
  WorkQueueOptions,
} from '../transport';
import { TransportKind } from '../transport';
import { InProcessBroker } from './in-process-broker';

/**
 * A `Transport` inside one process, with NATS's semantics: queue groups,
 * request timeouts, "no responders", at-least-once work queues with ack
 * deadlines and redelivery, and replayable event streams. Payloads are copied
 * on the way through so neither side can mutate the other's bytes.
 */
export class InProcessTransport implements Transport {
  readonly kind = TransportKind.IN_PROCESS;
  private closed = false;
  private readonly pullers = new Set<InProcessPuller>();
  private readonly readers = new Set<() => void>();
  /** Requests awaiting a reply; closing the transport fails them, as a dropped connection would. */
  private readonly pending = new Set<(error: AppError) => void>();

  /** Transports sharing a broker see each other, like connections to one server. */
  constructor(readonly broker: InProcessBroker = new InProcessBroker()) {}

  flush(): Promise<void> {
    // Subscriptions take effect synchronously here.
    return Promise.resolve();
  }

  isConnected(): boolean {
    return !this.closed;
  }

  request(subject: string, data: Uint8Array, options: TransportRequestOptions): Promise<Envelope> {
    this.assertOpen();
    const members = this.broker.pickMembers(subject);
    if (members.length === 0) {
      return Promise.reject(new AppError(ErrorCode.UNAVAILABLE, `no responders on ${subject}: is the service that serves it running?`));
    }
    return new Promise<Envelope>((resolve, reject) => {
      let settled = false;
      const fail = (error: AppError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.pending.delete(fail);
        reject(error);
      };
      const timer = setTimeout(() => fail(new AppError(ErrorCode.DEADLINE_EXCEEDED, `no reply on ${subject} within ${options.timeoutMs} ms`)), Math.max(0, options.timeoutMs));
      this.pending.add(fail);
      const reply = (replyData: Uint8Array, replyHeaders: Headers) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.pending.delete(fail);
        resolve({ data: replyData.slice(), headers: { ...replyHeaders } });
      };
      const headers = { ...options.headers };
      for (const member of members) {
        // Delivered on a later turn of the event loop, as from a socket.
        setImmediate(() => member.deliver(subject, data.slice(), { ...headers }, reply));
      }
    });
  }

  subscribe(subject: string, options: SubscribeOptions, handler: (request: IncomingRequest) => void): Subscription {
    this.assertOpen();
    const remove = this.broker.addMember(subject, options.queue, {
      owner: this,
      deliver: (deliveredSubject, data, headers, reply) => {
        let responded = false;
        handler({
          subject: deliveredSubject,
          data,
          headers,
          respond: (replyData, replyHeaders = {}) => {
            if (responded || this.closed) return;
            responded = true;
            setImmediate(() => reply(replyData, replyHeaders));
          },
        });
      },
    });
    return { unsubscribe: () => Promise.resolve(remove()) };
  }

  ensureWorkQueue(queue: string, options?: WorkQueueOptions): Promise<Required<WorkQueueOptions>> {
    this.assertOpen();
    assertToken('queue name', queue);
    this.broker.ensureQueue(queue, options);
    return Promise.resolve({ ackWaitMs: options?.ackWaitMs ?? 30_000, maxDeliver: options?.maxDeliver ?? 5 });
  }

  enqueue(queue: string, data: Uint8Array, options: { id: string; headers?: Headers }): Promise<void> {
    this.assertOpen();
    assertToken('queue name', queue);
    // Like NATS, enqueuing creates the queue: jobs wait there until a worker comes.
    this.broker.ensureQueue(queue);
    this.broker.enqueue(queue, options.id, data.slice(), { ...options.headers, [Header.JOB_ID]: options.id });
    return Promise.resolve();
  }

  puller(queue: string): Promise<Puller> {
    this.assertOpen();
    const puller = new InProcessPuller(this.broker, queue, () => this.pullers.delete(puller));
    this.pullers.add(puller);
    return Promise.resolve(puller);
  }

  deadLetter(queue: string, delivery: Delivery, reason: string): Promise<void> {
    this.assertOpen();
    this.broker.queue(queue).deadLetters.push({ id: delivery.id, reason, data: delivery.data.slice(), headers: { ...delivery.headers } });
    return Promise.resolve();
  }

  deadLetters(queue: string): Promise<DeadLetter[]> {
    return Promise.resolve(this.broker.queue(queue).deadLetters.map((letter) => ({ ...letter })));
  }

  appendEvent(taskId: string, data: Uint8Array, headers: Headers = {}): Promise<StoredEvent> {
    this.assertOpen();
    assertToken('task id', taskId);
    return Promise.resolve(this.broker.appendEvent(taskId, data.slice(), { ...headers }));
  }

  readEvents(taskId: string, options: { fromSequence?: number } = {}): Promise<EventReader> {
    this.assertOpen();
    assertToken('task id', taskId);
    const queue = new AsyncQueue<StoredEvent>();
    const unfollow = this.broker.followEvents(taskId, options.fromSequence ?? 0, (event) => queue.push({ ...event, data: event.data.slice() }));
    const stop = () => {
      unfollow();
      queue.end();
      this.readers.delete(stop);
    };
    this.readers.add(stop);
    return Promise.resolve({
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
      stop: () => Promise.resolve(stop()),
    });
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.broker.removeOwner(this);
    for (const fail of [...this.pending]) fail(new AppError(ErrorCode.UNAVAILABLE, 'request abandoned: transport closed', { retryable: false }));
    for (const puller of [...this.pullers]) puller.abandon();
    for (const stop of [...this.readers]) stop();
    return Promise.resolve();
  }

  private assertOpen(): void {
    if (this.closed) throw new AppError(ErrorCode.UNAVAILABLE, 'transport is closed', { retryable: false });
  }
}

function assertToken(what: string, value: string): void {
  if (!isSubjectToken(value)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `invalid ${what} "${value}": use 1-128 letters, digits, "_" or "-"`);
  }
}

class InProcessPuller implements Puller {
  private closed = false;
  private wakeWaiter: (() => void) | undefined;
  /** Deliveries handed out and not yet settled: abandoned (left to time out) when the transport closes. */
  private readonly outstanding = new Set<{ abandoned: boolean }>();

  constructor(
    private readonly broker: InProcessBroker,
    private readonly queueName: string,
    private readonly onClose: () => void,
  ) {}

  async next(expiresMs: number): Promise<Delivery | null> {
    const queue = this.broker.queue(this.queueName);
    const deadline = Date.now() + expiresMs;
    for (;;) {
      if (this.closed) throw new AppError(ErrorCode.UNAVAILABLE, `puller for ${this.queueName} is closed`, { retryable: false });
      const taken = this.broker.take(queue);
      if (taken) return this.delivery(taken.job, taken.generation);
      const remaining = deadline - Date.now();
      if (remaining <= 0) return null;
      const wait = Math.min(remaining, this.broker.nextAvailableIn(queue) ?? remaining);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait);
        function done() {
          clearTimeout(timer);
          queue.waiters.delete(done);
          resolve();
        }
        this.wakeWaiter = done;
        queue.waiters.add(done);
      });
      this.wakeWaiter = undefined;
    }
  }

  private delivery(job: Parameters<InProcessBroker['remove']>[1], generation: number): Delivery {
    const queue = this.broker.queue(this.queueName);
    const handle = { abandoned: false };
    this.outstanding.add(handle);
    // A delivery only acts while it is the current one and its connection lives.
    const current = () => !handle.abandoned && job.generation === generation && job.state === 'in-flight';
    const settle = () => this.outstanding.delete(handle);
    return {
      id: job.id,
      data: job.data.slice(),
      headers: { ...job.headers },
      deliveryCount: job.deliveryCount,
      ack: () => {
        if (handle.abandoned) return Promise.reject(new AppError(ErrorCode.UNAVAILABLE, 'cannot ack: transport is closed', { retryable: false }));
        if (current()) this.broker.remove(queue, job);
        settle();
        return Promise.resolve();
      },
      nak: (delayMs = 0) => {
        if (current()) this.broker.release(queue, job, delayMs);
        settle();
      },
      term: () => {
        if (current()) this.broker.remove(queue, job);
        settle();
      },
      working: () => {
        if (current()) this.broker.armAckTimer(queue, job);
      },
    };
  }

  /** The connection died: stop pulling; in-flight deliveries run out their ack deadline. */
  abandon(): void {
    for (const handle of this.outstanding) handle.abandoned = true;
    this.outstanding.clear();
    void this.close();
  }

  close(): Promise<void> {
    this.closed = true;
    this.wakeWaiter?.();
    this.onClose();
    return Promise.resolve();
  }
}
