import { startNatsServer } from '@ratchet/testing';
import type { NatsServerFixture } from '@ratchet/testing';
import { AppError, ErrorCode } from '@ratchet/errors';
import { NatsTransport } from '../src/nats/nats-transport';
import { createClient } from '../src/rpc-client';
import { serveService } from '../src/rpc-server';
import { echoDefinition } from './echo-service';
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
