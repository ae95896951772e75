import { createHash, randomBytes } from 'node:crypto';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { AppError, ErrorCode } from '@ratchet/errors';
import { startNatsServer } from '@ratchet/testing';
import type { NatsServerFixture } from '@ratchet/testing';
import { Header, Subjects } from '../src/headers';
import { consumeJobs, enqueueJob } from '../src/jobs';
import { NatsTransport } from '../src/nats/nats-transport';
import { DEAD_LETTER_PAYLOAD_STREAM, PAYLOAD_STREAM } from '../src/nats/streams';
import { createClient } from '../src/rpc-client';
import { serveService } from '../src/rpc-server';
import type { Envelope, Transport } from '../src/transport';
import { echoDefinition, jsonCodec, uniqueName } from './echo-service';
import { transportContract, waitUntil } from './transport-contract';

// Payloads larger than one NATS message travel as chunks through a JetStream
// stream; the message carries only a reference (id, chunks, bytes, SHA-256). Run against a server
// with the default max_payload (1 MiB), so 5 MB could not go inline.
jest.setTimeout(60_000);

const MB = 1024 * 1024;
const digest = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

describe('NATS transport: payloads larger than max_payload', () => {
  let server: NatsServerFixture;
  let inspector: NatsConnection;
  let jsm: JetStreamManager;
  const transports: Transport[] = [];
  const open = async (options: { inlineLimitBytes?: number; name?: string } = {}) => {
    const transport = await NatsTransport.connect({ url: server.url, name: options.name ?? 'payloads', ...(options.inlineLimitBytes === undefined ? {} : { inlineLimitBytes: options.inlineLimitBytes }) });
    transports.push(transport);
    return transport;
  };
  /**
   * The bytes of payload data the stream still holds: a deleted object
   * leaves one empty rollup per chunk, under 256 bytes with its subject and
   * headers, which are not counted.
   */
  const leftovers = async () => {
    const { state } = await jsm.streams.info(PAYLOAD_STREAM);
    return state.bytes - state.messages * 256;
  };
  const emptyBucket = () => waitUntil(async () => (await leftovers()) < 16 * 1024, 10_000);

  beforeAll(async () => {
    server = await startNatsServer();
    inspector = await connect({ servers: server.url, name: 'inspector' });
    jsm = await jetstreamManager(inspector);
    await (await open({ name: 'creates-streams' })).provision({});
  });
  afterAll(async () => {
    await Promise.all(transports.map((transport) => transport.close()));
    await inspector?.close();
    await server?.stop();
  });

  it('sends what fits in one message inline, with room for headers, and never more than the server takes', async () => {
    expect(inspector.info?.max_payload).toBe(MB);
    expect((await open()).inlineLimit()).toBe(MB - 32 * 1024);
    expect((await open({ inlineLimitBytes: 4096 })).inlineLimit()).toBe(4096);
    expect((await open({ inlineLimitBytes: 10 * MB })).inlineLimit()).toBe(MB - 32 * 1024);
  });

  it('round-trips a 5 MB request and a 5 MB reply byte for byte, and leaves the bucket empty', async () => {
    const caller = await open({ name: 'big-caller' });
    const responder = await open({ name: 'big-responder' });
    const request = new Uint8Array(randomBytes(5 * MB));
    const reply = new Uint8Array(randomBytes(5 * MB + 17));
    const seen: Envelope[] = [];
    const subject = `ratchet.test.${uniqueName('big')}`;
    responder.subscribe(subject, { queue: 'big' }, (incoming) => {
      seen.push(incoming);
      incoming.respond(reply, { 'x-answer': 'yes' });
    });
    await responder.flush();

    const answer = await caller.request(subject, request, { timeoutMs: 20_000, headers: { 'x-question': 'q' } });
    expect(digest(answer.data)).toBe(digest(reply));
    expect(answer.data.length).toBe(reply.length);
    expect(answer.headers).toEqual({ 'x-answer': 'yes' });
    expect(digest(seen[0]!.data)).toBe(digest(request));
    // The handler sees the headers it was sent, not the transport's own.
    expect(seen[0]!.headers).toEqual({ 'x-question': 'q' });
    await emptyBucket();
  });

  it('carries typed calls through the object store when they exceed a small inline limit', async () => {
    const definition = echoDefinition();
    const t = await open({ inlineLimitBytes: 1024 });
    const server = serveService(t, definition, { echo: async (request) => ({ text: `${request.text}!`, servedBy: 'big', requestId: '' }) }, { queue: 'echo' });
    await server.ready;
    const client = createClient(t, definition);
    const text = 'x'.repeat(200_000);
    expect((await client.echo({ text })).text).toBe(`${text}!`);
    expect((await client.echo({ text: 'small' })).text).toBe('small!');
    await server.drain(1_000);
    await emptyBucket();
  });

  it('delivers a large job intact and deletes its object once acked', async () => {
    const t = await open({ name: 'jobs' });
    const queue = uniqueName('big-jobs');
    const codec = jsonCodec<{ blob: string }>();
    const blob = randomBytes(3 * MB).toString('base64');
    const received: string[] = [];
    const consumer = await consumeJobs(t, queue, codec, async (job) => {
      expect(job.headers[Header.PAYLOAD_OBJECT]).toBeUndefined();
      received.push(job.message.blob);
    }, { ackWaitMs: 5_000 });
    try {
      await enqueueJob(t, queue, codec, { blob }, { id: 'big-job' });
      // The same id again inside the dedup window is dropped, and so is its object.
      await enqueueJob(t, queue, codec, { blob }, { id: 'big-job' });
      await waitUntil(() => received.length === 1, 20_000);
      expect(received[0] === blob).toBe(true);
      await emptyBucket();
    } finally {
      await consumer.stop(1_000);
    }
  });

  it('keeps the payload of a large dead letter after the job is terminated', async () => {
    const t = await open({ name: 'dead-letters' });
    const queue = uniqueName('big-fatal');
    const codec = jsonCodec<{ blob: string }>();
    const blob = randomBytes(2 * MB).toString('base64');
    const consumer = await consumeJobs(t, queue, codec, async () => {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'cannot run this job');
    }, { ackWaitMs: 5_000 });
    try {
      await enqueueJob(t, queue, codec, { blob }, { id: 'doomed-big' });
      await waitUntil(async () => (await t.deadLetters(queue)).length === 1, 20_000);
      const [letter] = await t.deadLetters(queue);
      expect(letter!.reason).toBe('INVALID_ARGUMENT: cannot run this job');
      expect(letter!.headers[Header.PAYLOAD_OBJECT]).toBeUndefined();
      expect(codec.decode(letter!.data).blob === blob).toBe(true);
      // The job's own object went with the job; the letter's lives in its own stream.
      await emptyBucket();
      expect((await jsm.streams.info(DEAD_LETTER_PAYLOAD_STREAM)).state.bytes).toBeGreaterThan(2 * MB);
    } finally {
      await consumer.stop(1_000);
    }
  });

  it('deletes the object of a request nobody serves', async () => {
    const t = await open({ inlineLimitBytes: 1024 });
    const error = await t.request(`ratchet.test.${uniqueName('nobody')}`, new Uint8Array(64 * 1024), { timeoutMs: 5_000 }).catch((caught: unknown) => caught);
    expect(AppError.is(error) && error.code).toBe(ErrorCode.UNAVAILABLE);
    expect((error as Error).message).toMatch(/no responders/);
    await emptyBucket();
  });

  describe('when the payload object is gone', () => {
    const missing = `missing-object;1;10;${'0'.repeat(64)}`;
    const gone = /payload object missing-object .* is gone from stream RATCHET_PAYLOADS/;

    it('answers a request with a retryable UNAVAILABLE that says so, and keeps serving', async () => {
      const definition = echoDefinition();
      const t = await open();
      const server = serveService(t, definition, { echo: async (request) => ({ text: request.text, servedBy: 'a', requestId: '' }) }, { queue: 'echo' });
      await server.ready;
      const headers = natsHeaders();
      headers.set(Header.PAYLOAD_OBJECT, missing);
      const reply = await inspector.request(`${definition.fullName}.Echo`, new Uint8Array(), { timeout: 5_000, headers });
      expect(reply.headers?.get(Header.ERROR_CODE)).toBe('UNAVAILABLE');
      expect(reply.headers?.get(Header.ERROR_RETRYABLE)).toBe('true');
      expect(reply.headers?.get(Header.ERROR_MESSAGE)).toMatch(gone);
      expect((await createClient(t, definition).echo({ text: 'still here' })).text).toBe('still here');
      await server.drain(1_000);
    });

    it('fails the caller whose reply object is gone with a retryable UNAVAILABLE', async () => {
      const t = await open();
      const subject = `ratchet.test.${uniqueName('gone-reply')}`;
      const subscription = inspector.subscribe(subject, {
        callback: (_error, message) => {
          const headers = natsHeaders();
          headers.set(Header.PAYLOAD_OBJECT, missing);
          message.respond(new Uint8Array(), { headers });
        },
      });
      await inspector.flush();
      const error = await t.request(subject, new Uint8Array(), { timeoutMs: 5_000 }).catch((caught: unknown) => caught);
      subscription.unsubscribe();
      expect(AppError.is(error) && error.code).toBe(ErrorCode.UNAVAILABLE);
      expect((error as AppError).isRetryable).toBe(true);
      expect((error as Error).message).toMatch(gone);
    });

    it('dead-letters a job whose object expired and tells the consumer why', async () => {
      const t = await open();
      const queue = uniqueName('gone-job');
      await t.ensureWorkQueue(queue, { ackWaitMs: 2_000 });
      const headers = natsHeaders();
      headers.set(Header.JOB_ID, 'stale-job');
      headers.set(Header.PAYLOAD_OBJECT, missing);
      await jetstream(inspector).publish(Subjects.queue(queue), new Uint8Array(), { headers, msgID: 'stale-job' });
      const puller = await t.puller(queue);
      try {
        let error: unknown;
        for (let attempt = 0; attempt < 5 && error === undefined; attempt++) {
          error = await puller.next(1_000).then(() => undefined, (caught: unknown) => caught);
        }
        expect(AppError.is(error) && error.code).toBe(ErrorCode.UNAVAILABLE);
        expect((error as AppError).isRetryable).toBe(true);
        expect((error as Error).message).toMatch(/payload object missing-object of job stale-job of .* is gone/);
        const [letter] = await t.deadLetters(queue);
        expect(letter).toEqual(expect.objectContaining({ id: 'stale-job', reason: expect.stringMatching(/^UNAVAILABLE: the payload object missing-object/) }));
        // Terminated: it is not delivered again.
        expect(await puller.next(1_500)).toBeNull();
      } finally {
        await puller.close();
      }
    });
  });
});

describe('NATS transport contract with every payload in the payload stream', () => {
  let server: NatsServerFixture;
  let main: NatsTransport;
  const peers: NatsTransport[] = [];
  // Test messages are a few dozen bytes: a limit of 8 sends nearly all of them through the bucket.
  const connectTransport = (name: string) => NatsTransport.connect({ url: server.url, name, inlineLimitBytes: 8 });

  beforeAll(async () => {
    server = await startNatsServer();
    main = await connectTransport('offload-main');
  });
  afterAll(async () => {
    await Promise.all(peers.map((peer) => peer.close()));
    await main?.close();
    await server?.stop();
  });

  transportContract({
    transport: () => main,
    peer: async () => {
      const peer = await connectTransport('offload-peer');
      peers.push(peer);
      return peer;
    },
  });

  it('did send the payloads through the bucket', async () => {
    const inspector = await connect({ servers: server.url, name: 'offload-inspector' });
    try {
      expect((await (await jetstreamManager(inspector)).streams.info(PAYLOAD_STREAM)).state.last_seq).toBeGreaterThan(100);
    } finally {
      await inspector.close();
    }
  });
});
