import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startNatsServer, startNodeProcess } from '@ratchet/testing';
import type { NatsServerFixture } from '@ratchet/testing';
import { AppError, ErrorCode } from '@ratchet/errors';
import { NatsTransport } from '../src/nats/nats-transport';
import { createClient } from '../src/rpc-client';
import { serveService } from '../src/rpc-server';
import { consumeJobs, enqueueJob } from '../src/jobs';
import { echoDefinition, jobCodec } from './echo-service';
import { transportContract, waitUntil } from './transport-contract';

jest.setTimeout(30_000);

describe('NATS transport (real nats-server)', () => {
  let server: NatsServerFixture;
  let main: NatsTransport;
  const peers: NatsTransport[] = [];

  beforeAll(async () => {
    server = await startNatsServer();
    main = await NatsTransport.connect({ url: server.url, name: 'contract-main' });
  });
  afterAll(async () => {
    await Promise.all(peers.map((peer) => peer.close()));
    await main?.close();
    await server?.stop();
  });

  transportContract({
    transport: () => main,
    peer: async () => {
      const peer = await NatsTransport.connect({ url: server.url, name: 'contract-peer' });
      peers.push(peer);
      return peer;
    },
  });

  it('says how to fix it when no server is reachable', async () => {
    const error = await NatsTransport.connect({ url: 'nats://127.0.0.1:1', connectTimeoutMs: 500 }).catch((caught: unknown) => caught);
    expect(AppError.is(error) && error.code).toBe(ErrorCode.UNAVAILABLE);
    expect((error as Error).message).toMatch(/RATCHET_BUS_NATS_URL/);
  });

  it('redelivers the job of a consumer process killed with SIGKILL mid-message', async () => {
    const queue = `killed-${process.pid}`;
    await main.ensureWorkQueue(queue, { ackWaitMs: 1_000, maxDeliver: 3 });
    // A separate process running the built bus, as a sandbox runner would.
    const script = path.join(mkdtempSync(path.join(tmpdir(), 'ratchet-consumer-')), 'consumer.js');
    writeFileSync(script, `
      const { NatsTransport, consumeJobs } = require(require.resolve('@ratchet/bus', { paths: [process.cwd()] }));
      const codec = { encode: (m) => ({ finish: () => Buffer.from(JSON.stringify(m)) }), decode: (b) => JSON.parse(Buffer.from(b).toString()) };
      (async () => {
        const transport = await NatsTransport.connect({ url: process.env.NATS_URL, name: 'doomed-process' });
        await consumeJobs(transport, process.env.QUEUE, codec, async (job) => {
          console.log('working on ' + job.id);
          await new Promise(() => undefined);
        }, { ackWaitMs: 1000, maxDeliver: 3 });
        console.log('consuming');
      })();
    `);
    const consumer = await startNodeProcess({ script, cwd: path.resolve(__dirname, '../../..'), env: { NATS_URL: server.url, QUEUE: queue } });
    try {
      await consumer.waitForLine(/consuming/);
      await enqueueJob(main, queue, jobCodec, { n: 99 }, { id: 'survives-kill' });
      await consumer.waitForLine(/working on survives-kill/);
      await consumer.kill();
    } finally {
      await consumer.kill();
    }
    const received: { id: string; deliveryCount: number }[] = [];
    const survivor = await consumeJobs(main, queue, jobCodec, async (job) => void received.push({ id: job.id, deliveryCount: job.deliveryCount }), { ackWaitMs: 1_000, maxDeliver: 3 });
    try {
      await waitUntil(() => received.length > 0, 10_000);
      expect(received).toEqual([{ id: 'survives-kill', deliveryCount: expect.any(Number) }]);
      expect(received[0]!.deliveryCount).toBeGreaterThanOrEqual(2);
    } finally {
      await survivor.stop(1_000);
    }
  });

  describe('across a server restart', () => {
    it('fails calls fast with a retryable error while down, then reconnects and resumes subscriptions', async () => {
      const definition = echoDefinition();
      const caller = await NatsTransport.connect({ url: server.url, name: 'restart-caller' });
      const responder = await NatsTransport.connect({ url: server.url, name: 'restart-responder' });
      peers.push(caller, responder);
      await serveService(responder, definition, { echo: async (request) => ({ text: request.text, servedBy: 'r', requestId: '' }) }, { queue: 'echo' }).ready;
      const client = createClient(caller, definition, { maxAttempts: 1 });
      expect((await client.echo({ text: 'before' })).text).toBe('before');

      await server.kill();
      await waitUntil(() => !caller.isConnected(), 10_000);
      const started = Date.now();
      const error = await client.echo({ text: 'during' }, { timeoutMs: 5_000 }).catch((caught: unknown) => caught);
      expect(AppError.is(error) && error.code).toBe(ErrorCode.UNAVAILABLE);
      expect((error as AppError).isRetryable).toBe(true);
      expect(Date.now() - started).toBeLessThan(500);

      await server.restart();
      await waitUntil(() => caller.isConnected() && responder.isConnected(), 15_000);
      // The responder's subscription came back with the connection.
      await waitUntil(async () => (await client.echo({ text: 'after' }).then((reply) => reply.text, () => '')) === 'after', 10_000);
    });
  });
});
