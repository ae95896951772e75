import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient, NatsTransport } from '@ratchet/bus';
import { HealthStatus, MemoryServiceDefinition } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { EXIT_CONFIG } from '@ratchet/runtime';
import { serviceProcessContract } from '@ratchet/runtime/testing';
import { freePort, rejectionOf, startNatsServer, startNodeProcess, startPostgres, type NatsServerFixture, type PostgresFixture } from '@ratchet/testing';

// Debian's Postgres has no pgvector, so the vectors go to an embedded store here.
serviceProcessContract({
  name: 'memory',
  packageDir: path.join(__dirname, '..'),
  definition: MemoryServiceDefinition,
  postgres: true,
  dependencies: ['postgres'],
  env: { RATCHET_MEMORY_VECTORS: 'pglite', RATCHET_MEMORY_VECTOR_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'ratchet-memory-vectors-')) },
});

describe('memory process with vectors in Qdrant', () => {
  const repoRoot = path.resolve(__dirname, '../../..');
  let nats: NatsServerFixture;
  let postgres: PostgresFixture;
  beforeAll(async () => {
    [nats, postgres] = await Promise.all([startNatsServer(), startPostgres()]);
  }, 60_000);
  afterAll(async () => {
    await nats?.stop();
    await postgres?.stop();
  });
  const start = (env: Record<string, string>) =>
    startNodeProcess({
      script: path.join(__dirname, '..', 'dist', 'main.js'),
      nodeArgs: ['--require', '@ratchet/telemetry/register'],
      cwd: repoRoot,
      env: { RATCHET_CONFIG_DIR: path.join(repoRoot, 'config'), RATCHET_LOG_LEVEL: 'info', RATCHET_BUS_NATS_URL: nats.url, RATCHET_DATABASE_URL: postgres.connectionString, RATCHET_MEMORY_VECTORS: 'qdrant', ...env },
    });

  it('waits for an unreachable Qdrant: NOT_SERVING saying why, calls UNAVAILABLE, and still stops cleanly', async () => {
    const qdrantUrl = `http://127.0.0.1:${await freePort()}`;
    const service = await start({ RATCHET_MEMORY_QDRANT_URL: qdrantUrl });
    try {
      await service.waitForLine(/Qdrant not reachable yet/, 30_000);
      await service.waitForLine(/"msg":"ready"/, 30_000);
      const transport = await NatsTransport.connect({ url: nats.url, name: 'memory-probe' });
      try {
        const memory = createClient(transport, MemoryServiceDefinition);
        const health = await memory.health({}, { timeoutMs: 5_000 });
        expect(health.status).toBe(HealthStatus.HEALTH_STATUS_NOT_SERVING);
        expect(health.dependencies).toEqual([
          { name: 'bus:nats', status: HealthStatus.HEALTH_STATUS_SERVING, detail: 'connected' },
          { name: 'postgres', status: HealthStatus.HEALTH_STATUS_SERVING, detail: 'connected' },
          { name: 'qdrant', status: HealthStatus.HEALTH_STATUS_NOT_SERVING, detail: expect.stringContaining(`cannot reach Qdrant at ${qdrantUrl} (ECONNREFUSED)`) },
        ]);
        expect(health.dependencies[2]?.detail).toContain('check RATCHET_MEMORY_QDRANT_URL');
        const listing = memory.listLessons({ pageSize: 10, pageToken: '', language: 0, tags: [], errorSignature: '', scope: '', status: 0, team: '' }, { timeoutMs: 3_000 });
        expect(await rejectionOf(listing)).toMatchObject({ code: ErrorCode.UNAVAILABLE, message: 'the memory service is starting: waiting for Qdrant' });
      } finally {
        await transport.close();
      }
      expect(await service.terminate('SIGTERM', 10_000)).toEqual({ code: 0, signal: null });
      expect(service.output()).toMatch(/"msg":"stopped"/);
    } finally {
      await service.kill();
    }
  }, 90_000);

  it('refuses vectors: qdrant without a URL at start, naming the variable', async () => {
    const service = await start({});
    expect((await service.exited).code).toBe(EXIT_CONFIG);
    expect(service.output()).toMatch(/memory\.qdrant\.url: required when memory\.vectors is qdrant.*RATCHET_MEMORY_QDRANT_URL/);
  }, 30_000);
});
