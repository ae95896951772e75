import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { extendConfigSchema, loadConfig } from '@ratchet/config';
import { Language, MemoryServiceDefinition, RecordFailureRequest, RetrieveLessonsRequest } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { hostService, type RunningService } from '@ratchet/runtime';
import { fakeEmbedding, freePort, startFakeOpenAiServer, type FakeOpenAiServer, rejectionOf } from '@ratchet/testing';
import { createEmbedder, createMemoryService, embedderConfigSection, OpenAiEmbedder, type EmbedderSettings, type OpenAiEmbedderConfig } from '../src';

jest.setTimeout(60_000);

function unit(values: readonly number[]): number[] {
  const norm = Math.sqrt(values.reduce((sum, value) => sum + value * value, 0));
  return values.map((value) => value / norm);
}

function norm(vector: Float32Array): number {
  return Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
}

describe('OpenAiEmbedder against the fake OpenAI server', () => {
  let server: FakeOpenAiServer;

  beforeEach(async () => {
    server = await startFakeOpenAiServer();
  });

  afterEach(async () => {
    await server.close();
  });

  function embedder(config: Partial<OpenAiEmbedderConfig> = {}): OpenAiEmbedder {
    return new OpenAiEmbedder({ baseUrl: server.url, apiKey: 'sk-test-key-0123456789', model: 'text-embedding-3-small', retryBackoffMs: 5, ...config });
  }

  it('sends batches of batchSize and returns the vectors in input order, even when the server reorders them', async () => {
    const texts = ['alpha one', 'beta two', 'gamma three', 'delta four', 'epsilon five'];
    server.enqueueEmbeddings({ kind: 'embeddings', reversed: true });
    const vectors = await embedder({ batchSize: 2 }).embed(texts);
    expect(server.embeddingBodies().map((body) => body.input)).toEqual([['alpha one', 'beta two'], ['gamma three', 'delta four'], ['epsilon five']]);
    expect(server.embeddingBodies().every((body) => body.model === 'text-embedding-3-small' && !('dimensions' in body))).toBe(true);
    vectors.forEach((vector, index) => {
      expect(vector).toBeInstanceOf(Float32Array);
      const expected = unit(fakeEmbedding(texts[index]!, 16));
      expect([...vector].map((value) => Number(value.toFixed(5)))).toEqual(expected.map((value) => Number(value.toFixed(5))));
    });
  });

  it('L2-normalises what the server returns', async () => {
    server.enqueueEmbeddings({ kind: 'embeddings', vectors: [[3, 4], [0, 5]] });
    const [first, second] = await embedder().embed(['a', 'b']);
    expect([...first!]).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect([...second!]).toEqual([0, 1]);
    expect(norm(first!)).toBeCloseTo(1, 6);
  });

  it('is named after the model and dimensions, sends dimensions, and learns the dimension otherwise', async () => {
    const shortened = embedder({ dimensions: 8 });
    expect(shortened.id).toBe('openai:text-embedding-3-small@8');
    expect(shortened.dimension).toBe(8);
    const [vector] = await shortened.embed(['hello world']);
    expect(vector).toHaveLength(8);
    expect(server.embeddingBodies()[0]).toMatchObject({ dimensions: 8 });

    const plain = embedder();
    expect(plain.id).toBe('openai:text-embedding-3-small');
    expect(plain.dimension).toBe(0);
    await plain.embed(['hello']);
    expect(plain.dimension).toBe(16);
  });

  it('sends the key as a bearer token, and no Authorization header without one', async () => {
    await embedder().embed(['with key']);
    await embedder({ apiKey: undefined }).embed(['without key']);
    const [withKey, withoutKey] = server.requests;
    expect(withKey?.headers.authorization).toBe('Bearer sk-test-key-0123456789');
    expect(withKey?.headers['content-type']).toBe('application/json');
    expect(withoutKey?.headers.authorization).toBeUndefined();
  });

  it('does not send empty texts (OpenAI rejects them) and gives them a zero vector', async () => {
    const vectors = await embedder().embed(['first', '  ', 'second']);
    expect(server.embeddingBodies().map((body) => body.input)).toEqual([['first', 'second']]);
    expect([...vectors[1]!]).toEqual(new Array(16).fill(0));
    expect(norm(vectors[2]!)).toBeCloseTo(1, 5);
    expect(await embedder().embed([])).toEqual([]);
  });

  it('retries 500 and 429 with backoff, then succeeds', async () => {
    server.enqueueEmbeddings({ kind: 'error', status: 500, message: 'overloaded' }, { kind: 'error', status: 429, retryAfter: 0 });
    const [vector] = await embedder().embed(['retry me']);
    expect(norm(vector!)).toBeCloseTo(1, 5);
    expect(server.embeddingBodies()).toHaveLength(3);
  });

  it('gives up after maxRetries: 5xx is UNAVAILABLE, 429 RESOURCE_EXHAUSTED, both retryable', async () => {
    server.enqueueEmbeddings(...Array.from({ length: 3 }, () => ({ kind: 'error' as const, status: 503 })));
    const down = await rejectionOf(embedder({ maxRetries: 2 }).embed(['x']));
    expect(down).toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true });
    expect(down.message).toContain('HTTP 503');
    expect(down.message).toContain('3 attempts');
    expect(server.embeddingBodies()).toHaveLength(3);

    server.enqueueEmbeddings({ kind: 'error', status: 429, retryAfter: 0 }, { kind: 'error', status: 429, retryAfter: 0 });
    const limited = await rejectionOf(embedder({ maxRetries: 1 }).embed(['x']));
    expect(limited).toMatchObject({ code: ErrorCode.RESOURCE_EXHAUSTED, isRetryable: true });
  });

  it('reports an endpoint that is down as UNAVAILABLE, naming the URL and the settings', async () => {
    const port = await freePort();
    const error = await rejectionOf(new OpenAiEmbedder({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', maxRetries: 1, retryBackoffMs: 5 }).embed(['x']));
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.isRetryable).toBe(true);
    expect(error.message).toContain(`http://127.0.0.1:${port}/v1/embeddings`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.message).toContain('RATCHET_EMBEDDER_BASE_URL');
    expect(error.message).toContain('embedder.kind: hashing');
  });

  it('keeps a query of the base URL (Azure api-version) out of messages, and refuses credentials in it', async () => {
    server.enqueueEmbeddings({ kind: 'error', status: 400, message: 'bad' });
    const error = await rejectionOf(embedder({ baseUrl: `${server.url}?api-version=2024-10-21` }).embed(['x']));
    expect(server.requests[0]).toMatchObject({ path: '/v1/embeddings', query: { 'api-version': '2024-10-21' } });
    expect(error.message).toContain(`${server.url}/embeddings `);
    expect(error.message).not.toContain('api-version');

    const port = await freePort();
    let thrown: unknown;
    try {
      new OpenAiEmbedder({ baseUrl: `http://user:hunter2@127.0.0.1:${port}/v1`, model: 'm' });
    } catch (caught) {
      thrown = caught;
    }
    expect(thrown).toMatchObject({ code: ErrorCode.CONFIG_INVALID, message: expect.stringContaining('must not contain a user or password') });
    expect((thrown as Error).message).not.toContain('hunter2');
  });

  it('rejects vectors of another dimension than configured, saying what to do', async () => {
    server.enqueueEmbeddings({ kind: 'embeddings', dimension: 12 });
    const error = await rejectionOf(embedder({ dimensions: 8 }).embed(['x']));
    expect(error.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(error.message).toContain('text-embedding-3-small');
    expect(error.message).toContain('dimension 12, expected 8');
    expect(error.message).toContain('embedder.dimensions');
  });

  it('rejects vectors whose dimension changed from the one learnt', async () => {
    const learning = embedder();
    await learning.embed(['first']);
    server.enqueueEmbeddings({ kind: 'embeddings', dimension: 24 });
    const error = await rejectionOf(learning.embed(['second']));
    expect(error).toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('dimension 24, expected 16') });
    expect(learning.dimension).toBe(16);
  });

  it('reports 401 without the key or the body, even when the server echoes the key, and does not retry', async () => {
    server.enqueueEmbeddings({ kind: 'error', status: 401, message: 'Incorrect API key provided', echoApiKey: true });
    const error = await rejectionOf(embedder().embed(['x']));
    expect(error.code).toBe(ErrorCode.UNAUTHENTICATED);
    expect(error.isRetryable).toBe(false);
    expect(error.message).toContain('RATCHET_EMBEDDER_API_KEY');
    expect(error.message).toContain('HTTP 401');
    expect(error.message).not.toContain('sk-test-key-0123456789');
    expect(error.message).not.toContain('Incorrect API key');
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain('sk-test-key-0123456789');
    expect(server.embeddingBodies()).toHaveLength(1);
  });

  it('reports other 4xx as INVALID_ARGUMENT with a short reason, key redacted', async () => {
    server.enqueueEmbeddings({ kind: 'error', status: 400, message: `model does not exist (key ${'sk-test-key-0123456789'} used)` });
    const error = await rejectionOf(embedder().embed(['x']));
    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.message).toContain('HTTP 400 (model does not exist (key [redacted] used))');
    expect(error.message).toContain('embedder.model');
    expect(server.embeddingBodies()).toHaveLength(1);
  });

  it('reports a malformed reply as UNAVAILABLE naming the field', async () => {
    server.enqueueEmbeddings({ kind: 'malformed', body: '{"data": [{"index": 0, "embedding": "AAAA"}]}' });
    const error = await rejectionOf(embedder().embed(['x']));
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, message: expect.stringContaining('data.0.embedding') });
    server.enqueueEmbeddings({ kind: 'malformed' });
    expect(await rejectionOf(embedder().embed(['x']))).toMatchObject({ code: ErrorCode.UNAVAILABLE, message: expect.stringContaining('not JSON') });
  });

  it('times out an attempt after timeoutMs as DEADLINE_EXCEEDED, without retrying it', async () => {
    server.enqueueEmbeddings({ kind: 'embeddings', delayMs: 5_000 });
    const started = Date.now();
    const error = await rejectionOf(embedder({ timeoutMs: 200 }).embed(['slow']));
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(error.code).toBe(ErrorCode.DEADLINE_EXCEEDED);
    expect(error.message).toContain('200 ms');
    expect(error.message).toContain('embedder.timeoutMs');
    expect(server.embeddingBodies()).toHaveLength(1);
  });
});

describe('the embedder config section and createEmbedder', () => {
  const schema = extendConfigSchema({ embedder: embedderConfigSection });
  let configDir: string;
  beforeAll(() => {
    configDir = mkdtempSync(path.join(os.tmpdir(), 'embedder-config-'));
  });
  afterAll(() => rmSync(configDir, { recursive: true, force: true }));

  it('defaults to the offline hashing embedder', () => {
    const config = loadConfig({ schema, configDir, env: {} });
    expect(config.embedder).toMatchObject({ kind: 'hashing', batchSize: 64, timeoutMs: 30_000, maxRetries: 3 });
    expect(createEmbedder(config.embedder).id).toBe('hashing-v1-512');
  });

  it('reads RATCHET_EMBEDDER_* and builds an OpenAI embedder', () => {
    const env = { RATCHET_EMBEDDER_KIND: 'openai', RATCHET_EMBEDDER_BASE_URL: 'http://127.0.0.1:1/v1', RATCHET_EMBEDDER_MODEL: 'nomic-embed-text', RATCHET_EMBEDDER_API_KEY: 'sk-env', RATCHET_EMBEDDER_DIMENSIONS: '256' };
    const config = loadConfig({ schema, configDir, env });
    expect(config.embedder).toMatchObject({ kind: 'openai', apiKey: 'sk-env', dimensions: 256 });
    const embedder = createEmbedder(config.embedder);
    expect(embedder).toBeInstanceOf(OpenAiEmbedder);
    expect(embedder.id).toBe('openai:nomic-embed-text@256');
  });

  it('names the variables to set when kind is openai without a URL or model', () => {
    let error: unknown;
    try {
      loadConfig({ schema, configDir, env: { RATCHET_EMBEDDER_KIND: 'openai' } });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toMatchObject({ code: ErrorCode.CONFIG_INVALID });
    expect((error as Error).message).toContain('RATCHET_EMBEDDER_BASE_URL');
    expect((error as Error).message).toContain('RATCHET_EMBEDDER_MODEL');
    const settings: EmbedderSettings = { kind: 'openai', batchSize: 64, timeoutMs: 1_000, maxRetries: 0 };
    expect(() => createEmbedder(settings)).toThrow(expect.objectContaining({ code: ErrorCode.CONFIG_INVALID }) as never);
  });
});

describe('memory service with the OpenAI embedder, end to end through the fake server', () => {
  let server: FakeOpenAiServer;
  let db: Database;
  let running: RunningService;
  let close: () => Promise<void>;
  let client: ReturnType<typeof createClient<typeof MemoryServiceDefinition>>;

  beforeAll(async () => {
    server = await startFakeOpenAiServer({ embeddingDimension: 64 });
    db = await openPglite({ vector: true });
    const embedder = createEmbedder({ kind: 'openai', baseUrl: server.url, model: 'fake-embed', apiKey: 'sk-e2e', batchSize: 64, timeoutMs: 5_000, maxRetries: 1 });
    const service = await createMemoryService({ db, embedder });
    close = () => service.close();
    const transport = new InProcessTransport();
    running = hostService({ name: 'memory', version: 'test', definition: MemoryServiceDefinition, implementation: service.implementation }, { transport });
    client = createClient(transport, MemoryServiceDefinition);
  });

  afterAll(async () => {
    await running?.stop(100);
    await close?.();
    await db?.close();
    await server?.close();
  });

  it('stores a lesson with vectors from the endpoint and retrieves it for a similar query', async () => {
    const lesson = (taskId: string, title: string, body: string, signature: string) =>
      RecordFailureRequest.fromPartial({
        taskId,
        iteration: 1,
        goal: 'a CLI that manages TODO items in JSON',
        language: Language.LANGUAGE_PYTHON,
        error: { code: 'TESTS_FAILED', message: signature, retryable: false, signature: '', detail: '' },
        failureSummary: 'tests failed',
        candidateLesson: { title, body, errorSignature: signature, tags: [], language: Language.LANGUAGE_PYTHON },
      });
    const json = await client.recordFailure(lesson('task-1', 'Treat an empty JSON file as no items', 'An empty or missing JSON data file means no items: check before calling json load.', 'json.decoder.JSONDecodeError: Expecting value'));
    await client.recordFailure(lesson('task-2', 'Vectorise numpy loops', 'Use array operations instead of Python loops over matrix entries.', 'ValueError: operands could not be broadcast'));
    expect(json.lessonCreated).toBe(true);
    const stored = server.embeddingBodies();
    expect(stored.length).toBeGreaterThanOrEqual(2);
    expect(stored.every((body) => body.model === 'fake-embed')).toBe(true);
    expect(server.requests.every((request) => request.headers.authorization === 'Bearer sk-e2e')).toBe(true);

    const found = await client.retrieveLessons(
      RetrieveLessonsRequest.fromPartial({ taskId: 'task-3', query: 'an empty JSON file means no items', language: Language.LANGUAGE_PYTHON, limit: 5, minScore: 0 }),
    );
    expect(server.embeddingBodies().at(-1)?.input).toEqual(['an empty JSON file means no items']);
    expect(found.lessons[0]?.lesson?.id).toBe(json.lesson?.id);
    const scores = found.lessons.map((scored) => scored.score);
    expect(scores[0]).toBeGreaterThan(scores[1] ?? 0);
  });

  it('fails the call with the embedder error when the endpoint refuses', async () => {
    server.enqueueEmbeddings({ kind: 'error', status: 401, echoApiKey: true });
    const error = await rejectionOf(client.retrieveLessons(RetrieveLessonsRequest.fromPartial({ taskId: 'task-4', query: 'anything', language: Language.LANGUAGE_PYTHON, limit: 5 })));
    expect(error.code).toBe(ErrorCode.UNAUTHENTICATED);
    expect(error.message).not.toContain('sk-e2e');
  });
});

