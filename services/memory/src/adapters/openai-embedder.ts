import { setTimeout as delay } from 'node:timers/promises';
import { AppError, backoffDelay, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import type { Embedder } from '../domain/hashing-embedder';

export interface OpenAiEmbedderConfig {
  /**
   * Base URL of an OpenAI-compatible API, up to and including `/v1`
   * (OpenAI `https://api.openai.com/v1`, Ollama `http://localhost:11434/v1`,
   * vLLM and llama.cpp `http://host:port/v1`, LM Studio `http://localhost:1234/v1`).
   */
  readonly baseUrl: string;
  /** Sent as `model`, e.g. `text-embedding-3-small`. */
  readonly model: string;
  /** Sent as `Authorization: Bearer <key>`; omit for local servers that take no key. */
  readonly apiKey?: string;
  /**
   * Sent as `dimensions` (models that can shorten their vectors, such as
   * OpenAI's text-embedding-3-*); also the dimension every response must have.
   * Default: not sent, the dimension is learnt from the first response.
   */
  readonly dimensions?: number;
  /** Texts per request. Default 64. */
  readonly batchSize?: number;
  /** Per-attempt timeout, ms, reading the body included. Default 30000. A timeout is not retried. */
  readonly timeoutMs?: number;
  /** Retries after the first attempt, on 429, 5xx and connection errors only. Default 3. */
  readonly maxRetries?: number;
  /** First retry delay, ms, doubled per retry with jitter (a `retry-after` header wins, up to 30 s). Default 500. */
  readonly retryBackoffMs?: number;
}

// Only what is read: servers add `object`, `model`, `usage` and more.
const responseSchema = z.object({
  data: z.array(z.object({ index: z.number().int().nonnegative(), embedding: z.array(z.number()).min(1) })),
});

/** Where each setting lives, for messages that say what to change. */
const configKeys = {
  baseUrl: 'embedder.baseUrl (RATCHET_EMBEDDER_BASE_URL)',
  model: 'embedder.model (RATCHET_EMBEDDER_MODEL)',
  apiKey: 'RATCHET_EMBEDDER_API_KEY (or embedder.apiKey; keep keys out of config files)',
  dimensions: 'embedder.dimensions (RATCHET_EMBEDDER_DIMENSIONS)',
  batchSize: 'embedder.batchSize (RATCHET_EMBEDDER_BATCH_SIZE)',
  timeoutMs: 'embedder.timeoutMs (RATCHET_EMBEDDER_TIMEOUT_MS)',
  offline: 'embedder.kind: hashing (RATCHET_EMBEDDER_KIND=hashing) to embed without a model',
} as const;

const maxRetryAfterMs = 30_000;
const maxBackoffMs = 8_000;

/** Why an attempt may be worth repeating. */
type TransientFailure =
  | { readonly kind: 'network'; readonly detail: string; readonly cause: unknown }
  | { readonly kind: 'status'; readonly status: number; readonly reason: string; readonly retryAfterMs?: number };

/**
 * Embedder over `POST {baseUrl}/embeddings` of any OpenAI-compatible server.
 * Texts go in batches of `batchSize`, one request at a time; vectors come
 * back in input order, L2-normalised (not every server normalises). Texts
 * that are empty after trimming are not sent (OpenAI rejects them) and get a
 * zero vector, as from the hashing embedder.
 *
 * Plain `fetch` rather than the OpenAI SDK the chat adapter uses: the SDK's
 * embeddings call asks for base64 by default (not every compatible server
 * has it), retries 408/409 too, and puts the response body in its error
 * messages, where a provider may have echoed the key.
 */
export class OpenAiEmbedder implements Embedder {
  /** `openai:<model>`, plus `@<dimensions>` when they are configured. */
  readonly id: string;
  /** A model's vectors carry meaning beyond the words: they are searched, not only scored. */
  readonly lexical = false;
  private readonly url: string;
  /** The URL as messages show it: without the query, which may carry credentials. */
  private readonly shownUrl: string;
  private readonly batchSize: number;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryBackoffMs: number;
  private learntDimension: number | undefined;

  /** @throws AppError CONFIG_INVALID when `baseUrl` is no http(s) URL or a number setting is out of range. */
  constructor(private readonly config: OpenAiEmbedderConfig) {
    const endpoint = endpointOf(config.baseUrl);
    this.url = endpoint?.toString() ?? '';
    this.shownUrl = endpoint === undefined ? '' : shownUrlOf(endpoint);
    this.batchSize = config.batchSize ?? 64;
    this.timeoutMs = config.timeoutMs ?? 30_000;
    this.maxRetries = config.maxRetries ?? 3;
    this.retryBackoffMs = config.retryBackoffMs ?? 500;
    const problems = [
      ...(endpoint === undefined ? [`${configKeys.baseUrl} must be an http(s) URL ending in /v1`] : []),
      // fetch refuses them, and they would end up in messages.
      ...(endpoint !== undefined && (endpoint.username !== '' || endpoint.password !== '') ? [`${configKeys.baseUrl} must not contain a user or password; put the key in ${configKeys.apiKey}`] : []),
      ...(config.model.trim() === '' ? [`${configKeys.model} is empty`] : []),
      ...positiveInteger('dimensions', config.dimensions),
      ...positiveInteger('batchSize', this.batchSize),
      ...positiveInteger('timeoutMs', this.timeoutMs),
      ...(Number.isInteger(this.maxRetries) && this.maxRetries >= 0 ? [] : [`embedder.maxRetries must be an integer >= 0, got ${this.maxRetries}`]),
    ];
    if (problems.length > 0) throw new AppError(ErrorCode.CONFIG_INVALID, `invalid OpenAI embedder settings: ${problems.join('; ')}`);
    this.id = `openai:${config.model}${config.dimensions === undefined ? '' : `@${config.dimensions}`}`;
  }

  /** `dimensions` when configured, else learnt from the first response; 0 until then. */
  get dimension(): number {
    return this.config.dimensions ?? this.learntDimension ?? 0;
  }

  /**
   * Embeds `texts`, `batchSize` per request, retrying 429, 5xx and connection
   * errors with backoff.
   *
   * @returns one L2-normalised vector per text, in input order.
   * @throws AppError UNAVAILABLE (endpoint unreachable or 5xx after retries,
   *   or a malformed reply; retryable), RESOURCE_EXHAUSTED (429 after
   *   retries; retryable), UNAUTHENTICATED (401/403), INVALID_ARGUMENT (other
   *   4xx, or only empty texts before the dimension is known),
   *   DEADLINE_EXCEEDED (an attempt took over `timeoutMs`, or 408),
   *   FAILED_PRECONDITION (vectors of another dimension than configured or
   *   learnt).
   */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const vectors = Array.from<Float32Array | undefined>({ length: texts.length });
    const toSend = texts.flatMap((text, index) => (text.trim() === '' ? [] : [index]));
    for (let start = 0; start < toSend.length; start += this.batchSize) {
      const batch = toSend.slice(start, start + this.batchSize);
      const embedded = await this.embedBatch(batch.map((index) => texts[index] as string));
      batch.forEach((textIndex, position) => (vectors[textIndex] = embedded[position]));
    }
    if (toSend.length < texts.length && this.dimension === 0) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `cannot embed only empty texts before the embedding dimension is known; set ${configKeys.dimensions} or embed a non-empty text first`);
    }
    return vectors.map((vector) => vector ?? new Float32Array(this.dimension));
  }

  private async embedBatch(inputs: readonly string[]): Promise<Float32Array[]> {
    const body = JSON.stringify({ model: this.config.model, input: inputs, ...(this.config.dimensions === undefined ? {} : { dimensions: this.config.dimensions }) });
    const parsed = responseSchema.safeParse(await this.post(body));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue === undefined || issue.path.length === 0 ? '' : `${issue.path.map(String).join('.')}: `;
      throw this.malformed(`${where}${issue?.message ?? 'unexpected shape'}`);
    }
    const { data } = parsed.data;
    if (data.length !== inputs.length) throw this.malformed(`${data.length} embeddings for ${inputs.length} inputs`);
    const ordered = Array.from<readonly number[] | undefined>({ length: inputs.length });
    for (const item of data) {
      if (item.index >= inputs.length || ordered[item.index] !== undefined) throw this.malformed(`index ${item.index} is out of range or repeated`);
      ordered[item.index] = item.embedding;
    }
    const lengths = new Set(data.map((item) => item.embedding.length));
    const [got] = lengths;
    if (lengths.size > 1 || got === undefined) throw this.malformed(`vectors of different lengths (${[...lengths].join(', ')}) in one response`);
    this.checkDimension(got);
    return (ordered as (readonly number[])[]).map(normalised);
  }

  private checkDimension(got: number): void {
    const { dimensions, model } = this.config;
    if (dimensions !== undefined && got !== dimensions) {
      throw new AppError(
        ErrorCode.FAILED_PRECONDITION,
        `embedding model ${model} at ${this.shownUrl} returned vectors of dimension ${got}, expected ${dimensions} (${configKeys.dimensions}); ` +
          `set it to ${got} or leave it unset, or use a model that honours the dimensions parameter (OpenAI text-embedding-3-*)`,
      );
    }
    if (this.learntDimension === undefined) {
      this.learntDimension = got;
    } else if (got !== this.learntDimension) {
      throw new AppError(
        ErrorCode.FAILED_PRECONDITION,
        `embedding model ${model} at ${this.shownUrl} returned vectors of dimension ${got}, expected ${this.learntDimension} as in its earlier replies; ` +
          `the server now serves another model under that name: set ${configKeys.dimensions} to ${got} (that changes the embedder id, so stored lessons are embedded again) and restart`,
      );
    }
  }

  /** POSTs `body`, retrying transient failures; returns the parsed JSON of a 2xx reply. */
  private async post(body: string): Promise<unknown> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.config.apiKey !== undefined && this.config.apiKey !== '') headers['authorization'] = `Bearer ${this.config.apiKey}`;
    let failure: TransientFailure | undefined;
    for (let attempt = 0; attempt <= this.maxRetries; attempt += 1) {
      if (failure !== undefined) await delay(this.retryDelay(attempt, failure));
      // One signal per attempt, covering the body too: a server that stalls mid-body is as slow as one that never answers.
      const signal = AbortSignal.timeout(this.timeoutMs);
      let status: number;
      let text: string;
      let retryAfter: string | null;
      try {
        const response = await fetch(this.url, { method: 'POST', headers, body, signal });
        status = response.status;
        retryAfter = response.headers.get('retry-after');
        text = await response.text();
      } catch (error) {
        if (errorName(error) === 'TimeoutError' || signal.aborted) throw this.timedOut(error);
        failure = { kind: 'network', detail: networkDetail(error), cause: error };
        continue;
      }
      if (status >= 200 && status < 300) return this.parseJson(text);
      const reason = sanitizedReason(text, this.config.apiKey);
      if (status === 429 || status >= 500) {
        const retryAfterMs = retryAfterMsOf(retryAfter);
        failure = { kind: 'status', status, reason, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
        continue;
      }
      throw this.rejected(status, reason);
    }
    throw this.gaveUp(failure as TransientFailure);
  }

  private retryDelay(attempt: number, failure: TransientFailure): number {
    if (failure.kind === 'status' && failure.retryAfterMs !== undefined) return Math.min(failure.retryAfterMs, maxRetryAfterMs);
    return backoffDelay(attempt, this.retryBackoffMs, maxBackoffMs, { jitter: true });
  }

  private parseJson(text: string): unknown {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw this.malformed(`the body is not JSON (${sanitizedReason(text, this.config.apiKey)})`);
    }
  }

  private where(): string {
    return `embedding model ${this.config.model} at ${this.shownUrl}`;
  }

  private malformed(detail: string): AppError {
    return new AppError(ErrorCode.UNAVAILABLE, `${this.where()} returned a malformed reply: ${detail}; check that ${configKeys.baseUrl} points at an OpenAI-compatible /v1 API`, { retryable: true });
  }

  private timedOut(cause: unknown): AppError {
    return new AppError(ErrorCode.DEADLINE_EXCEEDED, `${this.where()} did not answer within ${this.timeoutMs} ms; raise ${configKeys.timeoutMs} or lower ${configKeys.batchSize}`, { cause });
  }

  /** A 4xx that retrying will not fix. The body is only ever shown sanitised, and not at all for 401/403. */
  private rejected(status: number, reason: string): AppError {
    if (status === 401 || status === 403) {
      const what = this.config.apiKey === undefined ? 'no API key was sent' : status === 401 ? 'the API key was rejected' : 'the API key may not use this model';
      return new AppError(ErrorCode.UNAUTHENTICATED, `${this.where()} answered HTTP ${status}: ${what}; set ${configKeys.apiKey}`);
    }
    if (status === 408) return new AppError(ErrorCode.DEADLINE_EXCEEDED, `${this.where()} answered HTTP 408 (request timeout); retry later, or lower ${configKeys.batchSize}`);
    const advice = status === 404 ? `check ${configKeys.model} and that ${configKeys.baseUrl} ends in /v1` : `check ${configKeys.model}${this.config.dimensions === undefined ? '' : ` and ${configKeys.dimensions}`}`;
    return new AppError(ErrorCode.INVALID_ARGUMENT, `${this.where()} answered HTTP ${status}${reason === '' ? '' : ` (${reason})`}; ${advice}`);
  }

  private gaveUp(failure: TransientFailure): AppError {
    const attempts = `${this.maxRetries + 1} attempt${this.maxRetries === 0 ? '' : 's'}`;
    if (failure.kind === 'network') {
      return new AppError(
        ErrorCode.UNAVAILABLE,
        `cannot reach the embedding endpoint ${this.shownUrl} (${failure.detail}) after ${attempts}; check ${configKeys.baseUrl} and that the server runs, or set ${configKeys.offline}`,
        { cause: failure.cause, retryable: true },
      );
    }
    const detail = `${this.where()} answered HTTP ${failure.status}${failure.reason === '' ? '' : ` (${failure.reason})`} after ${attempts}`;
    if (failure.status === 429) return new AppError(ErrorCode.RESOURCE_EXHAUSTED, `${detail}: rate limited; wait, lower ${configKeys.batchSize}, or raise the provider's limit`, { retryable: true });
    return new AppError(ErrorCode.UNAVAILABLE, `${detail}; the server is failing, try again later`, { retryable: true });
  }
}

function positiveInteger(key: string, value: number | undefined): string[] {
  return value === undefined || (Number.isInteger(value) && value > 0) ? [] : [`embedder.${key} must be a positive integer, got ${value}`];
}

/** `{baseUrl}/embeddings`, keeping a query (Azure's api-version); undefined when `baseUrl` is no http(s) URL. */
function endpointOf(baseUrl: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/embeddings`;
  return url;
}

/** The endpoint as messages show it: no query or fragment, which may carry credentials. */
function shownUrlOf(endpoint: URL): string {
  const shown = new URL(endpoint);
  shown.search = '';
  shown.hash = '';
  return shown.toString();
}

function normalised(values: readonly number[]): Float32Array {
  let sum = 0;
  for (const value of values) sum += value * value;
  const norm = Math.sqrt(sum);
  return Float32Array.from(values, (value) => (norm > 0 ? value / norm : value));
}

// fetch may reject with errors of another realm (jest's vm sandbox), so these read fields, not `instanceof`.
function errorName(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && typeof (error as { name?: unknown }).name === 'string' ? (error as { name: string }).name : undefined;
}

/** What node's fetch says went wrong with the connection: `ECONNREFUSED`, `ENOTFOUND`, ... */
function networkDetail(error: unknown): string {
  const cause = typeof error === 'object' && error !== null ? (error as { cause?: unknown }).cause : undefined;
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && code !== '') return code;
  const message = typeof cause === 'object' && cause !== null ? (cause as { message?: unknown }).message : (error as { message?: unknown } | undefined)?.message;
  // Such messages may quote the URL, query and all.
  return typeof message === 'string' && message !== '' ? message.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>').slice(0, 120) : 'connection failed';
}

/** `retry-after` as seconds or an HTTP date, in ms; undefined when absent or unreadable. */
function retryAfterMsOf(header: string | null): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * A short reason from an error body: the provider's message (OpenAI's
 * `error.message`, Ollama's `error`, vLLM's `message`, FastAPI's `detail`),
 * with the key and anything that looks like a credential replaced, control
 * characters dropped and the length capped. Providers echo keys in errors.
 */
export function sanitizedReason(body: string, apiKey?: string): string {
  let text = body;
  try {
    const parsed = JSON.parse(body) as unknown;
    const record = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
    const error = record['error'];
    const candidates = [typeof error === 'object' && error !== null ? (error as Record<string, unknown>)['message'] : error, record['message'], record['detail']];
    const found = candidates.find((candidate): candidate is string => typeof candidate === 'string');
    text = found ?? (typeof parsed === 'string' ? parsed : '');
  } catch {
    if (/^\s*</.test(body)) return 'an HTML page';
  }
  if (apiKey !== undefined && apiKey !== '') text = text.split(apiKey).join('[redacted]');
  text = text
    .replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]')
    .replace(/\b(?:sk|pk|rk|key)-[\w-]{6,}/gi, '[redacted]')
    // Long runs of letters and digits (hex or base64 tokens); model names rarely get this long without a dot or slash.
    .replace(/(?=[\w+=-]*\d)(?=[\w+=-]*[A-Za-z])[\w+=-]{32,}/g, '[redacted]')
    .replace(/\p{Cc}+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}
