import { createHash, randomUUID } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers as createNatsHeaders } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { AppError, ErrorCode } from '@ratchet/errors';
import { PAYLOAD_STREAM, payloadPrefixOf } from './streams';

/** How long an unread payload object lives, in ms: long enough for any call or queued job, short enough that a crashed peer's leftovers go. */
export const DEFAULT_PAYLOAD_TTL_MS = 3_600_000;
/** How long one chunk read may take before the object counts as unreadable, ms. */
const CHUNK_READ_TIMEOUT_MS = 10_000;
/** Chunks stored or read at once. */
const PARALLEL_CHUNKS = 4;
/** Most chunks one object may have (with 1 MB chunks: 4 GB); a reference naming more is refused. */
const MAX_CHUNKS = 4096;

/** A payload object that is no longer there: UNAVAILABLE and retryable, since sending it again helps. */
export class PayloadGoneError extends AppError {
  constructor(message: string) {
    super(ErrorCode.UNAVAILABLE, message, { retryable: true });
  }
}

/**
 * Where a payload is and how to check it, as the message carrying it names
 * it in its `ratchet-payload-object` header: `<id>;<chunks>;<bytes>;<sha256>`.
 */
export interface PayloadRef {
  readonly id: string;
  readonly chunks: number;
  readonly bytes: number;
  readonly sha256: string;
}

export function formatPayloadRef(ref: PayloadRef): string {
  return `${ref.id};${ref.chunks};${ref.bytes};${ref.sha256}`;
}

/**
 * The reference in a received header.
 * @throws AppError INVALID_ARGUMENT for anything but a well-formed reference
 *   (the sender controls it, and it becomes part of a subject).
 */
export function parsePayloadRef(value: string): PayloadRef {
  const [id = '', chunkText = '', byteText = '', sha256 = ''] = /^([A-Za-z0-9-]{1,64});(\d{1,6});(\d{1,13});([0-9a-f]{64})$/.exec(value)?.slice(1) ?? [];
  const chunks = Number(chunkText);
  const bytes = Number(byteText);
  if (id === '' || chunks > MAX_CHUNKS || (bytes === 0) !== (chunks === 0)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `malformed payload reference ${JSON.stringify(value.slice(0, 200))}: expected <id>;<chunks>;<bytes>;<sha256>`);
  }
  return { id, chunks, bytes, sha256 };
}

/**
 * Payloads that do not fit in one NATS message, kept as chunks in a
 * JetStream stream: the sender publishes the chunks under the subject its
 * message goes to and sends only a reference; the receiver reads them back
 * by direct get, checks size and SHA-256, and deletes them by replacing each
 * chunk with an empty rollup. Nothing here creates a stream or a consumer:
 * `ready` makes sure the stream exists and is as Ratchet creates it.
 */
export class PayloadStore {
  /** Deletions started and not finished, so close() can let them land. */
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly ttlMs: number,
    private readonly chunkBytes: () => number,
    private readonly ready: (stream: string) => Promise<void>,
  ) {}

  private chunkSubject(stream: string, destination: string, id: string, index: number): string {
    return `${payloadPrefixOf(stream)}.${destination}.${id}.${index}`;
  }

  /**
   * Stores `data` as a payload of a message to `destination`.
   * @returns the reference the message carries.
   * @throws AppError UNAVAILABLE when JetStream does not take it; PERMISSION_DENIED when this role may not send to `destination`.
   */
  async put(data: Uint8Array, destination: string, what: string, stream = PAYLOAD_STREAM): Promise<PayloadRef> {
    await this.ready(stream);
    const size = Math.max(1, this.chunkBytes());
    const ref: PayloadRef = { id: randomUUID(), chunks: Math.ceil(data.length / size), bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
    try {
      await inBatches(ref.chunks, (index) => this.js.publish(this.chunkSubject(stream, destination, ref.id, index), data.subarray(index * size, (index + 1) * size)).then(() => undefined));
      return ref;
    } catch (error) {
      void this.remove(ref, destination, stream);
      throw storeError(`store the ${data.length}-byte payload of ${what} in stream ${stream}`, error);
    }
  }

  /**
   * The bytes of the payload `ref` of a message received on `destination`.
   * @throws PayloadGoneError (UNAVAILABLE, retryable) when a chunk is gone
   *   (expired, deleted, or its sender crashed before it was complete);
   *   AppError UNAVAILABLE when JetStream cannot be read; DATA_LOSS-like
   *   INVALID_ARGUMENT when the bytes do not match the reference.
   */
  async read(ref: PayloadRef, destination: string, what: string, stream = PAYLOAD_STREAM): Promise<Uint8Array> {
    await this.ready(stream);
    const parts: Uint8Array[] = new Array<Uint8Array>(ref.chunks);
    await inBatches(ref.chunks, async (index) => {
      const subject = this.chunkSubject(stream, destination, ref.id, index);
      let reply;
      try {
        reply = await this.nc.request(`$JS.API.DIRECT.GET.${stream}.${subject}`, undefined, { timeout: CHUNK_READ_TIMEOUT_MS });
      } catch (error) {
        throw storeError(`read the payload of ${what} from stream ${stream}`, error);
      }
      if (reply.headers?.code === 404 || reply.data.length === 0) throw this.gone(ref, what, stream);
      if (reply.headers?.code) throw new AppError(ErrorCode.UNAVAILABLE, `could not read the payload of ${what} from stream ${stream}: ${reply.headers.code} ${reply.headers.description}`);
      parts[index] = reply.data;
    });
    const data = new Uint8Array(ref.bytes);
    let offset = 0;
    for (const part of parts) {
      if (offset + part.length > data.length) throw corrupt(ref, what, `more than the ${ref.bytes} bytes announced`);
      data.set(part, offset);
      offset += part.length;
    }
    if (offset !== data.length) throw corrupt(ref, what, `${offset} of ${ref.bytes} bytes`);
    if (createHash('sha256').update(data).digest('hex') !== ref.sha256) throw corrupt(ref, what, 'bytes whose SHA-256 differs from the reference');
    return data;
  }

  /** Reads payload `ref` and deletes it: for payloads with exactly one reader. Throws as `read`. */
  async take(ref: PayloadRef, destination: string, what: string): Promise<Uint8Array> {
    const data = await this.read(ref, destination, what);
    // The reader does not wait for the deletion: it costs round trips, and the TTL catches any that fail.
    void this.remove(ref, destination);
    return data;
  }

  /**
   * Deletes payload `ref` by replacing each chunk with an empty rollup (the
   * stream allows no other deletion); a failure is ignored (the TTL removes
   * it later). Only the roles that may send or receive on `destination` can.
   */
  remove(ref: PayloadRef, destination: string, stream = PAYLOAD_STREAM): Promise<void> {
    if (stream !== PAYLOAD_STREAM) return Promise.resolve();
    const rollup = createNatsHeaders();
    rollup.set('Nats-Rollup', 'sub');
    const deletion = inBatches(ref.chunks, (index) => this.js.publish(this.chunkSubject(stream, destination, ref.id, index), undefined, { headers: rollup }).then(() => undefined)).then(
      () => undefined,
      () => undefined,
    );
    this.pending.add(deletion);
    void deletion.finally(() => this.pending.delete(deletion));
    return deletion;
  }

  /** Waits up to `timeoutMs` for deletions in flight. */
  async settle(timeoutMs: number): Promise<void> {
    if (this.pending.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.pending]), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  private gone(ref: PayloadRef, what: string, stream: string): PayloadGoneError {
    const ttl = stream === PAYLOAD_STREAM ? ` after ${Math.round(this.ttlMs / 60_000)} min` : '';
    return new PayloadGoneError(`the payload object ${ref.id} of ${what} is gone from stream ${stream} (it expired${ttl}, was already read, or its sender crashed); send it again`);
  }
}

/** Runs `task(0..count-1)`, at most PARALLEL_CHUNKS at a time; the first failure rejects. */
async function inBatches(count: number, task: (index: number) => Promise<void>): Promise<void> {
  for (let start = 0; start < count; start += PARALLEL_CHUNKS) {
    const batch: Promise<void>[] = [];
    for (let index = start; index < Math.min(count, start + PARALLEL_CHUNKS); index++) batch.push(task(index));
    await Promise.all(batch);
  }
}

function corrupt(ref: PayloadRef, what: string, found: string): AppError {
  return new AppError(ErrorCode.INVALID_ARGUMENT, `the payload object ${ref.id} of ${what} holds ${found}: it was altered in the stream; send it again`, { retryable: true });
}

function storeError(what: string, error: unknown): AppError {
  if (AppError.is(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/permission/i.test(message)) {
    return new AppError(ErrorCode.PERMISSION_DENIED, `could not ${what}: this service's NATS user has no permission for it (see deploy/SECURITY.md)`, { cause: error, retryable: false });
  }
  return new AppError(ErrorCode.UNAVAILABLE, `could not ${what}: ${message}`, { cause: error });
}
