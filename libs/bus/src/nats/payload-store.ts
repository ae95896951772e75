import { randomUUID } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { Objm, StorageType } from '@nats-io/obj';
import type { ObjectStore } from '@nats-io/obj';
import { AppError, ErrorCode } from '@ratchet/errors';

/** Object store bucket for payloads too big for one NATS message; objects expire after the TTL. */
export const PAYLOAD_BUCKET = 'RATCHET_PAYLOADS';
/** Payloads of dead letters: kept as long as the dead letters themselves (no TTL). */
export const DEAD_LETTER_PAYLOAD_BUCKET = 'RATCHET_DEADLETTER_PAYLOADS';
/** How long an unread payload object lives, in ms: long enough for any call or queued job, short enough that a crashed peer's leftovers go. */
export const DEFAULT_PAYLOAD_TTL_MS = 3_600_000;
/**
 * A read that receives no chunk for this long gives up: the object was
 * deleted or expired under it (the object store client would wait forever).
 */
const READ_STALL_MS = 10_000;
/** Largest chunk written; the object store client clamps it to the server's max_payload. */
const MAX_CHUNK_BYTES = 1024 * 1024;

const nanos = (ms: number) => Math.round(ms * 1_000_000);

/** A payload object that is no longer there: UNAVAILABLE and retryable, since sending it again helps. */
export class PayloadGoneError extends AppError {
  constructor(message: string) {
    super(ErrorCode.UNAVAILABLE, message, { retryable: true });
  }
}

/**
 * Payloads that do not fit in one NATS message, kept in a JetStream object
 * store: the sender puts the bytes and sends only the object's name; the
 * receiver reads them back. Request and reply objects have a single reader,
 * which deletes them (`take`); job objects are deleted when the job is done.
 */
export class PayloadStore {
  private readonly buckets = new Map<string, Promise<ObjectStore>>();
  /** Deletions started and not finished, so close() can let them land. */
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly js: JetStreamClient,
    private readonly ttlMs: number,
  ) {}

  private bucket(name: string): Promise<ObjectStore> {
    let bucket = this.buckets.get(name);
    if (!bucket) {
      // Creating opens the bucket when it exists; every process does it once per connection.
      bucket = new Objm(this.js)
        .create(name, {
          storage: StorageType.File,
          ...(name === PAYLOAD_BUCKET ? { ttl: nanos(this.ttlMs), description: 'Ratchet payloads too large for one NATS message' } : { description: 'Payloads of Ratchet dead letters' }),
        })
        .catch((error: unknown) => {
          this.buckets.delete(name);
          throw new AppError(ErrorCode.UNAVAILABLE, `cannot open the JetStream object store bucket ${name}: ${messageOf(error)}; is JetStream enabled on the NATS server (-js)?`, { cause: error });
        });
      this.buckets.set(name, bucket);
    }
    return bucket;
  }

  /**
   * Stores `data` under a fresh name.
   * @returns the object's name.
   * @throws AppError UNAVAILABLE when JetStream does not take it.
   */
  async put(data: Uint8Array, what: string, bucketName = PAYLOAD_BUCKET): Promise<string> {
    const bucket = await this.bucket(bucketName);
    const name = randomUUID();
    try {
      await bucket.putBlob({ name, options: { max_chunk_size: MAX_CHUNK_BYTES } }, data);
      return name;
    } catch (error) {
      throw new AppError(ErrorCode.UNAVAILABLE, `could not store the ${data.length}-byte payload of ${what} in object store bucket ${bucketName}: ${messageOf(error)}`, { cause: error });
    }
  }

  /**
   * The bytes of object `name`.
   * @throws PayloadGoneError (UNAVAILABLE, retryable) when the object is
   *   gone (expired, deleted, or its sender crashed before it was complete);
   *   AppError UNAVAILABLE when JetStream cannot be read.
   */
  async read(name: string, what: string, bucketName = PAYLOAD_BUCKET): Promise<Uint8Array> {
    const bucket = await this.bucket(bucketName);
    let result;
    try {
      result = await bucket.get(name);
    } catch (error) {
      throw new AppError(ErrorCode.UNAVAILABLE, `could not read the payload of ${what} from object store bucket ${bucketName}: ${messageOf(error)}`, { cause: error });
    }
    if (result === null) throw this.gone(name, what, bucketName);
    // Awaited below; a read that gives up early must not leave its rejection unhandled.
    result.error.catch(() => undefined);
    const data = new Uint8Array(result.info.size);
    let offset = 0;
    const reader = result.data.getReader();
    try {
      for (;;) {
        let timer: NodeJS.Timeout | undefined;
        const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), READ_STALL_MS)));
        const next = await Promise.race([reader.read(), stalled]).finally(() => clearTimeout(timer));
        if (next === 'stalled') {
          await reader.cancel().catch(() => undefined);
          throw this.gone(name, what, bucketName);
        }
        if (next.done) break;
        if (offset + next.value.length > data.length) throw new Error(`object ${name} holds more than the ${data.length} bytes it announced`);
        data.set(next.value, offset);
        offset += next.value.length;
      }
      const error = await result.error;
      if (error) throw error;
      if (offset !== data.length) throw new Error(`object ${name} ended after ${offset} of ${data.length} bytes`);
      return data;
    } catch (error) {
      if (AppError.is(error)) throw error;
      throw new AppError(ErrorCode.UNAVAILABLE, `could not read the payload of ${what} from object store bucket ${bucketName}: ${messageOf(error)}`, { cause: error });
    } finally {
      reader.releaseLock();
    }
  }

  /** Reads object `name` and deletes it: for payloads with exactly one reader. Throws as `read`. */
  async take(name: string, what: string): Promise<Uint8Array> {
    const data = await this.read(name, what);
    // The reader does not wait for the deletion: it costs round trips, and the TTL catches any that fail.
    void this.remove(name);
    return data;
  }

  /** Deletes object `name`; a failure is ignored (the bucket's TTL removes it later). */
  remove(name: string, bucketName = PAYLOAD_BUCKET): Promise<void> {
    const deletion = this.bucket(bucketName)
      .then((bucket) => bucket.delete(name))
      .then(
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

  private gone(name: string, what: string, bucketName: string): PayloadGoneError {
    const ttl = bucketName === PAYLOAD_BUCKET ? ` after ${Math.round(this.ttlMs / 60_000)} min` : '';
    return new PayloadGoneError(
      `the payload object ${name} of ${what} is gone from object store bucket ${bucketName} (it expired${ttl}, was already read, or its sender crashed); send it again`,
    );
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
