import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Token counts in the OpenAI wire format's terms. */
export interface FakeOpenAiUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

interface FakeResponseBase {
  /** Wait this long (ms) before sending anything, e.g. to trigger a client timeout. */
  readonly delayMs?: number;
}

/** A normal chat completion; sent as SSE chunks when the request has `stream: true`. */
export interface FakeCompletion extends FakeResponseBase {
  readonly kind: 'completion';
  readonly content: string;
  readonly usage?: FakeOpenAiUsage;
  /** Defaults to the model the request asked for. */
  readonly model?: string;
  /** Default `stop`. */
  readonly finishReason?: string;
}

/** A streaming completion: each chunk is one SSE `data:` event carrying a content delta. */
export interface FakeStream extends FakeResponseBase {
  readonly kind: 'stream';
  readonly chunks: readonly string[];
  readonly usage?: FakeOpenAiUsage;
  readonly model?: string;
}

/** An assistant message that calls tools instead of (or besides) answering. */
export interface FakeToolCall extends FakeResponseBase {
  readonly kind: 'tool-call';
  readonly toolCalls: readonly {
    readonly name: string;
    /** Sent as-is, so a test can send malformed JSON; left out of the wire message when absent, as some local servers do. */
    readonly arguments?: string;
    /** Default `call_fake_<n>`, n counting from 1 within the message. */
    readonly id?: string;
  }[];
  /** Text sent alongside the calls. Default null, as OpenAI sends. */
  readonly content?: string;
  readonly usage?: FakeOpenAiUsage;
  readonly model?: string;
  /** Default `tool_calls`; some servers say `stop`, and `length` means the arguments were cut. */
  readonly finishReason?: string;
}

/** An HTTP error in OpenAI's `{ error: { message, type, code } }` shape. */
export interface FakeHttpError extends FakeResponseBase {
  readonly kind: 'error';
  readonly status: number;
  readonly message?: string;
  /** Sent as the `retry-after` header (seconds, or an HTTP date). */
  readonly retryAfter?: number | string;
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Appends the key the request sent (bearer or `api-key` header) to the
   * message, as some providers do on 401: tests check it never reaches an
   * error message or a log.
   */
  readonly echoApiKey?: boolean;
}

/** A 200 (or `status`) response whose body is not valid JSON. */
export interface FakeMalformed extends FakeResponseBase {
  readonly kind: 'malformed';
  readonly body?: string;
  readonly status?: number;
}

export type FakeOpenAiResponse = FakeCompletion | FakeStream | FakeToolCall | FakeHttpError | FakeMalformed;

/** Vectors for one `/v1/embeddings` request. */
export interface FakeEmbeddings extends FakeResponseBase {
  readonly kind: 'embeddings';
  /** One vector per input, in input order. Default: `fakeEmbedding` of each input. */
  readonly vectors?: readonly (readonly number[])[];
  /** Dimension of the default vectors (say, a wrong one). Default: the request's `dimensions`, else the server's `embeddingDimension`. */
  readonly dimension?: number;
  /** Sends `data` last input first (each item keeps its `index`), as servers may. */
  readonly reversed?: boolean;
  /** Defaults to the model the request asked for. */
  readonly model?: string;
}

export type FakeEmbeddingResponse = FakeEmbeddings | FakeHttpError | FakeMalformed;

/** The parts of a `/v1/embeddings` request body tests look at, in wire format. */
export interface FakeEmbeddingBody {
  readonly model: string;
  readonly input: string | readonly string[];
  readonly dimensions?: number;
  readonly [key: string]: unknown;
}

export interface FakeOpenAiServerOptions {
  /** Dimension of the default embeddings when the request names none. Default 16. */
  readonly embeddingDimension?: number;
}

/** The parts of a `/v1/chat/completions` request body tests look at, in wire format (snake_case). */
export interface FakeChatCompletionBody {
  readonly model: string;
  readonly messages: readonly {
    readonly role: string;
    readonly content?: string | null;
    readonly tool_calls?: readonly { readonly id: string; readonly type: string; readonly function: { readonly name: string; readonly arguments: string } }[];
    readonly tool_call_id?: string;
  }[];
  readonly tools?: readonly { readonly type: string; readonly function: { readonly name: string; readonly description?: string; readonly parameters?: unknown } }[];
  readonly tool_choice?: unknown;
  readonly [key: string]: unknown;
}

/** One request as the server received it. */
export interface FakeOpenAiRequest {
  readonly method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** Lower-cased header names, as node:http reports them. */
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  readonly body: unknown;
}

export interface FakeOpenAiServer {
  /** Base URL ending in `/v1`, for `baseURL`/`baseUrl` options. */
  readonly url: string;
  /** Every request received, in order (including ones answered with 404). */
  readonly requests: FakeOpenAiRequest[];
  /** The JSON bodies of the `POST /v1/chat/completions` requests received, in order (tools and tool messages included). */
  chatBodies(): FakeChatCompletionBody[];
  /** Queues the answer to the next POST /v1/chat/completions. */
  enqueue(...responses: FakeOpenAiResponse[]): void;
  /** The JSON bodies of the `POST /v1/embeddings` requests received, in order. */
  embeddingBodies(): FakeEmbeddingBody[];
  /** Queues the answer to the next POST /v1/embeddings; with the queue empty, each input gets `fakeEmbedding`. */
  enqueueEmbeddings(...responses: FakeEmbeddingResponse[]): void;
  /** Closes the server and drops open connections (including delayed responses). Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts an HTTP server on 127.0.0.1 (a free port) that speaks the OpenAI
 * wire format for `POST /v1/chat/completions` and answers with the responses
 * queued by `enqueue`, in order. When that queue is empty it answers 500 with
 * `x-should-retry: false`, so a test that forgot to enqueue fails at once
 * instead of being retried.
 *
 * `POST /v1/embeddings` answers with the responses queued by
 * `enqueueEmbeddings`, else embeds every input with `fakeEmbedding` (so a
 * service can run against it unscripted). Like OpenAI it rejects a missing
 * `input` and empty strings with 400. Other paths get a 404 JSON error.
 *
 * @returns the running server; call `close()` when done.
 * @throws the listener's error when 127.0.0.1 cannot be bound.
 */
export async function startFakeOpenAiServer(options: FakeOpenAiServerOptions = {}): Promise<FakeOpenAiServer> {
  const embeddingDimension = options.embeddingDimension ?? 16;
  const queue: FakeOpenAiResponse[] = [];
  const embeddingQueue: FakeEmbeddingResponse[] = [];
  const requests: FakeOpenAiRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let completionCounter = 0;

  const server = createServer((request, response) => {
    readBody(request)
      .then(async (text) => {
        const parsedUrl = new URL(request.url ?? '/', 'http://127.0.0.1');
        const body = parseJson(text);
        requests.push({
          method: request.method ?? 'GET',
          path: parsedUrl.pathname,
          query: Object.fromEntries(parsedUrl.searchParams),
          headers: request.headers,
          body,
        });
        if (request.method === 'POST' && parsedUrl.pathname === '/v1/embeddings') {
          const next = embeddingQueue.shift();
          if (next?.delayMs !== undefined && next.delayMs > 0) await sleep(next.delayMs, timers);
          if (response.destroyed) return;
          answerEmbeddings(response, next ?? { kind: 'embeddings' }, isRecord(body) ? body : {}, request.headers, embeddingDimension);
          return;
        }
        if (request.method !== 'POST' || parsedUrl.pathname !== '/v1/chat/completions') {
          sendJson(response, 404, errorBody(`fake OpenAI server: no route for ${request.method ?? 'GET'} ${parsedUrl.pathname}`, 'not_found'));
          return;
        }
        const next = queue.shift();
        if (next === undefined) {
          sendJson(response, 500, errorBody('fake OpenAI server: no response queued', 'server_error'), { 'x-should-retry': 'false' });
          return;
        }
        if (next.delayMs !== undefined && next.delayMs > 0) await sleep(next.delayMs, timers);
        if (response.destroyed) return;
        completionCounter += 1;
        const requestBody = isRecord(body) ? body : {};
        const requestedModel = typeof requestBody['model'] === 'string' ? requestBody['model'] : 'fake-model';
        const wantsStream = requestBody['stream'] === true;
        answer(response, next, { id: `chatcmpl-fake-${completionCounter}`, requestedModel, wantsStream, headers: request.headers });
      })
      .catch((error: unknown) => {
        if (!response.headersSent && !response.destroyed) {
          sendJson(response, 500, errorBody(`fake OpenAI server failed: ${String(error)}`, 'server_error'), { 'x-should-retry': 'false' });
        }
      });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    chatBodies() {
      return requests.filter((received) => received.method === 'POST' && received.path === '/v1/chat/completions' && isRecord(received.body)).map((received) => received.body as FakeChatCompletionBody);
    },
    enqueue(...responses) {
      queue.push(...responses);
    },
    embeddingBodies() {
      return requests.filter((received) => received.method === 'POST' && received.path === '/v1/embeddings' && isRecord(received.body)).map((received) => received.body as FakeEmbeddingBody);
    },
    enqueueEmbeddings(...responses) {
      embeddingQueue.push(...responses);
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      });
      return closing;
    },
  };
}

interface AnswerContext {
  readonly id: string;
  readonly requestedModel: string;
  readonly wantsStream: boolean;
  readonly headers: IncomingHttpHeaders;
}

function answer(response: ServerResponse, next: FakeOpenAiResponse, context: AnswerContext): void {
  const created = Math.floor(Date.now() / 1000);
  switch (next.kind) {
    case 'completion': {
      const model = next.model ?? context.requestedModel;
      if (context.wantsStream) {
        sendStream(response, { id: context.id, model, created, chunks: [next.content], usage: next.usage, finishReason: next.finishReason ?? 'stop' });
        return;
      }
      sendJson(response, 200, {
        id: context.id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: next.content, refusal: null }, logprobs: null, finish_reason: next.finishReason ?? 'stop' }],
        usage: wireUsage(next.usage),
      });
      return;
    }
    case 'stream':
      sendStream(response, { id: context.id, model: next.model ?? context.requestedModel, created, chunks: next.chunks, usage: next.usage, finishReason: 'stop' });
      return;
    case 'tool-call':
      sendJson(response, 200, {
        id: context.id,
        object: 'chat.completion',
        created,
        model: next.model ?? context.requestedModel,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: next.content ?? null,
              refusal: null,
              tool_calls: next.toolCalls.map((call, index) => ({
                id: call.id ?? `call_fake_${index + 1}`,
                type: 'function',
                function: { name: call.name, ...(call.arguments === undefined ? {} : { arguments: call.arguments }) },
              })),
            },
            logprobs: null,
            finish_reason: next.finishReason ?? 'tool_calls',
          },
        ],
        usage: wireUsage(next.usage),
      });
      return;
    case 'error':
      sendError(response, next, context.headers);
      return;
    case 'malformed':
      sendMalformed(response, next, '{"id": "chatcmpl-broken", "choices": [');
      return;
  }
}

function sendError(response: ServerResponse, next: FakeHttpError, requestHeaders: IncomingHttpHeaders): void {
  const headers: Record<string, string> = { ...next.headers };
  if (next.retryAfter !== undefined) headers['retry-after'] = String(next.retryAfter);
  let message = next.message ?? `fake error ${next.status}`;
  if (next.echoApiKey === true) message += `: ${apiKeyOf(requestHeaders) ?? '(no key sent)'}`;
  sendJson(response, next.status, errorBody(message, errorType(next.status)), headers);
}

function sendMalformed(response: ServerResponse, next: FakeMalformed, defaultBody: string): void {
  response.writeHead(next.status ?? 200, { 'content-type': 'application/json' });
  response.end(next.body ?? defaultBody);
}

function apiKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1];
  const apiKeyHeader = headers['api-key'];
  return bearer ?? (typeof apiKeyHeader === 'string' ? apiKeyHeader : undefined);
}

function answerEmbeddings(response: ServerResponse, next: FakeEmbeddingResponse, body: Record<string, unknown>, requestHeaders: IncomingHttpHeaders, defaultDimension: number): void {
  if (next.kind === 'error') {
    sendError(response, next, requestHeaders);
    return;
  }
  if (next.kind === 'malformed') {
    sendMalformed(response, next, '{"object": "list", "data": [');
    return;
  }
  const input = body['input'];
  const inputs = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((item) => typeof item === 'string') ? (input as string[]) : undefined;
  if (inputs === undefined || inputs.length === 0) {
    sendJson(response, 400, errorBody("fake OpenAI server: 'input' must be a string or a non-empty array of strings", 'invalid_request_error'));
    return;
  }
  if (inputs.some((text) => text === '')) {
    sendJson(response, 400, errorBody("fake OpenAI server: '$.input' is invalid: empty strings are not allowed", 'invalid_request_error'));
    return;
  }
  const requestedDimension = typeof body['dimensions'] === 'number' ? body['dimensions'] : undefined;
  const dimension = next.dimension ?? requestedDimension ?? defaultDimension;
  const data = inputs.map((text, index) => ({ object: 'embedding', index, embedding: next.vectors?.[index] ?? fakeEmbedding(text, dimension) }));
  if (next.reversed === true) data.reverse();
  const promptTokens = inputs.reduce((sum, text) => sum + words(text).length, 0);
  sendJson(response, 200, {
    object: 'list',
    data,
    model: next.model ?? (typeof body['model'] === 'string' ? body['model'] : 'fake-embedding-model'),
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  });
}

/**
 * The fake server's default embedding: a bag of lower-cased words, each
 * word's count added to bucket FNV-1a(word) mod `dimension`, plus 1 in bucket
 * 0 so no vector is zero. Deterministic, and not normalised (as some local
 * servers' vectors are not), so texts sharing words point the same way.
 */
export function fakeEmbedding(text: string, dimension: number): number[] {
  const vector = new Array<number>(dimension).fill(0);
  vector[0] = 1;
  for (const word of words(text)) {
    const bucket = fnv1a(word) % dimension;
    vector[bucket] = (vector[bucket] ?? 0) + 1;
  }
  return vector;
}

function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

interface StreamParts {
  readonly id: string;
  readonly model: string;
  readonly created: number;
  readonly chunks: readonly string[];
  readonly usage: FakeOpenAiUsage | undefined;
  readonly finishReason: string;
}

function sendStream(response: ServerResponse, parts: StreamParts): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const base = { id: parts.id, object: 'chat.completion.chunk', created: parts.created, model: parts.model };
  const event = (data: unknown): void => {
    response.write(`data: ${JSON.stringify(data)}\n\n`);
  };
  event({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] });
  for (const chunk of parts.chunks) event({ ...base, choices: [{ index: 0, delta: { content: chunk }, logprobs: null, finish_reason: null }] });
  event({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: parts.finishReason }] });
  if (parts.usage !== undefined) event({ ...base, choices: [], usage: wireUsage(parts.usage) });
  response.end('data: [DONE]\n\n');
}

function wireUsage(usage: FakeOpenAiUsage | undefined): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const promptTokens = usage?.promptTokens ?? 0;
  const completionTokens = usage?.completionTokens ?? 0;
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

function errorBody(message: string, type: string): { error: { message: string; type: string; param: null; code: string } } {
  return { error: { message, type, param: null, code: type } };
}

function errorType(status: number): string {
  if (status === 400) return 'invalid_request_error';
  if (status === 401) return 'invalid_api_key';
  if (status === 403) return 'permission_denied';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limit_exceeded';
  return 'server_error';
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sleep(ms: number, timers: Set<NodeJS.Timeout>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      resolve();
    }, ms);
    timers.add(timer);
  });
}
