import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { startNatsServer, type NatsServerFixture } from './nats-server';

/** Resolves with the error code of a connection attempt, or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/**
 * One request over the raw NATS protocol, so this lib needs no NATS client
 * (only libs/bus may import one): subscribe to an inbox, publish with it as
 * reply subject, return the first message's payload.
 */
function natsRequest(port: number, subject: string, payload: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: '127.0.0.1', port });
    let buffered = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply to ${subject} within 5 s; got: ${buffered}`));
    }, 5000);
    socket.once('error', reject);
    socket.once('connect', () => {
      const body = Buffer.from(payload);
      socket.write('CONNECT {"verbose":false,"pedantic":false}\r\nSUB _INBOX.fixture 1\r\n');
      socket.write(`PUB ${subject} _INBOX.fixture ${body.length}\r\n${payload}\r\n`);
    });
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      const match = /MSG _INBOX\.fixture 1 (\d+)\r\n/.exec(buffered);
      if (match === null) return;
      const start = (match.index ?? 0) + match[0].length;
      const size = Number(match[1]);
      if (buffered.length < start + size) return;
      clearTimeout(timer);
      socket.destroy();
      resolve(buffered.slice(start, start + size));
    });
  });
}

interface JetStreamStatus {
  streams: number;
  config: { max_storage: number; store_dir?: string };
}

async function jsz(server: NatsServerFixture): Promise<JetStreamStatus> {
  const response = await fetch(`http://127.0.0.1:${server.monitorPort}/jsz`);
  expect(response.status).toBe(200);
  return (await response.json()) as JetStreamStatus;
}

describe('startNatsServer', () => {
  let server: NatsServerFixture;

  beforeAll(async () => {
    server = await startNatsServer();
  });

  afterAll(async () => {
    await server.stop();
  });

  it('serves clients and reports JetStream enabled on the monitor port', async () => {
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    expect(server.pid).toEqual(expect.any(Number));
    expect(await tryConnect(server.port)).toBe('connected');
    const status = await jsz(server);
    expect(status.config.max_storage).toBeGreaterThan(0);
    expect(status.config.store_dir?.startsWith(server.storeDir)).toBe(true);
  });

  it('refuses connections after kill() and answers on the same port, with its streams, after restart()', async () => {
    const created = JSON.parse(
      await natsRequest(server.port, '$JS.API.STREAM.CREATE.ORDERS', JSON.stringify({ name: 'ORDERS', subjects: ['orders.>'], storage: 'file' })),
    ) as { error?: unknown; config?: { name: string } };
    expect(created.error).toBeUndefined();
    expect((await jsz(server)).streams).toBe(1);

    const firstPid = server.pid;
    await server.kill();
    expect(server.pid).toBeUndefined();
    expect(await tryConnect(server.port)).toBe('ECONNREFUSED');

    await server.restart();
    expect(server.pid).not.toBe(firstPid);
    expect(await tryConnect(server.port)).toBe('connected');
    expect((await jsz(server)).streams).toBe(1);
  });

  it('restart() of a running server stops it gracefully first', async () => {
    await server.restart();
    expect(await tryConnect(server.port)).toBe('connected');
    expect(server.output()).toContain('restart of nats-server');
  });
});

describe('startNatsServer lifecycle', () => {
  it('stop() is idempotent, removes the store directory and forbids restart()', async () => {
    const server = await startNatsServer({ jetstream: false });
    expect((await jsz(server)).config).toMatchObject({ max_storage: 0 });
    await server.stop();
    await server.stop();
    expect(existsSync(server.storeDir)).toBe(false);
    expect(await tryConnect(server.port)).toBe('ECONNREFUSED');
    await expect(server.restart()).rejects.toMatchObject({ code: 'FAILED_PRECONDITION' });
  });

  it('fails with the server output when nats-server exits during startup', async () => {
    const failure = startNatsServer({ args: ['--no-such-flag'] });
    await expect(failure).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await expect(failure).rejects.toThrow(/no-such-flag/);
  });

  it('names the fix when nats-server cannot be found', async () => {
    const saved = process.env['RATCHET_NATS_SERVER_BIN'];
    const savedPath = process.env['PATH'];
    process.env['RATCHET_NATS_SERVER_BIN'] = '';
    process.env['PATH'] = '';
    try {
      await expect(startNatsServer()).rejects.toThrow(
        'nats-server not found: install it (Debian: apt-get install nats-server) or set RATCHET_NATS_SERVER_BIN',
      );
    } finally {
      if (saved === undefined) delete process.env['RATCHET_NATS_SERVER_BIN'];
      else process.env['RATCHET_NATS_SERVER_BIN'] = saved;
      process.env['PATH'] = savedPath;
    }
  });
});
