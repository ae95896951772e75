import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerInfo, JetStreamClient, JetStreamManager, JsMsg, StreamConfig } from '@nats-io/jetstream';
import {
  AuthorizationError,
  ClosedConnectionError,
  connect,
  credsAuthenticator,
  DrainingConnectionError,
  headers as createNatsHeaders,
  nkeyAuthenticator,
  NoRespondersError,
  PermissionViolationError,
  RequestError,
  TimeoutError,
  UserAuthenticationExpiredError,
  usernamePasswordAuthenticator,
} from '@nats-io/transport-node';
import type { Authenticator, MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { AppError, ErrorCode } from '@ratchet/errors';
import { errorToHeaders } from '../error-headers';
import { Header, isSubjectToken, Subjects } from '../headers';
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
import { DEFAULT_PAYLOAD_TTL_MS, formatPayloadRef, parsePayloadRef, PayloadGoneError, PayloadStore } from './payload-store';
import type { PayloadRef } from './payload-store';
import { DEAD_LETTER_PAYLOAD_STREAM, DEAD_LETTER_STREAM, EVENTS_STREAM, expectedStreams, queueStream, streamTampering, tamperedStreamError, WORKERS } from './streams';

export interface NatsTransportOptions {
  /** e.g. `nats://127.0.0.1:4222`; several comma-separated URLs form a cluster list. */
  readonly url: string;
  /** Connection name shown by the server's monitoring endpoints. */
  readonly name?: string;
  /** How long the first connection attempt may take, in ms. Default 5000. */
  readonly connectTimeoutMs?: number;
  /** How long task events are kept, in ms. Default 7 days. */
  readonly eventRetentionMs?: number;
  /** Called when the connection drops or comes back; for logging. */
  readonly onStatus?: (status: { type: string; detail?: string }) => void;
  /**
   * Payloads (of requests, replies, jobs and dead letters) larger than this
   * many bytes travel as chunks through the JetStream stream
   * `RATCHET_PAYLOADS` and the message carries only the object's name.
   * Default, and upper bound: the server's max_payload less room for headers.
   */
  readonly inlineLimitBytes?: number;
  /** How long a payload object nobody read stays in the stream, in ms. Default 1 hour; used when the stream is created. */
  readonly payloadTtlMs?: number;
  /**
   * How long a service waits for a stream or a queue's consumer it may not
   * create itself (the orchestrator creates them when it starts), ms.
   * Default 60 000.
   */
  readonly provisionWaitMs?: number;
  /** Who this connection is; without it the server must allow anonymous clients. */
  readonly credentials?: NatsCredentials;
  /** TLS to the server: the CA that signed its certificate, and a client certificate when the server asks for one. */
  readonly tls?: NatsTls;
  /**
   * Prefix of this connection's reply inboxes (default `_INBOX`). With
   * per-service permissions each service may only subscribe to its own
   * prefix (`_INBOX_<user>`), so no one else can read its replies.
   */
  readonly inboxPrefix?: string;
}

/** One way of authenticating to nats-server: a user and password, an NKey seed, or a creds file (JWT and seed). */
export interface NatsCredentials {
  readonly user?: string;
  readonly password?: string;
  /** An NKey user seed (`SU...`), the text of the seed file. */
  readonly nkeySeed?: string;
  /** The text of a `.creds` file (decentralised JWT auth). */
  readonly creds?: string;
}

export interface NatsTls {
  readonly caFile?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

const DEFAULT_EVENT_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** nats.js refuses pull expiries under one second. */
const MIN_PULL_EXPIRES_MS = 1000;
/** Room left for headers (trace context, error message, ...) when a payload is sent inline; at most a quarter of max_payload. */
const HEADER_ROOM_BYTES = 32 * 1024;
/** Largest payload chunk: a chunk is one message, and a server may allow messages far larger than is wise to store whole. */
const MAX_CHUNK_BYTES = 1024 * 1024;
/** How long close() lets payload deletions and payload reads in flight finish, ms. */
const CLOSE_GRACE_MS = 2_000;
const EMPTY = new Uint8Array(0);

/** How long a service waits for a stream the orchestrator creates, by default, and how often it looks, ms. */
const DEFAULT_PROVISION_WAIT_MS = 60_000;
const PROVISION_POLL_MS = 500;

const nanos = (ms: number) => Math.round(ms * 1_000_000);

/** The settings a work queue's consumer has: the ones asked for, or the ones it was created with by a connection that may. */
export interface WorkQueueSettings {
  readonly ackWaitMs: number;
  readonly maxDeliver: number;
}

/**
 * `Transport` over a real NATS server: core request/reply for RPC, JetStream
 * work-queue streams for jobs and a limits stream for task events.
 */
export class NatsTransport implements Transport {
  readonly kind = TransportKind.NATS;
  private connected = true;
  private closed = false;
  private readonly js: JetStreamClient;
  private jsmPromise: Promise<JetStreamManager> | undefined;
  private readonly ensured = new Map<string, Promise<unknown>>();
  private readonly payloads: PayloadStore;
  /** Incoming messages whose payload object is being read before their handler runs. */
  private readonly loading = new Set<Promise<void>>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly options: NatsTransportOptions,
  ) {
    this.js = jetstream(nc);
    this.payloads = new PayloadStore(nc, this.js, options.payloadTtlMs ?? DEFAULT_PAYLOAD_TTL_MS, () => Math.min(MAX_CHUNK_BYTES, this.messageLimit()), (stream) => this.ensureStream(stream));
    void this.watchStatus();
  }

  /** Largest payload sent inside the message itself, in bytes; anything larger goes through the payload stream. */
  inlineLimit(): number {
    const fits = this.messageLimit();
    return Math.max(0, Math.min(this.options.inlineLimitBytes ?? fits, fits));
  }

  /** The most bytes one message carries with room for headers: the server's max_payload less that room (and the size of a payload chunk, at most 1 MiB). */
  private messageLimit(): number {
    const maxPayload = this.nc.info?.max_payload ?? 1024 * 1024;
    return maxPayload - Math.min(HEADER_ROOM_BYTES, Math.floor(maxPayload / 4));
  }

  /** The payload to send to `destination` and the header naming its object, when `data` is too large to go inline. */
  private async offload(data: Uint8Array, headers: Headers | undefined, destination: string, what: string, stream?: string): Promise<{ data: Uint8Array; headers: Headers | undefined; object?: PayloadRef }> {
    if (data.length <= this.inlineLimit()) return { data, headers };
    const object = await this.payloads.put(data, destination, what, stream);
    return { data: EMPTY, headers: { ...headers, [Header.PAYLOAD_OBJECT]: formatPayloadRef(object) }, object };
  }

  /** Headers and payload of a message received on `destination`, its payload object read (and deleted, with `take`) when it has one. */
  private async receive(data: Uint8Array, natsHeaders: MsgHdrs | undefined, destination: string, what: string): Promise<Envelope> {
    const headers = fromNatsHeaders(natsHeaders);
    const object = headers[Header.PAYLOAD_OBJECT];
    if (object === undefined) return { data, headers };
    delete headers[Header.PAYLOAD_OBJECT];
    return { data: await this.payloads.take(parsePayloadRef(object), destination, what), headers };
  }

  /**
   * Connects to NATS. Reconnects forever after the first connection; requests
   * made while disconnected fail fast with a retryable UNAVAILABLE.
   * @throws AppError UNAVAILABLE when the server cannot be reached at start.
   */
  static async connect(options: NatsTransportOptions): Promise<NatsTransport> {
    const { servers, urlCredentials } = parseServers(options.url);
    const credentials = options.credentials ?? urlCredentials;
    try {
      const nc = await connect({
        servers,
        name: options.name,
        timeout: options.connectTimeoutMs ?? 5000,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        reconnectJitter: 100,
        pingInterval: 10_000,
        ...(credentials === undefined ? {} : { authenticator: authenticatorOf(credentials) }),
        ...(options.tls === undefined ? {} : { tls: { ...options.tls } }),
        ...(options.inboxPrefix === undefined ? {} : { inboxPrefix: options.inboxPrefix }),
      });
      return new NatsTransport(nc, options);
    } catch (error) {
      if (AppError.is(error)) throw error;
      if (isAuthError(error)) {
        throw new AppError(
          ErrorCode.UNAUTHENTICATED,
          `NATS at ${redactUrl(options.url)} refused ${credentials === undefined ? 'a connection without credentials' : 'these credentials'}: set RATCHET_BUS_NATS_USER and RATCHET_BUS_NATS_PASSWORD (bus.natsUser, bus.natsPassword), or bus.natsCredsFile / bus.natsNkeySeedFile, to the ones its authorization gives this service`,
          { cause: error, retryable: false },
        );
      }
      throw new AppError(
        ErrorCode.UNAVAILABLE,
        `cannot reach NATS at ${redactUrl(options.url)}: start nats-server there or set RATCHET_BUS_NATS_URL (bus.natsUrl) to a running server`,
        { cause: error },
      );
    }
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect') this.connected = false;
      if (status.type === 'reconnect') this.connected = true;
      if (status.type === 'disconnect' || status.type === 'reconnect' || status.type === 'close') {
        this.options.onStatus?.({ type: status.type, detail: 'server' in status ? String(status.server) : undefined });
      }
    }
  }

  async flush(): Promise<void> {
    this.assertUsable('flush');
    await this.nc.flush();
  }

  isConnected(): boolean {
    return this.connected && !this.closed && !this.nc.isClosed();
  }

  private assertUsable(what: string): void {
    if (this.closed || this.nc.isClosed()) throw new AppError(ErrorCode.UNAVAILABLE, `cannot ${what}: the NATS connection is closed`, { retryable: false });
    if (!this.connected) throw new AppError(ErrorCode.UNAVAILABLE, `cannot ${what}: the NATS connection is down, reconnecting to ${this.options.url}`);
  }

  async request(subject: string, data: Uint8Array, options: TransportRequestOptions): Promise<Envelope> {
    this.assertUsable(`send a request on ${subject}`);
    const started = Date.now();
    const outgoing = await this.offload(data, options.headers, subject, `a request on ${subject}`);
    // Storing a large payload spends part of the caller's time.
    const remaining = options.timeoutMs - (Date.now() - started);
    if (remaining <= 0) {
      if (outgoing.object !== undefined) void this.payloads.remove(outgoing.object, subject);
      throw new AppError(ErrorCode.DEADLINE_EXCEEDED, `no reply on ${subject} within ${options.timeoutMs} ms: storing its ${data.length}-byte payload took all of it`);
    }
    let reply;
    try {
      reply = await this.nc.request(subject, outgoing.data, { timeout: Math.max(1, Math.floor(remaining)), headers: toNatsHeaders(outgoing.headers) });
    } catch (error) {
      // Nobody will read it (or the responder, past its deadline, needs it no more).
      if (outgoing.object !== undefined) void this.payloads.remove(outgoing.object, subject);
      throw requestError(subject, options.timeoutMs, error);
    }
    return this.receive(reply.data, reply.headers, reply.subject, `the reply on ${subject}`);
  }

  subscribe(subject: string, options: SubscribeOptions, handler: (request: IncomingRequest) => void): Subscription {
    this.assertUsable(`subscribe to ${subject}`);
    const loading = new Set<Promise<void>>();
    const subscription = this.nc.subscribe(subject, {
      queue: options.queue,
      callback: (error, message) => {
        if (error) return;
        // A reply after the connection closed has nowhere to go; the caller times out.
        const send = (replyData: Uint8Array, replyHeaders: Headers | undefined) => {
          if (this.nc.isClosed()) return;
          try {
            message.respond(replyData, { headers: toNatsHeaders(replyHeaders) });
          } catch {
            // closed or draining in the meantime
          }
        };
        let responded = false;
        const respond = (replyData: Uint8Array, replyHeaders?: Headers) => {
          if (responded) return;
          responded = true;
          if (replyData.length <= this.inlineLimit() || !message.reply) return send(replyData, replyHeaders);
          this.track(
            this.offload(replyData, replyHeaders, message.reply, `the reply on ${message.subject}`).then(
              (outgoing) => send(outgoing.data, outgoing.headers),
              (putError: unknown) => send(EMPTY, errorToHeaders(AppError.from(putError))),
            ),
            loading,
          );
        };
        const deliver = (envelope: Envelope) => handler({ subject: message.subject, data: envelope.data, headers: envelope.headers, respond });
        // Most requests are small: their handler runs at once, as before.
        if (!message.headers?.has(Header.PAYLOAD_OBJECT)) {
          deliver({ data: message.data, headers: fromNatsHeaders(message.headers) });
          return;
        }
        // The handler sees the request only once its payload is here; a payload that is gone is answered like any failed call.
        this.track(
          this.receive(message.data, message.headers, message.subject, `a request on ${message.subject}`).then(deliver, (readError: unknown) => respond(EMPTY, errorToHeaders(AppError.from(readError)))),
          loading,
        );
      },
    });
    return {
      unsubscribe: async () => {
        if (this.nc.isClosed() || subscription.isClosed()) return;
        await subscription.drain();
        // Requests taken before the drain reach their handler before this resolves.
        await Promise.allSettled([...loading]);
      },
    };
  }

  /** Keeps `work` (which never rejects) in `set` and in the transport's own set until it settles. */
  private track(work: Promise<void>, set: Set<Promise<void>>): void {
    set.add(work);
    this.loading.add(work);
    void work.finally(() => {
      set.delete(work);
      this.loading.delete(work);
    });
  }

  private jsm(): Promise<JetStreamManager> {
    this.jsmPromise ??= jetstreamManager(this.nc);
    return this.jsmPromise;
  }

  /** Runs `create` once per key per connection; a failure is not remembered, so the next call retries. */
  private once<T>(key: string, create: () => Promise<T>): Promise<T> {
    let promise = this.ensured.get(key) as Promise<T> | undefined;
    if (!promise) {
      promise = create().catch((error: unknown) => {
        this.ensured.delete(key);
        throw jetStreamError(`set up ${key.replace(':', ' ')}`, error);
      });
      this.ensured.set(key, promise);
    }
    return promise;
  }

  /** The configuration Ratchet gives stream `name` (a queue's stream names its queue). */
  private expectedStream(name: string): StreamConfig {
    const queue = name.startsWith(queueStream('')) ? name.slice(queueStream('').length) : undefined;
    const limits = { eventRetentionMs: this.options.eventRetentionMs ?? DEFAULT_EVENT_RETENTION_MS, payloadTtlMs: this.options.payloadTtlMs ?? DEFAULT_PAYLOAD_TTL_MS };
    const config = expectedStreams(queue === undefined ? [] : [queue], limits).find((candidate) => candidate.name === name);
    if (!config) throw new AppError(ErrorCode.INTERNAL, `no stream ${name} in Ratchet's JetStream layout`);
    return config;
  }

  /**
   * Makes sure stream `name` exists as Ratchet creates it, once per
   * connection. A stream that is there is checked (streamTampering) and
   * refused when it was altered; one that is not is created when this
   * connection may (the orchestrator, or a server without authorization),
   * and otherwise waited for: the orchestrator creates every stream when it
   * starts. Limits (max_age) are brought in line by a connection that may.
   * @throws AppError FAILED_PRECONDITION for a tampered stream; UNAVAILABLE
   *   (retryable) when it does not appear within `provisionWaitMs`.
   */
  ensureStream(name: string): Promise<void> {
    return this.once(`stream:${name}`, async () => {
      const expected = this.expectedStream(name);
      const jsm = await this.jsm();
      const deadline = Date.now() + (this.options.provisionWaitMs ?? DEFAULT_PROVISION_WAIT_MS);
      let creationError: unknown = undefined;
      for (;;) {
        const existing = await jsm.streams.info(name).catch((error: unknown) => {
          if (isNotFound(error)) return undefined;
          throw error;
        });
        if (existing) {
          let problems = streamTampering(existing.config, expected);
          const flagsOnly = problems.every((problem) => /^(deny|allow)_/.test(problem));
          if ((problems.length > 0 && flagsOnly) || (existing.config.max_age ?? 0) !== (expected.max_age ?? 0)) {
            // A stream of an older Ratchet, or other limits: a connection allowed to update it (the orchestrator) brings it in line.
            const { deny_delete, deny_purge, allow_rollup_hdrs, allow_direct, max_age } = expected;
            const updated = await jsm.streams.update(name, { ...existing.config, deny_delete, deny_purge, allow_rollup_hdrs, allow_direct, max_age: max_age ?? 0 }).catch(() => undefined);
            if (updated) problems = streamTampering(updated.config, expected);
          }
          if (problems.length > 0) throw tamperedStreamError(name, problems);
          return;
        }
        if (creationError === undefined) {
          creationError = await jsm.streams.add(expected).then(
            () => null,
            (error: unknown) => error,
          );
          if (creationError === null) return;
          if (!hasCause(creationError, PermissionViolationError) && !/permission/i.test(String(creationError))) throw creationError;
        }
        if (Date.now() >= deadline) {
          throw new AppError(
            ErrorCode.UNAVAILABLE,
            `JetStream stream ${name} does not exist and this service may not create it: the orchestrator creates every stream when it starts; start it (with its own NATS user), then this service goes on`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, PROVISION_POLL_MS));
      }
    });
  }

  /**
   * Creates every stream and every queue's consumer of a Ratchet
   * deployment, or checks them when they exist: what the orchestrator does
   * when it starts, so that no other role needs the right to create streams
   * or consumers. Consumers that push messages somewhere (a
   * `deliver_subject`) are never Ratchet's: they are deleted, and reported.
   * @returns the push consumers removed, as `<stream>/<consumer> -> <subject>`.
   * @throws AppError FAILED_PRECONDITION for a tampered stream or consumer;
   *   PERMISSION_DENIED for a NATS user that may not provision.
   */
  async provision(queues: Readonly<Record<string, WorkQueueOptions>>): Promise<string[]> {
    this.assertUsable('set up the JetStream streams');
    const limits = { eventRetentionMs: this.options.eventRetentionMs ?? DEFAULT_EVENT_RETENTION_MS, payloadTtlMs: this.options.payloadTtlMs ?? DEFAULT_PAYLOAD_TTL_MS };
    const jsm = await this.jsm();
    const removed: string[] = [];
    const streams = expectedStreams(Object.keys(queues), limits);
    // Every stream checked before anything is changed: a tampered one stops it all.
    for (const stream of streams) await this.ensureStream(stream.name);
    for (const stream of streams) {
      const consumers = await jsm.consumers.list(stream.name).next();
      for (const consumer of consumers) {
        if (!consumer.config.deliver_subject) continue;
        await jsm.consumers.delete(stream.name, consumer.name);
        removed.push(`${stream.name}/${consumer.name} -> ${consumer.config.deliver_subject}`);
      }
    }
    for (const [queue, options] of Object.entries(queues)) await this.ensureWorkQueue(queue, options);
    return removed;
  }

  async ensureWorkQueue(queue: string, options: WorkQueueOptions = {}): Promise<WorkQueueSettings> {
    assertToken('queue name', queue);
    this.assertUsable(`create work queue ${queue}`);
    const wanted = { ackWaitMs: options.ackWaitMs ?? 30_000, maxDeliver: options.maxDeliver ?? 5 };
    return this.once(`queue:${queue}`, async () => {
      await this.ensureStream(queueStream(queue));
      await this.ensureStream(DEAD_LETTER_STREAM);
      const jsm = await this.jsm();
      const config = {
        durable_name: WORKERS,
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(wanted.ackWaitMs),
        max_deliver: wanted.maxDeliver,
        filter_subject: Subjects.queue(queue),
      };
      const deadline = Date.now() + (this.options.provisionWaitMs ?? DEFAULT_PROVISION_WAIT_MS);
      let created = false;
      for (;;) {
        let info = await jsm.consumers.info(queueStream(queue), WORKERS).catch((error: unknown) => {
          if (isNotFound(error)) return undefined;
          throw error;
        });
        if (info) {
          checkWorkersConsumer(queue, info);
          if (info.config.ack_wait !== config.ack_wait || info.config.max_deliver !== config.max_deliver) {
            // A connection that may not update it works with the consumer's settings (the orchestrator's).
            info = await jsm.consumers.update(queueStream(queue), WORKERS, { ack_wait: config.ack_wait, max_deliver: config.max_deliver }).catch(() => info as ConsumerInfo);
          }
          return { ackWaitMs: Math.round((info.config.ack_wait ?? config.ack_wait) / 1_000_000), maxDeliver: info.config.max_deliver ?? wanted.maxDeliver };
        }
        if (!created) {
          created = true;
          const failure = await jsm.consumers.add(queueStream(queue), config).then(
            () => null,
            (error: unknown) => error,
          );
          if (failure === null) continue;
          if (!hasCause(failure, PermissionViolationError) && !/permission/i.test(String(failure))) throw failure;
        }
        if (Date.now() >= deadline) {
          throw new AppError(
            ErrorCode.UNAVAILABLE,
            `the workers' consumer of queue ${queue} does not exist and this service may not create it: the orchestrator creates it when it starts; start it (with its own NATS user), then this service goes on`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, PROVISION_POLL_MS));
      }
    });
  }

  async enqueue(queue: string, data: Uint8Array, options: { id: string; headers?: Headers }): Promise<void> {
    this.assertUsable(`enqueue on ${queue}`);
    assertToken('queue name', queue);
    await this.ensureStream(queueStream(queue));
    const subject = Subjects.queue(queue);
    const outgoing = await this.offload(data, { ...options.headers, [Header.JOB_ID]: options.id }, subject, `job ${options.id} of ${queue}`);
    try {
      const ack = await this.js.publish(subject, outgoing.data, { msgID: options.id, headers: toNatsHeaders(outgoing.headers) });
      // A duplicate is dropped by the stream; the first enqueue's object is the one its job names.
      if (ack.duplicate && outgoing.object !== undefined) void this.payloads.remove(outgoing.object, subject);
    } catch (error) {
      if (outgoing.object !== undefined) void this.payloads.remove(outgoing.object, subject);
      throw jetStreamError(`enqueue job ${options.id} on ${queue}`, error);
    }
  }

  async puller(queue: string): Promise<Puller> {
    this.assertUsable(`consume ${queue}`);
    await this.ensureWorkQueue(queue);
    const consumer = await this.js.consumers.get(queueStream(queue), WORKERS).catch((error: unknown) => {
      throw jetStreamError(`consume ${queue}`, error);
    });
    let closed = false;
    return {
      next: async (expiresMs) => {
        this.assertUsable(`pull from ${queue}`);
        if (closed) throw new AppError(ErrorCode.UNAVAILABLE, `puller for ${queue} is closed`, { retryable: false });
        let message: JsMsg | null;
        try {
          message = await consumer.next({ expires: Math.max(MIN_PULL_EXPIRES_MS, expiresMs) });
        } catch (error) {
          if (this.closed || closed) throw new AppError(ErrorCode.UNAVAILABLE, `pull from ${queue} stopped: connection closed`, { retryable: false, cause: error });
          throw jetStreamError(`pull from ${queue}`, error);
        }
        return message ? this.delivery(queue, message) : null;
      },
      close: () => {
        closed = true;
        return Promise.resolve();
      },
    };
  }

  /**
   * The delivery of `message`, with its payload object read when it has
   * one; the object is deleted once the job is acked or terminated.
   * @throws AppError UNAVAILABLE (retryable) when the job's payload object is
   *   gone (it waited in the queue past the payload TTL); the job is then
   *   dead-lettered with that reason, and the next pull goes on.
   */
  private async delivery(queue: string, message: JsMsg): Promise<Delivery> {
    const headers = fromNatsHeaders(message.headers);
    const id = headers[Header.JOB_ID] ?? `${message.info.stream}:${message.seq}`;
    const reference = headers[Header.PAYLOAD_OBJECT];
    if (reference === undefined) return toDelivery(message, id, message.data, headers);
    delete headers[Header.PAYLOAD_OBJECT];
    const subject = Subjects.queue(queue);
    let data: Uint8Array;
    let object: PayloadRef | undefined;
    try {
      object = parsePayloadRef(reference);
      data = await this.payloads.read(object, subject, `job ${id} of ${queue}`);
    } catch (error) {
      if (!(error instanceof PayloadGoneError) && AppError.from(error).code !== ErrorCode.INVALID_ARGUMENT) {
        // JetStream hiccup: the job comes back once its payload can be read.
        ignoreClosed(() => message.nak(1_000));
        throw error;
      }
      try {
        const reason = AppError.from(error);
        await this.publishDeadLetter(queue, id, EMPTY, headers, `${reason.code}: ${reason.message}`);
        message.term();
      } catch {
        ignoreClosed(() => message.nak(1_000));
      }
      throw error;
    }
    const taken = object;
    return toDelivery(message, id, data, headers, () => this.payloads.remove(taken, subject));
  }

  async deadLetter(queue: string, delivery: Delivery, reason: string): Promise<void> {
    this.assertUsable(`dead-letter a job of ${queue}`);
    await this.publishDeadLetter(queue, delivery.id, delivery.data, delivery.headers, reason);
  }

  /** A large dead letter keeps its payload in a stream without TTL: the job's own object goes when the job is terminated. */
  private async publishDeadLetter(queue: string, id: string, data: Uint8Array, headers: Headers, reason: string): Promise<void> {
    await this.ensureStream(DEAD_LETTER_STREAM);
    const subject = Subjects.deadLetter(queue);
    const outgoing = await this.offload(data, { ...headers, [Header.JOB_ID]: id, [Header.DEAD_LETTER_REASON]: reason }, subject, `dead letter ${id} of ${queue}`, DEAD_LETTER_PAYLOAD_STREAM);
    try {
      await this.js.publish(subject, outgoing.data, { headers: toNatsHeaders(outgoing.headers) });
    } catch (error) {
      throw jetStreamError(`dead-letter job ${id} of ${queue}`, error);
    }
  }

  /**
   * How far behind the workers of `queue` are: jobs waiting for a worker
   * (`pending`) and jobs taken and not yet acknowledged (`ackPending`), as
   * the workers' shared consumer reports them. For metrics and autoscaling.
   * @throws AppError UNAVAILABLE when JetStream does not answer or the queue
   *   was never set up; PERMISSION_DENIED for a user that does not work it.
   */
  async workQueueBacklog(queue: string): Promise<{ pending: number; ackPending: number }> {
    this.assertUsable(`read the backlog of ${queue}`);
    assertToken('queue name', queue);
    try {
      const info = await (await this.jsm()).consumers.info(queueStream(queue), WORKERS);
      return { pending: info.num_pending, ackPending: info.num_ack_pending };
    } catch (error) {
      throw jetStreamError(`read the backlog of ${queue}`, error);
    }
  }

  async deadLetters(queue: string): Promise<DeadLetter[]> {
    await this.ensureStream(DEAD_LETTER_STREAM);
    const subject = Subjects.deadLetter(queue);
    const info = await (await this.jsm()).streams.info(DEAD_LETTER_STREAM, { subjects_filter: subject });
    const count = info.state.subjects?.[subject] ?? 0;
    if (count === 0) return [];
    const consumer = await this.js.consumers.get(DEAD_LETTER_STREAM, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
    const letters: DeadLetter[] = [];
    const messages = await consumer.fetch({ max_messages: count, expires: 5000 });
    for await (const message of messages) {
      const headers = fromNatsHeaders(message.headers);
      const id = headers[Header.JOB_ID] ?? String(message.seq);
      const object = headers[Header.PAYLOAD_OBJECT];
      let data = message.data;
      if (object !== undefined) {
        delete headers[Header.PAYLOAD_OBJECT];
        // A payload that cannot be read leaves the letter listed with empty data rather than hiding every other letter.
        data = await Promise.resolve()
          .then(() => this.payloads.read(parsePayloadRef(object), subject, `dead letter ${id} of ${queue}`, DEAD_LETTER_PAYLOAD_STREAM))
          .catch(() => EMPTY);
      }
      letters.push({ id, reason: headers[Header.DEAD_LETTER_REASON] ?? '', data, headers });
      if (letters.length >= count) break;
    }
    return letters;
  }

  async appendEvent(taskId: string, data: Uint8Array, headers: Headers = {}): Promise<StoredEvent> {
    assertToken('task id', taskId);
    this.assertUsable(`append an event for task ${taskId}`);
    await this.ensureStream(EVENTS_STREAM);
    try {
      const ack = await this.js.publish(Subjects.events(taskId), data, { headers: toNatsHeaders(headers) });
      return { sequence: ack.seq, data, headers };
    } catch (error) {
      throw jetStreamError(`append an event for task ${taskId}`, error);
    }
  }

  async readEvents(taskId: string, options: { fromSequence?: number } = {}): Promise<EventReader> {
    assertToken('task id', taskId);
    this.assertUsable(`read events of task ${taskId}`);
    await this.ensureStream(EVENTS_STREAM);
    const from = options.fromSequence ?? 0;
    const consumer = await this.js.consumers.get(EVENTS_STREAM, {
      filter_subjects: Subjects.events(taskId),
      ...(from > 1 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from } : { deliver_policy: DeliverPolicy.All }),
    });
    const messages = await consumer.consume();
    // One iteration per reader, as with the in-process transport: every
    // `for await` over the reader continues where the last one stopped.
    const events = (async function* (): AsyncGenerator<StoredEvent> {
      for await (const message of messages) {
        yield { sequence: message.seq, data: message.data, headers: fromNatsHeaders(message.headers) };
      }
    })();
    return {
      [Symbol.asyncIterator]: () => events,
      // stop() rather than close(): close() waits for the iteration to drain,
      // which never happens when nobody is pulling from the iterator.
      stop: () => Promise.resolve(messages.stop()),
    };
  }

  /**
   * Closes the connection. Payload reads and deletions in flight get a
   * moment (2 s at most) to finish, so a clean shutdown leaves no objects
   * behind for the TTL to collect.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.nc.isClosed()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.loading]), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)))]);
      clearTimeout(timer);
      await this.payloads.settle(CLOSE_GRACE_MS);
    }
    await this.nc.close();
  }
}

function isNotFound(error: unknown): boolean {
  return error instanceof Error && /not found/i.test(error.message);
}

/**
 * Refuses a workers' consumer that is not the pull consumer Ratchet
 * creates: one that pushes jobs to a subject, reads other subjects or
 * needs no acks would hand jobs to someone else.
 */
function checkWorkersConsumer(queue: string, info: ConsumerInfo): void {
  const problems: string[] = [];
  if (info.config.deliver_subject) problems.push(`it pushes to ${info.config.deliver_subject}`);
  const filters = info.config.filter_subjects ?? (info.config.filter_subject ? [info.config.filter_subject] : []);
  if (filters.length !== 1 || filters[0] !== Subjects.queue(queue)) problems.push(`it reads ${JSON.stringify(filters)}`);
  if (info.config.ack_policy !== AckPolicy.Explicit) problems.push(`ack policy ${info.config.ack_policy}`);
  if (problems.length > 0) {
    throw new AppError(
      ErrorCode.FAILED_PRECONDITION,
      `the workers' consumer of queue ${queue} is not as Ratchet creates it (${problems.join('; ')}): it may have been tampered with, so no job is taken from it; remove it (nats consumer rm ${queueStream(queue)} ${WORKERS}) and restart the orchestrator`,
      { retryable: false },
    );
  }
}

/** `settled` runs once the job is done for good (acked or terminated): it deletes the job's payload object. */
function toDelivery(message: JsMsg, id: string, data: Uint8Array, headers: Headers, settled?: () => Promise<void>): Delivery {
  return {
    id,
    data,
    headers,
    deliveryCount: message.info.deliveryCount,
    ack: async () => {
      try {
        await message.ackAck();
      } catch (error) {
        throw new AppError(ErrorCode.UNAVAILABLE, 'could not ack the job: the NATS connection is gone; it will be redelivered', { cause: error });
      }
      await settled?.();
    },
    // Without a connection these cannot reach the server; the job comes back
    // after its ack deadline anyway, so there is nothing to report.
    nak: (delayMs) => ignoreClosed(() => message.nak(delayMs)),
    term: () => {
      ignoreClosed(() => message.term());
      void settled?.();
    },
    working: () => ignoreClosed(() => message.working()),
  };
}

/** The server list, with a `user:password@` of the first URL taken out as credentials (nats.js would drop it). */
function parseServers(url: string): { servers: string[]; urlCredentials: NatsCredentials | undefined } {
  let urlCredentials: NatsCredentials | undefined;
  const servers = url.split(',').map((entry) => {
    const trimmed = entry.trim();
    const match = /^([a-z]+:\/\/)([^@/]*)@(.*)$/i.exec(trimmed);
    if (match === null) return trimmed;
    const [, scheme, userInfo, rest] = match as unknown as [string, string, string, string];
    const colon = userInfo.indexOf(':');
    urlCredentials ??= colon < 0 ? { user: decodeURIComponent(userInfo) } : { user: decodeURIComponent(userInfo.slice(0, colon)), password: decodeURIComponent(userInfo.slice(colon + 1)) };
    return `${scheme}${rest}`;
  });
  return { servers, urlCredentials };
}

/** The URL with any password replaced, for messages. */
function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/g, '//$1:***@');
}

function authenticatorOf(credentials: NatsCredentials): Authenticator {
  const encoder = new TextEncoder();
  if (credentials.creds !== undefined) return credsAuthenticator(encoder.encode(credentials.creds));
  if (credentials.nkeySeed !== undefined) return nkeyAuthenticator(encoder.encode(credentials.nkeySeed.trim()));
  if (credentials.user !== undefined) return usernamePasswordAuthenticator(credentials.user, credentials.password ?? '');
  throw new AppError(ErrorCode.CONFIG_INVALID, 'NATS credentials need a user (with its password), an NKey seed or a creds file', { retryable: false });
}

function isAuthError(error: unknown): boolean {
  if (hasCause(error, AuthorizationError) || hasCause(error, UserAuthenticationExpiredError)) return true;
  let current: unknown = error;
  while (current instanceof Error) {
    if (/authorization violation/i.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}

function ignoreClosed(action: () => void): void {
  try {
    action();
  } catch {
    // connection closed or draining
  }
}

function assertToken(what: string, value: string): void {
  if (!isSubjectToken(value)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `invalid ${what} "${value}": use 1-128 letters, digits, "_" or "-"`);
  }
}

function toNatsHeaders(record: Headers | undefined): MsgHdrs | undefined {
  if (!record) return undefined;
  const keys = Object.keys(record);
  if (keys.length === 0) return undefined;
  const natsHeaders = createNatsHeaders();
  for (const key of keys) natsHeaders.set(key, record[key] as string);
  return natsHeaders;
}

function fromNatsHeaders(natsHeaders: MsgHdrs | undefined): Headers {
  const record: Headers = {};
  if (!natsHeaders) return record;
  for (const key of natsHeaders.keys()) record[key.toLowerCase()] = natsHeaders.get(key);
  return record;
}

function hasCause(error: unknown, type: abstract new (...args: never[]) => Error): boolean {
  let current: unknown = error;
  while (current instanceof Error) {
    if (current instanceof type) return true;
    current = (current as Error).cause;
  }
  return false;
}

function requestError(subject: string, timeoutMs: number, error: unknown): AppError {
  if (hasCause(error, PermissionViolationError)) {
    return new AppError(ErrorCode.PERMISSION_DENIED, `not allowed to send requests on ${subject}: this service's NATS user has no permission for it (see deploy/SECURITY.md)`, { cause: error, retryable: false });
  }
  if (hasCause(error, NoRespondersError) || (error instanceof RequestError && error.isNoResponders())) {
    return new AppError(ErrorCode.UNAVAILABLE, `no responders on ${subject}: is the service that serves it running?`, { cause: error });
  }
  if (hasCause(error, TimeoutError)) {
    return new AppError(ErrorCode.DEADLINE_EXCEEDED, `no reply on ${subject} within ${timeoutMs} ms`, { cause: error });
  }
  if (hasCause(error, ClosedConnectionError) || hasCause(error, DrainingConnectionError)) {
    return new AppError(ErrorCode.UNAVAILABLE, `request on ${subject} failed: the NATS connection is closing`, { cause: error, retryable: false });
  }
  if (error instanceof Error && /max.?payload/i.test(error.message)) {
    return new AppError(ErrorCode.INVALID_ARGUMENT, `request on ${subject} is larger than the server's max_payload: ${error.message}`, { cause: error });
  }
  return new AppError(ErrorCode.UNAVAILABLE, `request on ${subject} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

function jetStreamError(what: string, error: unknown): AppError {
  if (AppError.is(error)) return error;
  if (hasCause(error, PermissionViolationError)) {
    return new AppError(ErrorCode.PERMISSION_DENIED, `could not ${what}: this service's NATS user has no permission for it (see deploy/SECURITY.md)`, { cause: error, retryable: false });
  }
  if (hasCause(error, TimeoutError)) return new AppError(ErrorCode.UNAVAILABLE, `could not ${what}: JetStream did not answer in time`, { cause: error });
  if (hasCause(error, ClosedConnectionError)) return new AppError(ErrorCode.UNAVAILABLE, `could not ${what}: the NATS connection is closed`, { cause: error, retryable: false });
  return new AppError(ErrorCode.UNAVAILABLE, `could not ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}
