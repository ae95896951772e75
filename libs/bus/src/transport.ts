/**
 * The bytes-level seam every Ratchet process talks through. Two implementations
 * (NATS and in-process) honour the same contract; the suite in
 * `test/transport-contract.ts` runs against both.
 *
 * Header names are lower-case; values are strings.
 */
export type Headers = Record<string, string>;

/** A message as it travelled: payload bytes plus headers. */
export interface Envelope {
  readonly data: Uint8Array;
  readonly headers: Headers;
}

export interface TransportRequestOptions {
  /** How long to wait for a reply, in milliseconds. */
  readonly timeoutMs: number;
  readonly headers?: Headers;
}

/** A request as a responder sees it. `respond` may be called once; later calls are ignored. */
export interface IncomingRequest extends Envelope {
  readonly subject: string;
  respond(data: Uint8Array, headers?: Headers): void;
}

export interface SubscribeOptions {
  /** Queue group: each request goes to one member of each group. */
  readonly queue: string;
}

export interface Subscription {
  /** Stops delivery of new requests. Requests already handed to the handler are unaffected. */
  unsubscribe(): Promise<void>;
}

export interface WorkQueueOptions {
  /** A delivered job not acked (or heartbeated) within this time is redelivered. Default 30 000 ms. */
  readonly ackWaitMs?: number;
  /** Deliveries before the queue gives up on a job. Default 5. */
  readonly maxDeliver?: number;
}

export interface EnqueueOptions {
  /** Stable job id; a second enqueue with the same id within the dedup window is dropped. */
  readonly id: string;
  readonly headers?: Headers;
}

/** One delivery of a job, owned by the consumer that pulled it until acked, nakked or terminated. */
export interface Delivery extends Envelope {
  readonly id: string;
  /** 1 on first delivery, 2 on the first redelivery, and so on. */
  readonly deliveryCount: number;
  ack(): Promise<void>;
  /** Hands the job back for redelivery after `delayMs` (default 0). */
  nak(delayMs?: number): void;
  /** Drops the job for good (after it has been dead-lettered). */
  term(): void;
  /** Resets the ack deadline: the consumer is alive and still working. */
  working(): void;
}

/** A pull consumer: takes one job at a time, so a process only holds what it is working on. */
export interface Puller {
  /** Waits up to `expiresMs` for the next job; null when none arrived. */
  next(expiresMs: number): Promise<Delivery | null>;
  close(): Promise<void>;
}

export interface DeadLetter extends Envelope {
  readonly id: string;
  readonly reason: string;
}

/** An appended event as stored: `sequence` increases with every append. */
export interface StoredEvent extends Envelope {
  readonly sequence: number;
}

/** A live view of one task's events: everything from the start (or `fromSequence`), then new ones. */
export interface EventReader extends AsyncIterable<StoredEvent> {
  /** Ends the iteration. */
  stop(): Promise<void>;
}

export const TransportKind = { NATS: 'nats', IN_PROCESS: 'inprocess' } as const;
export type TransportKind = (typeof TransportKind)[keyof typeof TransportKind];

export interface Transport {
  readonly kind: TransportKind;
  /**
   * Sends a request and waits for one reply.
   * @throws AppError DEADLINE_EXCEEDED after `timeoutMs`; UNAVAILABLE (retryable) when nobody
   *   serves the subject or the connection is down; UNAVAILABLE (not retryable) once closed.
   */
  request(subject: string, data: Uint8Array, options: TransportRequestOptions): Promise<Envelope>;
  subscribe(subject: string, options: SubscribeOptions, handler: (request: IncomingRequest) => void): Subscription;

  /**
   * Creates the queue if needed (idempotent), or checks it when it exists.
   * @returns the settings its consumer has: `options`, unless it was created
   *   with others by a connection this one may not override (NATS with
   *   per-role permissions: the orchestrator's).
   */
  ensureWorkQueue(queue: string, options?: WorkQueueOptions): Promise<Required<WorkQueueOptions>>;
  enqueue(queue: string, data: Uint8Array, options: EnqueueOptions): Promise<void>;
  /** A pull consumer on the queue's shared durable consumer. */
  puller(queue: string): Promise<Puller>;
  deadLetter(queue: string, delivery: Delivery, reason: string): Promise<void>;
  /** Every dead letter of the queue, oldest first. */
  deadLetters(queue: string): Promise<DeadLetter[]>;

  /** Appends an event to the task's stream. `taskId` must be a valid subject token. */
  appendEvent(taskId: string, data: Uint8Array, headers?: Headers): Promise<StoredEvent>;
  /** Replays the task's events from `fromSequence` (default: the first), then follows new ones. */
  readEvents(taskId: string, options?: { fromSequence?: number }): Promise<EventReader>;

  /**
   * Resolves once the server has processed everything sent so far, e.g. new
   * subscriptions: after it, other connections' requests reach them.
   */
  flush(): Promise<void>;
  /** True while connected; requests fail fast when false. */
  isConnected(): boolean;
  /**
   * Closes the connection at once. Deliveries not yet acked are abandoned and
   * come back to other consumers after their ack deadline, as after a crash.
   */
  close(): Promise<void>;
}
