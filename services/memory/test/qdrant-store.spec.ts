import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { extendConfigSchema, loadConfig } from '@ratchet/config';
import { AppError, ErrorCode } from '@ratchet/errors';
import { freePort, rejectionOf } from '@ratchet/testing';
import { parse } from 'yaml';
import { memoryConfigSection, pointIdOf, QdrantVectorStore } from '../src';
import { isSupportedQdrantVersion, qdrantErrorOf, searchFilterOf, uuidV5 } from '../src/adapters/qdrant-store';

describe('Qdrant point ids', () => {
  it('are RFC 4122 version-5 UUIDs (the RFC and Python uuid5 give the same)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
    expect(uuidV5('https://example.com/', '6ba7b811-9dad-11d1-80b4-00c04fd430c8')).toBe('dd2c1780-811a-5296-81c5-178a0ef488bc');
    expect(() => uuidV5('x', 'not-a-uuid')).toThrow(RangeError);
  });

  it('map each lesson id to the same UUID on every run and replica, UTF-8 included', () => {
    // Computed independently with Python: uuid.uuid5(uuid.UUID('0af438ae-161a-47fe-9fed-a78893e19db8'), id).
    expect(pointIdOf('lesson-1')).toBe('dc124dbb-9e22-598d-8cb9-11789e540037');
    expect(pointIdOf('01J9Z3Q4R8K2M5N7P0S1T3V5W7')).toBe('f126cd10-663e-505e-ad4c-8c7afbf0facd');
    expect(pointIdOf('é日本')).toBe('68802ddb-8c4e-554d-8ce7-b36b3d566895');
    expect(pointIdOf('lesson-2')).not.toBe(pointIdOf('lesson-1'));
  });
});

describe('Qdrant search filters', () => {
  it('always keep to the embedder, add kind and language when given, and scopes as any-of', () => {
    expect(searchFilterOf({ embedder: 'e1' })).toEqual({ must: [{ key: 'embedder', match: { value: 'e1' } }] });
    expect(searchFilterOf({ embedder: 'e1', filter: { kind: 'lesson', language: 'python', scopes: ['global', 'git:a/b', 'global'] } })).toEqual({
      must: [
        { key: 'embedder', match: { value: 'e1' } },
        { key: 'kind', match: { value: 'lesson' } },
        { key: 'language', match: { value: 'python' } },
        { key: 'scope', match: { any: ['global', 'git:a/b'] } },
      ],
    });
  });

  it('treat an empty kind or language as no filter, as pgvector does, and an empty scope list as matching nothing', () => {
    expect(searchFilterOf({ embedder: 'e1', filter: { kind: '', language: '' } })).toEqual({ must: [{ key: 'embedder', match: { value: 'e1' } }] });
    expect(searchFilterOf({ embedder: 'e1', filter: { scopes: [] } })).toBeUndefined();
  });
});

describe('Qdrant versions', () => {
  it('accept 1.10 and later (the Query API), refuse older ones and what is no version', () => {
    for (const version of ['1.10.0', '1.10.0-dev', '1.12.4', '2.0.0']) expect(isSupportedQdrantVersion(version)).toBe(true);
    for (const version of ['1.9.7', '0.11.0', '1', 'latest', '']) expect(isSupportedQdrantVersion(version)).toBe(false);
  });
});

describe('Qdrant errors', () => {
  const context = { url: 'http://qdrant:6333', collection: 'ratchet_lessons', action: 'searching collection ratchet_lessons', timeoutMs: 10_000, withApiKey: true };
  // The shapes @qdrant/js-client-rest rejects with: ApiError (an Error with the response's status and parsed body),
  // its own named errors, and fetch's TypeError with the socket error as cause.
  const answered = (status: number, error?: string) => Object.assign(new Error('status text'), { status, statusText: 'status text', data: error === undefined ? undefined : { status: { error }, time: 0.001 } });

  it('make an unreachable server retryable UNAVAILABLE naming the URL and the variable', () => {
    const error = qdrantErrorOf(Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }), context);
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true });
    expect(error.message).toBe('cannot reach Qdrant at http://qdrant:6333 (ECONNREFUSED) while searching collection ratchet_lessons; check RATCHET_MEMORY_QDRANT_URL (memory.qdrant.url) and that Qdrant is running');
  });

  it('make 401 and 403 non-retryable UNAUTHENTICATED saying to set the API key, without quoting the server', () => {
    const refused = qdrantErrorOf(answered(401, 'Invalid api-key secret-echo'), context);
    expect(refused).toMatchObject({ code: ErrorCode.UNAUTHENTICATED, isRetryable: false });
    expect(refused.message).toContain('it refused the API key; set RATCHET_MEMORY_QDRANT_API_KEY');
    expect(refused.message).not.toContain('secret-echo');
    expect(qdrantErrorOf(answered(401), { ...context, withApiKey: false }).message).toContain('it needs an API key; set RATCHET_MEMORY_QDRANT_API_KEY');
    expect(qdrantErrorOf(answered(403), context)).toMatchObject({ code: ErrorCode.UNAUTHENTICATED, message: expect.stringContaining('read-only key') });
  });

  it('map the other statuses and the client timeouts to codes callers branch on', () => {
    expect(qdrantErrorOf(answered(503, 'overloaded'), context)).toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true, message: expect.stringContaining('HTTP 503 while searching collection ratchet_lessons: "overloaded"') });
    expect(qdrantErrorOf(answered(429), context)).toMatchObject({ code: ErrorCode.RESOURCE_EXHAUSTED, isRetryable: true });
    expect(qdrantErrorOf(answered(404, "Collection `ratchet_lessons` doesn't exist!"), context)).toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect(qdrantErrorOf(answered(400, 'Wrong input: Vector dimension error: expected dim: 4, got 5'), context)).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, isRetryable: false, message: expect.stringContaining('expected dim: 4, got 5') });
    const timeout = Object.assign(new Error('This operation was aborted'), { name: 'QdrantClientTimeoutError' });
    expect(qdrantErrorOf(timeout, context)).toMatchObject({ code: ErrorCode.DEADLINE_EXCEEDED, message: expect.stringContaining('within 10000 ms while searching collection ratchet_lessons; check its load, or raise RATCHET_MEMORY_QDRANT_TIMEOUT_MS') });
    const certificate = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }) });
    expect(qdrantErrorOf(certificate, context)).toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('NODE_EXTRA_CA_CERTS') });
    const own = new AppError(ErrorCode.FAILED_PRECONDITION, 'mine');
    expect(qdrantErrorOf(own, context)).toBe(own);
  });
});

describe('the memory config section', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ratchet-memory-config-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const schema = extendConfigSchema({ memory: memoryConfigSection });
  const load = (env: Record<string, string>) => loadConfig({ schema, configDir: dir, env });
  const problemsOf = (env: Record<string, string>) => {
    try {
      load(env);
    } catch (error) {
      expect(AppError.is(error) && error.code).toBe(ErrorCode.CONFIG_INVALID);
      return (error as Error).message;
    }
    throw new Error('expected CONFIG_INVALID');
  };

  it('defaults to pgvector in Postgres and reads the Qdrant settings from their variables', () => {
    expect(load({}).memory).toEqual({ vectors: 'postgres', vectorDataDir: 'data/memory-vectors', qdrant: { collection: 'ratchet_lessons', timeoutMs: 10_000 } });
    expect(load({ RATCHET_MEMORY_VECTORS: 'qdrant', RATCHET_MEMORY_QDRANT_URL: 'https://qdrant.example:6333', RATCHET_MEMORY_QDRANT_API_KEY: 'k3y-of-qdrant', RATCHET_MEMORY_QDRANT_COLLECTION: 'team_lessons', RATCHET_MEMORY_QDRANT_TIMEOUT_MS: '2500' }).memory).toEqual({
      vectors: 'qdrant',
      vectorDataDir: 'data/memory-vectors',
      qdrant: { url: 'https://qdrant.example:6333', apiKey: 'k3y-of-qdrant', collection: 'team_lessons', timeoutMs: 2500 },
    });
  });

  it('requires the URL for qdrant, naming its variable', () => {
    expect(problemsOf({ RATCHET_MEMORY_VECTORS: 'qdrant' })).toMatch(/memory\.qdrant\.url: required when memory\.vectors is qdrant \(e\.g\. http:\/\/qdrant:6333\) \(not set\); set RATCHET_MEMORY_QDRANT_URL/);
  });

  it('refuses a URL that is no http(s) or carries credentials, a bad collection name and a bad timeout, each with its variable', () => {
    const problems = problemsOf({
      RATCHET_MEMORY_VECTORS: 'qdrant',
      RATCHET_MEMORY_QDRANT_URL: 'http://admin:hunter22@qdrant:6333',
      RATCHET_MEMORY_QDRANT_COLLECTION: 'lessons/../x',
      RATCHET_MEMORY_QDRANT_TIMEOUT_MS: '-5',
    });
    expect(problems).toMatch(/memory\.qdrant\.url: must not contain a user or password.*RATCHET_MEMORY_QDRANT_URL/);
    expect(problems).toMatch(/memory\.qdrant\.collection: must be 1 to 255 letters, digits, _ or -.*RATCHET_MEMORY_QDRANT_COLLECTION/);
    expect(problems).toMatch(/memory\.qdrant\.timeoutMs: .*RATCHET_MEMORY_QDRANT_TIMEOUT_MS/);
    expect(problemsOf({ RATCHET_MEMORY_QDRANT_URL: 'grpc://qdrant:6334' })).toMatch(/memory\.qdrant\.url: must be an http\(s\) URL/);
  });

  it('accepts the committed config/memory.yaml', () => {
    const committed = parse(readFileSync(path.resolve(__dirname, '../../../config/memory.yaml'), 'utf8')) as { memory: unknown };
    expect(memoryConfigSection.parse(committed.memory)).toEqual({ vectors: 'postgres', vectorDataDir: 'data/memory-vectors', qdrant: { collection: 'ratchet_lessons', timeoutMs: 10_000 } });
  });
});

describe('QdrantVectorStore.open', () => {
  it('refuses bad settings before any request, as CONFIG_INVALID naming the variables', async () => {
    const error = await rejectionOf(QdrantVectorStore.open({ url: 'qdrant:6333', collection: 'a b', timeoutMs: 0, apiKey: ' ' }));
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(error.message).toContain('RATCHET_MEMORY_QDRANT_URL (memory.qdrant.url) must start with http:// or https://');
    expect(error.message).toContain('RATCHET_MEMORY_QDRANT_COLLECTION (memory.qdrant.collection) must be 1 to 255 letters');
    expect(error.message).toContain('RATCHET_MEMORY_QDRANT_TIMEOUT_MS (memory.qdrant.timeoutMs) must be a positive integer');
    expect(error.message).toContain('RATCHET_MEMORY_QDRANT_API_KEY (memory.qdrant.apiKey) is empty');
  });

  it('says a closed port is unreachable (retryable), and openWithRetry keeps trying until stopped', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const error = await rejectionOf(QdrantVectorStore.open({ url }));
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true });
    expect(error.message).toBe(`cannot reach Qdrant at ${url} (ECONNREFUSED) while reading the server version; check RATCHET_MEMORY_QDRANT_URL (memory.qdrant.url) and that Qdrant is running`);

    const stop = new AbortController();
    const attempts: number[] = [];
    const opening = QdrantVectorStore.openWithRetry({ url }, stop.signal, (failure, attempt) => {
      expect(failure.code).toBe(ErrorCode.UNAVAILABLE);
      attempts.push(attempt);
      if (attempt === 2) stop.abort();
    });
    expect(await rejectionOf(opening)).toMatchObject({ code: ErrorCode.CANCELLED });
    expect(attempts).toEqual([1, 2]);
  });

  describe('against an HTTP server that is not Qdrant', () => {
    // A plain web server (a URL pointing at the wrong server), not a Qdrant stand-in: it shows what the store sends
    // (path prefix, key header) through the real client, and how it reads a foreign server. Qdrant itself is in vector-store.spec.ts.
    let server: Server;
    let base: string;
    const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
    beforeAll(async () => {
      server = createServer((request, response) => {
        seen.push({ url: request.url ?? '', headers: request.headers });
        response.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });
    afterEach(() => {
      seen.length = 0;
      jest.restoreAllMocks();
    });

    it('keeps the path of the URL and sends the key as the api-key header, printing nothing', async () => {
      const warn = jest.spyOn(console, 'warn');
      const error = await rejectionOf(QdrantVectorStore.open({ url: `${base}/qdrant/`, apiKey: 'the-qdrant-key' }));
      expect(error).toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: `the server at ${base}/qdrant does not answer like Qdrant (no version at /); check RATCHET_MEMORY_QDRANT_URL (memory.qdrant.url)` });
      expect(seen.map((request) => request.url)).toEqual(['/qdrant/']);
      expect(seen[0]?.headers['api-key']).toBe('the-qdrant-key');
      expect(warn).not.toHaveBeenCalled();
    });
  });
});
