import { AppError, ErrorCode } from '@ratchet/errors';
import { metricValue } from '@ratchet/telemetry/testing';
import { InProcessBroker } from '../src/in-process/in-process-broker';
import { InProcessTransport } from '../src/in-process/in-process-transport';
import { createClient } from '../src/rpc-client';
import { serveService } from '../src/rpc-server';
import { echoDefinition, type EchoReply } from './echo-service';


describe('RPC metrics', () => {
  let transport: InProcessTransport;
  beforeEach(() => {
    transport = new InProcessTransport(new InProcessBroker());
  });
  afterEach(() => transport.close());

  it('times every call on both sides and counts errors by code, retries on the client', async () => {
    const definition = echoDefinition();
    let flakyCalls = 0;
    const server = serveService(
      transport,
      definition,
      {
        echo: async (request, context): Promise<EchoReply> => {
          if (request.text === 'flaky' && ++flakyCalls === 1) throw new AppError(ErrorCode.UNAVAILABLE, 'try again');
          if (request.text === 'bad') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'bad text');
          return { text: request.text, servedBy: 'test', requestId: context.requestId };
        },
      },
      { queue: 'echo' },
    );
    await server.ready;
    const client = createClient(transport, definition, { retryBackoffMs: 1 });
    const labels = { rpc_service: definition.name, rpc_method: 'Echo' };

    await client.echo({ text: 'hello' });
    await client.echo({ text: 'flaky' });
    await expect(client.echo({ text: 'bad' })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await expect(client.unserved({ text: 'x' }, { maxAttempts: 1 })).rejects.toMatchObject({ code: ErrorCode.UNIMPLEMENTED });

    // Client: three Echo calls (one of them retried once), one failed for good.
    expect(await metricValue('ratchet_rpc_client_duration_seconds_count', labels)).toBe(3);
    expect(await metricValue('ratchet_rpc_client_retries_total', labels)).toBe(1);
    expect(await metricValue('ratchet_rpc_client_errors_total', { ...labels, code: 'INVALID_ARGUMENT' })).toBe(1);
    expect(await metricValue('ratchet_rpc_client_errors_total', { ...labels, code: 'UNAVAILABLE' })).toBe(0);
    expect(await metricValue('ratchet_rpc_client_errors_total', { rpc_service: definition.name, rpc_method: 'Unserved', code: 'UNIMPLEMENTED' })).toBe(1);

    // Server: four Echo answers (the failed attempt included), two of them errors; Unserved answered UNIMPLEMENTED.
    expect(await metricValue('ratchet_rpc_server_duration_seconds_count', labels)).toBe(4);
    expect(await metricValue('ratchet_rpc_server_errors_total', { ...labels, code: 'UNAVAILABLE' })).toBe(1);
    expect(await metricValue('ratchet_rpc_server_errors_total', { ...labels, code: 'INVALID_ARGUMENT' })).toBe(1);
    expect(await metricValue('ratchet_rpc_server_errors_total', { rpc_service: definition.name, rpc_method: 'Unserved', code: 'UNIMPLEMENTED' })).toBe(1);
    await server.drain(1_000);
  });

  it('counts a call answered at its deadline once, as DEADLINE_EXCEEDED, though the handler finishes later', async () => {
    const definition = echoDefinition();
    // The handler runs until the server gives up on it at the deadline, whatever the machine's
    // load: a fixed sleep just past a short deadline let a busy machine deliver the call after
    // its deadline, and the server then never started the handler this test waits for.
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const server = serveService(
      transport,
      definition,
      {
        echo: async (request, context): Promise<EchoReply> => {
          await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
          setImmediate(finished);
          return { text: request.text, servedBy: 'test', requestId: context.requestId };
        },
      },
      { queue: 'echo' },
    );
    await server.ready;
    await expect(createClient(transport, definition).echo({ text: 'slow' }, { timeoutMs: 1_000, maxAttempts: 1 })).rejects.toMatchObject({ code: ErrorCode.DEADLINE_EXCEEDED });
    await done;
    const labels = { rpc_service: definition.name, rpc_method: 'Echo' };
    expect(await metricValue('ratchet_rpc_server_errors_total', { ...labels, code: 'DEADLINE_EXCEEDED' })).toBe(1);
    expect(await metricValue('ratchet_rpc_server_duration_seconds_count', labels)).toBe(1);
    expect(await metricValue('ratchet_rpc_client_errors_total', { ...labels, code: 'DEADLINE_EXCEEDED' })).toBe(1);
    await server.drain(1_000);
  });
});
