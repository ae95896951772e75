import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { AppError, ErrorCode } from '@ratchet/errors';
import { startNatsServer } from '@ratchet/testing';
import type { NatsServerFixture } from '@ratchet/testing';
import { Header } from '../src/headers';
import { NatsTransport } from '../src/nats/nats-transport';
import { busRoles, inboxPrefixOf, natsAuthorizationConfig, natsPasswordVariable, type BusRoleName } from '../src/nats/permissions';
import { createQueueCaller, DroppedResult, REPLY_TO_HEADER, serveFromQueue } from '../src/queued-call';
import { PAYLOAD_STREAM, queueStream } from '../src/nats/streams';
import { jsonCodec } from './echo-service';

jest.setTimeout(30_000);

const shipped = path.resolve(__dirname, '..', '..', '..', 'deploy', 'nats', 'authorization.conf');
/** kustomize reads no file outside its root, so the dev overlay ships a copy of its own. */
const shippedForKubernetes = path.resolve(__dirname, '..', '..', '..', 'k8s', 'overlays', 'dev', 'nats', 'authorization.conf');
const roles = Object.keys(busRoles) as BusRoleName[];
const SANDBOX_QUEUE = 'sandbox-jobs';
interface Job {
  id: string;
  payload: string;
}
const jobCodec = jsonCodec<Job>();
const codecs = { request: jobCodec, response: jobCodec };

const failure = (promise: Promise<unknown>) => promise.then(
  () => undefined,
  (error: unknown) => AppError.from(error),
);

describe('NATS with the shipped authorization (real nats-server)', () => {
  let server: NatsServerFixture;
  // nats-server reads a variable's value as a config value: start with a letter so it stays a string.
  const passwords = Object.fromEntries(roles.map((role) => [role, `p${randomBytes(16).toString('hex')}`])) as Record<BusRoleName, string>;
  const open: NatsTransport[] = [];

  /** A connection as `role` would make it: its user, its password, its own inbox prefix. */
  const as = async (role: BusRoleName) => {
    const transport = await NatsTransport.connect({ url: server.url, name: `as-${role}`, credentials: { user: role, password: passwords[role] }, inboxPrefix: inboxPrefixOf(role) });
    open.push(transport);
    return transport;
  };

  /** A bare client as `role`, for what a thief with its credential would try outside Ratchet's code. */
  const raw = (role: BusRoleName) => connect({ servers: server.url, user: role, pass: passwords[role], inboxPrefix: inboxPrefixOf(role) });

  beforeAll(async () => {
    server = await startNatsServer({
      config: readFileSync(shipped, 'utf8'),
      env: Object.fromEntries(roles.map((role) => [natsPasswordVariable(role), passwords[role]])),
    });
    // As at a deployment's start: the orchestrator creates the streams and the queues' consumers.
    await (await as('orchestrator')).provision({ [SANDBOX_QUEUE]: { ackWaitMs: 10_000, maxDeliver: 3 } });
  });
  afterAll(async () => {
    await Promise.all(open.map((transport) => transport.close()));
    await server?.stop();
  });

  it('ships deploy/nats/authorization.conf and its k8s copy as the roles in permissions.ts make them (else run node tools/nats-config.mjs)', () => {
    const users = roles.map((role) => ({ role, user: role, password: `$${natsPasswordVariable(role)}` }));
    expect(readFileSync(shipped, 'utf8')).toBe(natsAuthorizationConfig(users));
    expect(readFileSync(shippedForKubernetes, 'utf8')).toBe(natsAuthorizationConfig(users));
  });

  it('refuses a client without credentials or with a wrong password, saying what to set', async () => {
    for (const credentials of [undefined, { user: 'memory', password: 'wrong' }, { user: 'intruder', password: 'x' }]) {
      const error = await failure(NatsTransport.connect({ url: server.url, connectTimeoutMs: 2_000, ...(credentials ? { credentials } : {}) }));
      expect(error?.code).toBe(ErrorCode.UNAUTHENTICATED);
      expect(error?.isRetryable).toBe(false);
      expect(error?.message).toMatch(/RATCHET_BUS_NATS_USER/);
      expect(error?.message).not.toContain('wrong');
    }
  });

  it('takes credentials from the URL, and never repeats the password in an error', async () => {
    const transport = await NatsTransport.connect({ url: server.url.replace('nats://', `nats://probe:${passwords.probe}@`), inboxPrefix: inboxPrefixOf('probe') });
    open.push(transport);
    expect(transport.isConnected()).toBe(true);
    const error = await failure(NatsTransport.connect({ url: server.url.replace('nats://', 'nats://probe:not-it@'), connectTimeoutMs: 2_000 }));
    expect(error?.code).toBe(ErrorCode.UNAUTHENTICATED);
    expect(error?.message).not.toContain('not-it');
  });

  it('lets only memory answer memory subjects, and only the orchestrator call them', async () => {
    const [memory, orchestrator, planner] = await Promise.all([as('memory'), as('orchestrator'), as('planner')]);
    const subject = 'ratchet.v1.MemoryService.RecordFailure';
    // The planner tries to answer memory calls in memory's place: its subscription is refused.
    const impostor: string[] = [];
    planner.subscribe(subject, { queue: 'evil' }, (request) => (impostor.push(request.subject), request.respond(Buffer.from('forged'))));
    await planner.flush().catch(() => undefined);
    const noneYet = await failure(orchestrator.request(subject, Buffer.from('{}'), { timeoutMs: 1_000 }));
    expect(noneYet?.code).toBe(ErrorCode.UNAVAILABLE);
    expect(impostor).toEqual([]);

    memory.subscribe(subject, { queue: 'memory' }, (request) => request.respond(Buffer.from('stored')));
    await memory.flush();
    const reply = await orchestrator.request(subject, Buffer.from('{}'), { timeoutMs: 2_000 });
    expect(Buffer.from(reply.data).toString()).toBe('stored');

    // The planner writing a lesson straight into memory: refused, and memory never sees it.
    const denied = await failure(planner.request(subject, Buffer.from('{"lesson":"add os.system(...)"}'), { timeoutMs: 2_000 }));
    expect(denied?.code).toBe(ErrorCode.PERMISSION_DENIED);
    expect(denied?.message).toMatch(/not allowed to send requests on ratchet\.v1\.MemoryService\.RecordFailure/);
  });

  it('keeps each role to what it calls: no sandbox job from the coder or the planner, only Health for the probe', async () => {
    const [coder, planner, probe] = await Promise.all([as('coder'), as('planner'), as('probe')]);
    for (const [transport, subject] of [
      [coder, 'ratchet.v1.SandboxRunnerService.RunJob'],
      [coder, 'ratchet.v1.SandboxRunnerService.runner-1.RunJob'],
      [planner, 'ratchet.v1.SandboxRunnerService.OpenSession'],
      [planner, 'ratchet.v1.OrchestratorService.SubmitTask'],
      [probe, 'ratchet.v1.OrchestratorService.ListTasks'],
      [probe, 'ratchet.v1.MemoryService.RetrieveLessons'],
    ] as const) {
      expect((await failure(transport.request(subject, Buffer.from('{}'), { timeoutMs: 2_000 })))?.code).toBe(ErrorCode.PERMISSION_DENIED);
    }
    // Allowed calls get through to the (absent) service: no responders, not a permission error.
    expect((await failure(probe.request('ratchet.v1.MemoryService.Health', Buffer.from('{}'), { timeoutMs: 2_000 })))?.code).toBe(ErrorCode.UNAVAILABLE);
    expect((await failure(coder.request('ratchet.v1.SandboxRunnerService.OpenSession', Buffer.from('{}'), { timeoutMs: 2_000 })))?.code).toBe(ErrorCode.UNAVAILABLE);
  });

  it('lets only the tester and safety enqueue sandbox jobs and only runners take them; nobody else reads them', async () => {
    const [tester, runner, orchestrator, planner, safety] = await Promise.all([as('tester'), as('sandbox-runner'), as('orchestrator'), as('planner'), as('safety')]);
    await runner.ensureWorkQueue(SANDBOX_QUEUE);
    expect((await failure(orchestrator.enqueue(SANDBOX_QUEUE, jobCodec.encode({ id: 'x', payload: 'rm -rf' }).finish(), { id: 'orchestrator-job' })))?.code).toBe(ErrorCode.PERMISSION_DENIED);
    expect((await failure(planner.puller(SANDBOX_QUEUE)))?.code).toBe(ErrorCode.PERMISSION_DENIED);
    expect((await failure(tester.puller(SANDBOX_QUEUE)))?.code).toBe(ErrorCode.PERMISSION_DENIED);

    // Listening on the queue's subject or the tester's inbox with a raw client shows nothing either.
    const raw = await connect({ servers: server.url, user: 'planner', pass: passwords.planner, inboxPrefix: inboxPrefixOf('planner') });
    const sniffed: string[] = [];
    for (const subject of ['ratchet.v1.queue.>', 'ratchet.v1.results.>', `${inboxPrefixOf('tester')}.>`, '$JS.>', '>']) {
      raw.subscribe(subject, { callback: (_error, message) => void sniffed.push(message.subject) });
    }
    await tester.enqueue(SANDBOX_QUEUE, jobCodec.encode({ id: 'real', payload: 'pytest' }).finish(), { id: `real-${Date.now()}` });
    const puller = await runner.puller(SANDBOX_QUEUE);
    const delivery = await puller.next(2_000);
    expect(jobCodec.decode(delivery!.data)).toEqual({ id: 'real', payload: 'pytest' });
    await delivery!.ack();
    // Safety's Bandit scans are sandbox jobs too.
    await safety.enqueue(SANDBOX_QUEUE, jobCodec.encode({ id: 'bandit', payload: 'python3 -m bandit' }).finish(), { id: `bandit-${Date.now()}` });
    const scan = await puller.next(2_000);
    expect(jobCodec.decode(scan!.data)).toEqual({ id: 'bandit', payload: 'python3 -m bandit' });
    await scan!.ack();
    expect((await failure(safety.puller(SANDBOX_QUEUE)))?.code).toBe(ErrorCode.PERMISSION_DENIED);
    await puller.close();
    await raw.flush().catch(() => undefined);
    expect(sniffed).toEqual([]);
    await raw.close();
  });

  it('drops a forged result, from a client that may send results but was never given the job, and uses the real one', async () => {
    const [tester, runner, forger] = await Promise.all([as('tester'), as('sandbox-runner'), as('sandbox-runner')]);
    const dropped: { reason: string; jobId?: string }[] = [];
    const caller = createQueueCaller(tester, SANDBOX_QUEUE, codecs, { defaultTimeoutMs: 10_000, onDropped: (event) => dropped.push(event) });
    let forged: Promise<unknown> | undefined;
    const consumer = await serveFromQueue<Job, Job>(runner, SANDBOX_QUEUE, codecs, async (message, { job }) => {
      // The forger answers first, on the right subject, with "all tests passed" and a made-up signature.
      const replyTo = job.headers[REPLY_TO_HEADER]!;
      forged = Promise.all([
        forger.request(replyTo, jobCodec.encode({ id: message.id, payload: '5/5 passed' }).finish(), { timeoutMs: 2_000 }),
        forger.request(replyTo, jobCodec.encode({ id: message.id, payload: '5/5 passed' }).finish(), { timeoutMs: 2_000, headers: { [Header.RESULT_SIGNATURE]: randomBytes(32).toString('base64url') } }),
      ]);
      await forged;
      return { id: message.id, payload: '1/5 passed' };
    });
    try {
      const result = await caller.call('task-1', { id: 'task-1', payload: 'pytest -q' });
      expect(result).toEqual({ id: 'task-1', payload: '1/5 passed' });
      expect(dropped).toEqual([
        { reason: DroppedResult.UNSIGNED, subject: expect.stringContaining('ratchet.v1.results.sandbox-jobs.'), jobId: 'task-1' },
        { reason: DroppedResult.UNSIGNED, subject: expect.stringContaining('ratchet.v1.results.sandbox-jobs.'), jobId: 'task-1' },
      ]);
    } finally {
      await consumer.stop(1_000);
      await caller.close();
    }
  });

  describe('a stolen service credential and the JetStream streams', () => {
    const attempt = (promise: Promise<unknown>) => promise.then(
      () => 'allowed',
      (error: unknown) => String(error instanceof Error ? error.message : error),
    );
    const serviceRoles = roles.filter((role) => role !== 'orchestrator');

    it('creates no stream and no stream with extra subjects: nothing can capture the replies sent to the orchestrator', async () => {
      for (const role of serviceRoles) {
        const nc = await raw(role);
        const jsm = await jetstreamManager(nc, { timeout: 2_000 }).catch(() => undefined);
        if (jsm) {
          for (const name of [PAYLOAD_STREAM, 'OBJ_RATCHET_PAYLOADS', 'CAPTURE']) {
            expect(await attempt(jsm.streams.add({ name, subjects: [`${inboxPrefixOf('orchestrator')}.>`, 'ratchet.v1.events.*'], storage: StorageType.File }))).toMatch(/permission/i);
          }
          expect(await attempt(jsm.streams.update(PAYLOAD_STREAM, { subjects: ['ratchet.v1.payloads.>', `${inboxPrefixOf('orchestrator')}.>`] }))).toMatch(/permission/i);
        }
        await nc.close();
      }
    });

    it('creates no consumer: no push consumer delivers into memory, no one redirects the workers', async () => {
      for (const role of serviceRoles) {
        const nc = await raw(role);
        const jsm = await jetstreamManager(nc, { timeout: 2_000 }).catch(() => undefined);
        if (jsm) {
          for (const stream of [PAYLOAD_STREAM, queueStream(SANDBOX_QUEUE), 'RATCHET_EVENTS']) {
            const push = { durable_name: `evil-${role}`, deliver_subject: 'ratchet.v1.MemoryService.ImportLessons', deliver_group: 'memory', ack_policy: AckPolicy.None };
            expect(await attempt(jsm.consumers.add(stream, push))).toMatch(/permission/i);
          }
          expect(await attempt(jsm.consumers.update(queueStream(SANDBOX_QUEUE), 'workers', { ack_wait: 1_000_000_000 }))).toMatch(/permission/i);
        }
        await nc.close();
      }
    });

    it('purges nothing and deletes no message of another role', async () => {
      const big = new Uint8Array(randomBytes(2 * 1024 * 1024));
      const [memory, orchestrator] = await Promise.all([as('memory'), as('orchestrator')]);
      const subject = 'ratchet.v1.MemoryService.ImportLessons';
      const seen: number[] = [];
      memory.subscribe(subject, { queue: 'memory' }, (request) => (seen.push(request.data.length), request.respond(request.data)));
      await memory.flush();
      // A large call leaves its chunks in the stream for a moment: what a thief would erase.
      const echoed = await orchestrator.request(subject, big, { timeoutMs: 10_000 });
      expect(Buffer.from(echoed.data).equals(Buffer.from(big))).toBe(true);
      for (const role of serviceRoles) {
        const nc = await raw(role);
        const jsm = await jetstreamManager(nc, { timeout: 2_000 }).catch(() => undefined);
        if (jsm) {
          expect(await attempt(jsm.streams.purge(PAYLOAD_STREAM))).toMatch(/permission/i);
          expect(await attempt(jsm.streams.deleteMessage(PAYLOAD_STREAM, 1))).toMatch(/permission/i);
          expect(await attempt(jsm.streams.delete(PAYLOAD_STREAM))).toMatch(/permission/i);
        }
        await nc.close();
      }
      expect(seen).toEqual([big.length]);
    });

    it("reads and writes payloads only for the subjects the role sends and receives on", async () => {
      const coder = await raw('coder');
      const js = jetstream(coder);
      // A lesson planted as the payload of a call to memory, or a sandbox job of its own making: refused.
      for (const chunk of ['ratchet.v1.payloads.ratchet.v1.MemoryService.ImportLessons.x.0', 'ratchet.v1.payloads.ratchet.v1.queue.sandbox-jobs.x.0']) {
        expect(await attempt(js.publish(chunk, Buffer.from('lesson')))).not.toBe('allowed');
      }
      // Reading what others receive, by subject or by sequence: refused.
      for (const api of [`$JS.API.DIRECT.GET.${PAYLOAD_STREAM}.ratchet.v1.payloads.${inboxPrefixOf('orchestrator')}.>`, `$JS.API.DIRECT.GET.${PAYLOAD_STREAM}`, `$JS.API.STREAM.MSG.GET.${PAYLOAD_STREAM}`]) {
        expect(await attempt(coder.request(api, JSON.stringify({ seq: 1 }), { timeout: 2_000 }))).toMatch(/permission/i);
      }
      await coder.close();
    });
  });

  it('refuses a stream that was made with other subjects, and the orchestrator deletes push consumers it never made', async () => {
    // A server without authorization, where someone set up the streams before Ratchet did.
    const open = await startNatsServer();
    const nc = await connect({ servers: open.url });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: PAYLOAD_STREAM, subjects: ['ratchet.v1.payloads.>', `${inboxPrefixOf('orchestrator')}.>`], retention: RetentionPolicy.Limits, allow_direct: true, allow_rollup_hdrs: true });
      await jsm.streams.add({ name: 'RATCHET_EVENTS', subjects: ['ratchet.v1.events.*'], retention: RetentionPolicy.Limits });
      await jsm.consumers.add('RATCHET_EVENTS', { durable_name: 'tap', deliver_subject: 'ratchet.v1.MemoryService.ImportLessons', ack_policy: AckPolicy.None });
      const service = await NatsTransport.connect({ url: open.url, name: 'victim', inlineLimitBytes: 1024 });
      try {
        const error = await failure(service.request('ratchet.v1.MemoryService.ImportLessons', new Uint8Array(4096), { timeoutMs: 5_000 }));
        expect(error?.code).toBe(ErrorCode.FAILED_PRECONDITION);
        expect(error?.message).toMatch(/stream RATCHET_PAYLOADS is not as Ratchet creates it \(subjects .*_INBOX_orchestrator.*\).*nats stream rm RATCHET_PAYLOADS/);
        const provisioning = await failure(service.provision({}));
        expect(provisioning?.code).toBe(ErrorCode.FAILED_PRECONDITION);
        await jsm.streams.delete(PAYLOAD_STREAM);
        expect(await service.provision({})).toEqual(['RATCHET_EVENTS/tap -> ratchet.v1.MemoryService.ImportLessons']);
        expect((await jsm.consumers.list('RATCHET_EVENTS').next()).map((consumer) => consumer.name)).toEqual([]);
        // Made as Ratchet makes it, the stream serves a large call.
        service.subscribe('ratchet.test.big', { queue: 'big' }, (request) => request.respond(request.data));
        await service.flush();
        expect((await service.request('ratchet.test.big', new Uint8Array(4096).fill(7), { timeoutMs: 5_000 })).data[4095]).toBe(7);
      } finally {
        await service.close();
      }
    } finally {
      await nc.close();
      await open.stop();
    }
  });
});
