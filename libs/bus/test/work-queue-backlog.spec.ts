import { ErrorCode } from '@ratchet/errors';
import { startNatsServer, type NatsServerFixture } from '@ratchet/testing';
import { enqueueJob } from '../src/jobs';
import { NatsTransport } from '../src/nats/nats-transport';
import { jobCodec, uniqueName } from './echo-service';

jest.setTimeout(30_000);

describe('NatsTransport.workQueueBacklog', () => {
  let server: NatsServerFixture;
  let transport: NatsTransport;
  beforeAll(async () => {
    server = await startNatsServer();
    transport = await NatsTransport.connect({ url: server.url, name: 'backlog' });
  });
  afterAll(async () => {
    await transport?.close();
    await server?.stop();
  });

  it('counts jobs waiting for a worker, and jobs taken and not yet acknowledged', async () => {
    const queue = uniqueName('backlog');
    await transport.ensureWorkQueue(queue, { ackWaitMs: 10_000 });
    expect(await transport.workQueueBacklog(queue)).toEqual({ pending: 0, ackPending: 0 });
    for (const n of [1, 2, 3]) await enqueueJob(transport, queue, jobCodec, { n }, { id: `job-${n}` });
    expect(await transport.workQueueBacklog(queue)).toEqual({ pending: 3, ackPending: 0 });

    const puller = await transport.puller(queue);
    const taken = await puller.next(1_000);
    expect(await transport.workQueueBacklog(queue)).toEqual({ pending: 2, ackPending: 1 });
    await taken?.ack();
    expect(await transport.workQueueBacklog(queue)).toEqual({ pending: 2, ackPending: 0 });
    await puller.close();
  });

  it('says the queue is not there rather than reporting an empty one', async () => {
    await expect(transport.workQueueBacklog(uniqueName('never-made'))).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
  });
});
