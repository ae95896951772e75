import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { QdrantClient, Schemas } from '@qdrant/js-client-rest';
import { AppError, backoffDelay, ErrorCode, quoted, retryUntilOpen } from '@ratchet/errors';
import type { VectorHit, VectorPayload, VectorPoint, VectorSearch, VectorStore } from '../domain/vector-store';

export interface QdrantVectorStoreOptions {
  /**
   * Qdrant's REST endpoint, e.g. `http://qdrant:6333`. As in any URL, a
   * missing port is the scheme's (80 or 443), not Qdrant's 6333; a path (a
   * proxy's prefix) is kept.
   */
  readonly url: string;
  /** Sent as the `api-key` header; omit for a Qdrant without authentication. */
  readonly apiKey?: string;
  /** Default `ratchet_lessons`. */
  readonly collection?: string;
  /**
   * The embedder's vector length when it is known: a missing collection is
   * created with it at open, an existing one of another length is refused.
   * 0 or unset: the collection is created by the first upsert.
   */
  readonly dimension?: number;
  /** Per-request timeout, ms. Default 10 000. */
  readonly timeoutMs?: number;
}

/** Where each setting lives, for messages that say what to change. */
const configKeys = {
  url: 'RATCHET_MEMORY_QDRANT_URL (memory.qdrant.url)',
  apiKey: 'RATCHET_MEMORY_QDRANT_API_KEY (memory.qdrant.apiKey)',
  collection: 'RATCHET_MEMORY_QDRANT_COLLECTION (memory.qdrant.collection)',
  timeoutMs: 'RATCHET_MEMORY_QDRANT_TIMEOUT_MS (memory.qdrant.timeoutMs)',
} as const;

export const DEFAULT_QDRANT_COLLECTION = 'ratchet_lessons';
const defaultTimeoutMs = 10_000;
/** Qdrant's names end up in URL paths; this is stricter than Qdrant and never needs escaping. */
const collectionName = /^[A-Za-z0-9_-]{1,255}$/;
/** The Query API (`POST /points/query`) came with 1.10. */
const minimumVersion = [1, 10] as const;

/** Whether a Qdrant server version (`1.12.4`, `1.10.0-dev`) has the Query API this store uses. */
export function isSupportedQdrantVersion(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  return major > minimumVersion[0] || (major === minimumVersion[0] && minor >= minimumVersion[1]);
}
/** Points per upsert request: a thousand 1536-dimension vectors as JSON are about 20 MB, near Qdrant's 32 MB request limit. */
const upsertBatch = 256;

/** Payload keys of a point; the point id is a UUID made from `lesson_id`. */
const field = { id: 'lesson_id', kind: 'kind', language: 'language', scope: 'scope', embedder: 'embedder' } as const;
/** Every key searches filter on gets a keyword index, so filtered search does not read every payload. */
const indexedFields = [field.embedder, field.scope, field.kind, field.language] as const;

// A fixed random namespace (RFC 4122 name-based ids): the same lesson id gives the same point id everywhere, forever.
const lessonNamespace = '0af438ae-161a-47fe-9fed-a78893e19db8';

/**
 * RFC 4122 version-5 UUID of `name` in `namespace` (SHA-1 of the namespace's
 * 16 bytes followed by the name in UTF-8), lower-case with hyphens.
 *
 * @throws RangeError when `namespace` is not a UUID.
 */
export function uuidV5(name: string, namespace: string): string {
  const namespaceHex = namespace.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(namespaceHex)) throw new RangeError(`namespace must be a UUID, got ${quoted(namespace)}`);
  const hash = createHash('sha1').update(Buffer.from(namespaceHex, 'hex')).update(name, 'utf8').digest();
  hash[6] = ((hash[6] as number) & 0x0f) | 0x50;
  hash[8] = ((hash[8] as number) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The Qdrant point id of a lesson id: Qdrant takes only unsigned integers and
 * UUIDs, so lesson ids map to version-5 UUIDs, the same on every replica and
 * every run (upserts replace, deletes find the point). The lesson id itself
 * is kept in the payload.
 */
export function pointIdOf(id: string): string {
  return uuidV5(id, lessonNamespace);
}

/**
 * The Qdrant filter of a search: the embedder always (vectors of different
 * embedders are not comparable), kind and language when given and not empty
 * (as pgvector treats them), scopes as "any of".
 *
 * @returns undefined when nothing can match (an empty list of scopes), so no request is made.
 */
export function searchFilterOf(options: Pick<VectorSearch, 'embedder' | 'filter'>): Schemas['Filter'] | undefined {
  const scopes = options.filter?.scopes;
  if (scopes !== undefined && scopes.length === 0) return undefined;
  const must: Schemas['FieldCondition'][] = [{ key: field.embedder, match: { value: options.embedder } }];
  if (options.filter?.kind) must.push({ key: field.kind, match: { value: options.filter.kind } });
  if (options.filter?.language) must.push({ key: field.language, match: { value: options.filter.language } });
  if (scopes !== undefined) must.push({ key: field.scope, match: { any: [...new Set(scopes)] } });
  return { must };
}

/** What a point stores besides its vector. */
export function pointPayloadOf(point: Pick<VectorPoint, 'id' | 'payload'>): Record<string, string> {
  return { [field.id]: point.id, [field.kind]: point.payload.kind, [field.language]: point.payload.language, [field.scope]: point.payload.scope, [field.embedder]: point.payload.embedder };
}

/** A point's payload as the port returns it; undefined for a point Ratchet did not write. */
function hitPayloadOf(payload: Record<string, unknown> | null | undefined): { id: string; payload: VectorPayload } | undefined {
  const text = (key: string) => (typeof payload?.[key] === 'string' ? (payload[key] as string) : undefined);
  const id = text(field.id);
  if (id === undefined) return undefined;
  return { id, payload: { kind: text(field.kind) ?? '', language: text(field.language) ?? '', scope: text(field.scope) ?? '', embedder: text(field.embedder) ?? '' } };
}

/** JSON has no NaN or Infinity; pgvector's adapter stores them as 0 too. */
const plainVector = (vector: Float32Array): number[] => Array.from(vector, (value) => (Number.isFinite(value) ? value : 0));

/** What a failed request was about, for messages. */
export interface QdrantRequestContext {
  /** The URL as messages show it (no credentials, no query). */
  readonly url: string;
  readonly collection: string;
  /** What was being done, after "while", e.g. `searching collection ratchet_lessons`. */
  readonly action: string;
  readonly timeoutMs: number;
  /** Whether an API key was sent: a 401 means a different thing with and without one. */
  readonly withApiKey: boolean;
}

// The client rejects with errors from its own modules and, for connections, from fetch (possibly of another realm under
// jest's vm sandbox): these read fields, not `instanceof`.
const fieldOf = (value: unknown, key: string): unknown => (typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined);

/** The HTTP status of a client error for a non-2xx answer (`ApiError`), else undefined. */
export function httpStatusOf(error: unknown): number | undefined {
  const status = fieldOf(error, 'status');
  return typeof status === 'number' && fieldOf(error, 'name') !== 'AppError' ? status : undefined;
}

/** Qdrant's own message from an error body (`{"status":{"error":"..."}}`), quoted and cut short. */
function reasonOf(error: unknown): string {
  const data = fieldOf(error, 'data');
  const reason = fieldOf(fieldOf(data, 'status'), 'error');
  if (typeof reason === 'string' && reason !== '') return quoted(reason, 300);
  return typeof data === 'string' && data.trim() !== '' ? quoted(data.trim(), 300) : '';
}

/** `ECONNREFUSED`, `ENOTFOUND`, a TLS code, ... from a failed fetch. */
function connectionCodeOf(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current !== undefined && depth < 4; current = fieldOf(current, 'cause'), depth += 1) {
    const code = fieldOf(current, 'code');
    if (typeof code === 'string' && code !== '') return code;
  }
  return undefined;
}

const certificateCode = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/;

/**
 * The AppError for anything a Qdrant request rejected with: connection
 * failures UNAVAILABLE (retryable) naming the URL and its variable; an
 * untrusted TLS certificate FAILED_PRECONDITION; 401/403 UNAUTHENTICATED
 * (not retryable) saying to set the API key; 429 RESOURCE_EXHAUSTED; 5xx
 * UNAVAILABLE; 404 NOT_FOUND; other 4xx INVALID_ARGUMENT with Qdrant's
 * reason; a client timeout DEADLINE_EXCEEDED. An AppError passes through.
 */
export function qdrantErrorOf(error: unknown, context: QdrantRequestContext): AppError {
  if (AppError.is(error)) return error;
  const where = `Qdrant at ${context.url}`;
  const name = fieldOf(error, 'name');
  if (name === 'QdrantClientTimeoutError') {
    return new AppError(ErrorCode.DEADLINE_EXCEEDED, `${where} did not answer within ${context.timeoutMs} ms while ${context.action}; check its load, or raise ${configKeys.timeoutMs}`, { cause: error });
  }
  if (name === 'QdrantClientResourceExhaustedError') {
    return new AppError(ErrorCode.RESOURCE_EXHAUSTED, `${where} is rate limiting requests (while ${context.action}); retry later`, { cause: error });
  }
  const status = httpStatusOf(error);
  if (status !== undefined) {
    const reason = reasonOf(error);
    const answered = `${where} answered HTTP ${status} while ${context.action}${reason === '' ? '' : `: ${reason}`}`;
    if (status === 401 || status === 403) {
      const what = !context.withApiKey ? 'it needs an API key' : status === 401 ? 'it refused the API key' : 'the API key may not do this (a read-only key?)';
      // No reason here: it could quote the key.
      return new AppError(ErrorCode.UNAUTHENTICATED, `${where} answered HTTP ${status} while ${context.action}: ${what}; set ${configKeys.apiKey} to a key of that server with read and write access`, { cause: error });
    }
    if (status === 404) return new AppError(ErrorCode.NOT_FOUND, answered, { cause: error });
    if (status === 429) return new AppError(ErrorCode.RESOURCE_EXHAUSTED, `${answered}; retry later`, { cause: error });
    if (status >= 500) return new AppError(ErrorCode.UNAVAILABLE, `${answered}; Qdrant is failing or starting, try again later`, { cause: error, retryable: true });
    return new AppError(ErrorCode.INVALID_ARGUMENT, `${answered}; check that ${configKeys.url} points at Qdrant ${minimumVersion.join('.')} or later`, { cause: error });
  }
  const code = connectionCodeOf(error);
  if (code !== undefined && certificateCode.test(code)) {
    return new AppError(ErrorCode.FAILED_PRECONDITION, `${where} presented a TLS certificate Node does not trust (${code}); give Node its CA with NODE_EXTRA_CA_CERTS, or check ${configKeys.url}`, { cause: error });
  }
  if (code !== undefined || (name === 'TypeError' && fieldOf(error, 'message') === 'fetch failed')) {
    return new AppError(ErrorCode.UNAVAILABLE, `cannot reach ${where} (${code ?? 'connection failed'}) while ${context.action}; check ${configKeys.url} and that Qdrant is running`, { cause: error, retryable: true });
  }
  const message = fieldOf(error, 'message');
  return new AppError(ErrorCode.INTERNAL, `${where} failed while ${context.action}: ${typeof message === 'string' ? message : String(error)}`, { cause: error });
}

/** Settings checked before any request, as CONFIG_INVALID naming the variable. */
function settingsOf(options: QdrantVectorStoreOptions): { url: URL; shownUrl: string; collection: string; dimension: number; timeoutMs: number } {
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(options.url);
  } catch {
    problems.push(`${configKeys.url} must be an http(s) URL such as http://qdrant:6333, got ${quoted(options.url)}`);
  }
  if (url !== undefined && url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`${configKeys.url} must start with http:// or https://`);
  if (url !== undefined && (url.username !== '' || url.password !== '')) problems.push(`${configKeys.url} must not contain a user or password; put the key in ${configKeys.apiKey}`);
  const collection = options.collection ?? DEFAULT_QDRANT_COLLECTION;
  if (!collectionName.test(collection)) problems.push(`${configKeys.collection} must be 1 to 255 letters, digits, _ or -, got ${quoted(collection)}`);
  const dimension = options.dimension ?? 0;
  if (!Number.isInteger(dimension) || dimension < 0) problems.push(`the vector dimension must be an integer >= 0, got ${dimension}`);
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) problems.push(`${configKeys.timeoutMs} must be a positive integer, got ${timeoutMs}`);
  if (options.apiKey !== undefined && options.apiKey.trim() === '') problems.push(`${configKeys.apiKey} is empty; unset it or set the key`);
  if (problems.length > 0 || url === undefined) throw new AppError(ErrorCode.CONFIG_INVALID, `invalid Qdrant settings: ${problems.join('; ')}`);
  const shown = new URL(url);
  shown.search = '';
  shown.hash = '';
  return { url, shownUrl: shown.toString().replace(/\/$/, ''), collection, dimension, timeoutMs };
}

/** The shape a collection must have: one unnamed dense vector of `size`, cosine distance. */
function vectorParamsOf(info: Schemas['CollectionInfo']): { size: number; distance: string } | undefined {
  const vectors = info.config.params.vectors;
  const size = fieldOf(vectors, 'size');
  const distance = fieldOf(vectors, 'distance');
  return typeof size === 'number' && typeof distance === 'string' ? { size, distance } : undefined;
}

/**
 * VectorStore on Qdrant, for distributed mode: one collection (default
 * `ratchet_lessons`) of unnamed vectors with cosine distance, sized by the
 * embedder; points keyed by a UUID of the lesson id (`pointIdOf`), with the
 * lesson id, kind, language, scope and embedder in the payload, all but the
 * id indexed as keywords. Writes wait until Qdrant applied them, so a read
 * after a write sees it. Needs Qdrant 1.10 or later.
 *
 * One collection holds one dimension: after switching to an embedder of
 * another dimension, point `memory.qdrant.collection` at a new collection
 * (the lessons are embedded into it again on start) or delete the old one.
 */
export class QdrantVectorStore implements VectorStore {
  /** The collection's vector size once it exists (found at open, or created by the first upsert). */
  private size: number | undefined;
  private creating: Promise<void> | undefined;

  private constructor(
    private readonly client: QdrantClient,
    private readonly collection: string,
    private readonly shownUrl: string,
    private readonly timeoutMs: number,
    private readonly withApiKey: boolean,
  ) {}

  /**
   * Checks the server and the collection: creates the collection when it is
   * missing and `dimension` is known, creates missing payload indexes, and
   * refuses a collection of another shape.
   *
   * @throws AppError CONFIG_INVALID (bad settings), UNAVAILABLE (unreachable
   *   or failing; retryable), DEADLINE_EXCEEDED, UNAUTHENTICATED (API key
   *   missing or refused), FAILED_PRECONDITION (a server older than 1.10, or
   *   a collection with another dimension, distance or named vectors; the
   *   message says what to do).
   */
  static async open(options: QdrantVectorStoreOptions): Promise<QdrantVectorStore> {
    const settings = settingsOf(options);
    const https = settings.url.protocol === 'https:';
    // Loaded here, not at import: the client (with undici) is most of a second of start-up for every install that keeps vectors elsewhere.
    const { QdrantClient: Client } = require('@qdrant/js-client-rest') as typeof import('@qdrant/js-client-rest');
    const client = new Client({
      url: settings.url.origin,
      // The client ignores a URL's path and puts 6333 for a missing port; both are given explicitly.
      port: settings.url.port === '' ? (https ? 443 : 80) : Number(settings.url.port),
      ...(settings.url.pathname === '/' ? {} : { prefix: settings.url.pathname.replace(/\/+$/, '') }),
      timeout: settings.timeoutMs,
      // As a header rather than `apiKey`, which prints a warning outside the JSON logs for plain http (common inside a cluster).
      ...(options.apiKey === undefined ? {} : { headers: { 'api-key': options.apiKey } }),
      // Its check prints to the console and goes unanswered when it fails; open() checks the version itself.
      checkCompatibility: false,
    });
    const store = new QdrantVectorStore(client, settings.collection, settings.shownUrl, settings.timeoutMs, options.apiKey !== undefined);
    await store.prepare(settings.dimension);
    return store;
  }

  /**
   * `open`, retried with backoff (0.5 s doubling to 10 s) while Qdrant is
   * unreachable, failing or slow, as a service started before Qdrant must.
   *
   * @throws AppError CANCELLED when `signal` aborts first; what `open` throws
   *   for anything else.
   */
  static async openWithRetry(options: QdrantVectorStoreOptions, signal: AbortSignal, onAttemptFailed?: (error: AppError, attempt: number, retryInMs: number) => void): Promise<QdrantVectorStore> {
    return retryUntilOpen(() => QdrantVectorStore.open(options), {
      signal,
      what: `Qdrant at ${options.url}`,
      shouldRetry: (error) => error.isRetryable || error.code === ErrorCode.DEADLINE_EXCEEDED,
      initialDelayMs: 500,
      maxDelayMs: 10_000,
      onAttemptFailed,
    });
  }

  /** For Health: whether the collection answers, and its shape. Never throws. */
  async check(): Promise<{ ok: boolean; detail: string }> {
    try {
      const info = await this.collectionInfo('checking health');
      if (info === undefined) return { ok: true, detail: `connected; collection ${this.collection} is created with the first lesson` };
      return { ok: true, detail: `connected; collection ${this.collection}, ${vectorParamsOf(info)?.size ?? '?'} dimensions` };
    } catch (error) {
      return { ok: false, detail: AppError.from(error).message };
    }
  }

  async upsert(points: readonly VectorPoint[]): Promise<void> {
    // Last one wins, as with one statement per point in pgvector.
    const unique = [...new Map(points.map((point) => [point.id, point])).values()];
    if (unique.length === 0) return;
    const lengths = new Set(unique.map((point) => point.vector.length));
    if (lengths.size > 1 || lengths.has(0)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `vectors to store must share one non-zero length, got lengths ${[...lengths].join(', ')}`);
    const length = unique[0]?.vector.length as number;
    await this.ensureCollection(length);
    this.checkLength(length, `embedder ${unique[0]?.payload.embedder ?? '?'}`);
    for (let start = 0; start < unique.length; start += upsertBatch) {
      const batch = unique.slice(start, start + upsertBatch).map((point) => ({ id: pointIdOf(point.id), vector: plainVector(point.vector), payload: pointPayloadOf(point) }));
      const store = () => this.request(`storing ${batch.length} vectors in collection ${this.collection}`, () => this.client.upsert(this.collection, { wait: true, points: batch }));
      try {
        await store();
      } catch (error) {
        // Someone deleted the collection while the service ran: make it again (lessons the metadata counts as embedded are re-embedded on the next start).
        if (!AppError.is(error) || error.code !== ErrorCode.NOT_FOUND) throw error;
        this.size = undefined;
        await this.ensureCollection(length);
        this.checkLength(length, `embedder ${unique[0]?.payload.embedder ?? '?'}`);
        await store();
      }
    }
  }

  /**
   * The nearest `limit` points of the embedder that pass the filters, then
   * those at or above `minScore` (as pgvector does; Qdrant's own threshold
   * is not documented as inclusive). A vector of another length than the
   * collection's cannot be of an embedder stored there: no hits.
   */
  async search(vector: Float32Array, options: VectorSearch): Promise<VectorHit[]> {
    const filter = searchFilterOf(options);
    if (filter === undefined || options.limit <= 0 || !(await this.comparable(vector))) return [];
    const response = await this.readOrNothing(`searching collection ${this.collection}`, () =>
      this.client.query(this.collection, { query: plainVector(vector), filter, limit: Math.max(1, Math.floor(options.limit)), with_payload: true, with_vector: false }),
    );
    const hits: VectorHit[] = [];
    for (const point of response?.points ?? []) {
      const found = hitPayloadOf(point.payload);
      if (found !== undefined && point.score >= options.minScore) hits.push({ id: found.id, score: point.score, payload: found.payload });
    }
    return hits;
  }

  async scores(vector: Float32Array, ids: readonly string[], embedder: string): Promise<Map<string, number>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0 || !(await this.comparable(vector))) return new Map();
    const filter: Schemas['Filter'] = { must: [{ has_id: unique.map(pointIdOf) }, { key: field.embedder, match: { value: embedder } }] };
    const response = await this.readOrNothing(`scoring ${unique.length} vectors in collection ${this.collection}`, () =>
      // Exact: these are few points chosen by id, and the scores must be the true similarities.
      this.client.query(this.collection, { query: plainVector(vector), filter, limit: unique.length, params: { exact: true }, with_payload: [field.id], with_vector: false }),
    );
    const scores = new Map<string, number>();
    for (const point of response?.points ?? []) {
      const found = hitPayloadOf(point.payload);
      if (found !== undefined) scores.set(found.id, point.score);
    }
    return scores;
  }

  async missing(ids: readonly string[], embedder: string): Promise<string[]> {
    if (ids.length === 0) return [];
    const unique = [...new Set(ids)];
    const records = await this.readOrNothing(`reading ${unique.length} points of collection ${this.collection}`, () =>
      this.client.retrieve(this.collection, { ids: unique.map(pointIdOf), with_payload: [field.id, field.embedder], with_vector: false }),
    );
    const have = new Set((records ?? []).map((record) => hitPayloadOf(record.payload)).flatMap((found) => (found !== undefined && found.payload.embedder === embedder ? [found.id] : [])));
    return ids.filter((id) => !have.has(id));
  }

  async delete(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const points = [...new Set(ids)].map(pointIdOf);
    // Without the collection there is nothing to delete.
    await this.readOrNothing(`deleting ${points.length} points of collection ${this.collection}`, () => this.client.delete(this.collection, { wait: true, points }));
  }

  /** Deletes the whole collection with its points (for tests and tools); a missing one is fine. */
  async dropCollection(): Promise<void> {
    await this.readOrNothing(`deleting collection ${this.collection}`, () => this.client.deleteCollection(this.collection));
    this.size = undefined;
  }

  private async prepare(dimension: number): Promise<void> {
    const root: unknown = await this.request('reading the server version', () => this.client.versionInfo());
    const version = fieldOf(root, 'version');
    if (typeof version !== 'string') {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `the server at ${this.shownUrl} does not answer like Qdrant (no version at /); check ${configKeys.url}`);
    }
    if (!isSupportedQdrantVersion(version)) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `Qdrant at ${this.shownUrl} is version ${quoted(version, 40)}; Ratchet needs ${minimumVersion.join('.')} or later (its Query API): upgrade Qdrant`);
    }
    const info = await this.collectionInfo('reading the collection');
    if (info === undefined) {
      if (dimension > 0) await this.ensureCollection(dimension);
      return;
    }
    await this.adopt(info, dimension);
  }

  /** Takes an existing collection's size after checking its shape, and adds missing payload indexes. */
  private async adopt(info: Schemas['CollectionInfo'], dimension: number): Promise<void> {
    const params = vectorParamsOf(info);
    const elsewhere = `set ${configKeys.collection} to another name (lessons are embedded into it again on start), or delete collection ${this.collection} if nothing else uses it`;
    if (params === undefined) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `collection ${this.collection} at ${this.shownUrl} has named or sparse vectors, so Ratchet did not create it; ${elsewhere}`);
    }
    if (params.distance !== 'Cosine') {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `collection ${this.collection} at ${this.shownUrl} uses ${params.distance} distance, Ratchet needs Cosine; ${elsewhere}`);
    }
    this.size = params.size;
    if (dimension > 0) this.checkLength(dimension, 'the configured embedder');
    const missing = indexedFields.filter((key) => info.payload_schema[key] === undefined);
    for (const key of missing) {
      await this.request(`indexing payload field ${key} of collection ${this.collection}`, () => this.client.createPayloadIndex(this.collection, { field_name: key, field_schema: 'keyword', wait: true }));
    }
  }

  /** Creates the collection with `dimension` when it does not exist yet; one creation at a time per store. */
  private async ensureCollection(dimension: number): Promise<void> {
    if (this.size !== undefined) return;
    this.creating ??= this.create(dimension).finally(() => (this.creating = undefined));
    await this.creating;
  }

  private async create(dimension: number): Promise<void> {
    try {
      await this.request(`creating collection ${this.collection}`, () => this.client.createCollection(this.collection, { vectors: { size: dimension, distance: 'Cosine' } }));
    } catch (error) {
      // 409: another replica created it first; it is checked like any existing collection below.
      if (httpStatusOf(AppError.from(error).cause) !== 409) throw error;
    }
    // Right after a concurrent creation the collection may answer 5xx for a moment while its shards start.
    for (let attempt = 1; ; attempt += 1) {
      try {
        const info = await this.collectionInfo('reading the new collection');
        if (info === undefined) throw new AppError(ErrorCode.UNAVAILABLE, `collection ${this.collection} at ${this.shownUrl} vanished right after it was created; try again`, { retryable: true });
        await this.adopt(info, dimension);
        return;
      } catch (error) {
        if (attempt >= 5 || AppError.from(error).code !== ErrorCode.UNAVAILABLE) throw error;
        // 0.2, 0.4, 0.8 and 1.6 s between the five attempts.
        await delay(backoffDelay(attempt, 200, 1_600));
      }
    }
  }

  /**
   * @param maker who makes vectors of `length`, for the message: `embedder <id>` or `the configured embedder`.
   * @throws AppError FAILED_PRECONDITION when `length` is not the collection's vector size.
   */
  private checkLength(length: number, maker: string): void {
    if (this.size === undefined || this.size === length) return;
    throw new AppError(
      ErrorCode.FAILED_PRECONDITION,
      `collection ${this.collection} at ${this.shownUrl} holds vectors of ${this.size} dimensions, but ${maker} makes ${length}; ` +
        `one collection holds one dimension: set ${configKeys.collection} to a new name (lessons are embedded into it again on start), or delete collection ${this.collection} if nothing else uses it`,
    );
  }

  /** Whether `vector` can be compared with the collection's (false when it does not exist or has another size). */
  private async comparable(vector: Float32Array): Promise<boolean> {
    if (this.size === undefined) {
      // Another replica may have created it since.
      const info = await this.collectionInfo('reading the collection');
      if (info === undefined) return false;
      await this.adopt(info, 0);
    }
    return this.size === vector.length;
  }

  /** The collection's info; undefined when it does not exist. */
  private async collectionInfo(action: string): Promise<Schemas['CollectionInfo'] | undefined> {
    return this.readOrNothing(`${action} (collection ${this.collection})`, () => this.client.getCollection(this.collection));
  }

  /** `request`, with a missing collection (404) as undefined: it has no points. */
  private async readOrNothing<T>(action: string, call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await this.request(action, call);
    } catch (error) {
      if (AppError.is(error) && error.code === ErrorCode.NOT_FOUND) {
        this.size = undefined;
        return undefined;
      }
      throw error;
    }
  }

  private async request<T>(action: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw qdrantErrorOf(error, { url: this.shownUrl, collection: this.collection, action, timeoutMs: this.timeoutMs, withApiKey: this.withApiKey });
    }
  }
}
