import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { freePort } from '@ratchet/testing';
import { runCommand } from './commands';

// The image's HEALTHCHECK script against a real HTTP server standing in for a
// service's operations port: what Docker sees when the service is ready, not
// ready, gone, or hung.
const script = path.resolve(__dirname, '../images/healthcheck.sh');

describe('deploy/images/healthcheck.sh', () => {
  let readiness = { status: 200, body: '{"status":"SERVING"}\n' };
  let paths: string[] = [];
  let http: Server;
  let hung: TcpServer;
  const sockets: Socket[] = [];
  const portOf = (server: Server | TcpServer) => String((server.address() as AddressInfo).port);
  const check = (port: string) => runCommand('bash', [script], { env: { PATH: process.env['PATH'], RATCHET_TELEMETRY_METRICS_PORT: port }, timeoutMs: 20_000 });

  beforeAll(async () => {
    http = createServer((request, response) => {
      paths.push(request.url ?? '');
      response.statusCode = readiness.status;
      response.end(readiness.body);
    });
    // Accepts connections and never answers (until the end, when they are dropped).
    hung = createTcpServer((socket) => void sockets.push(socket));
    await Promise.all([new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve)), new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve))]);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    http.closeAllConnections();
    await Promise.all([new Promise((resolve) => http.close(resolve)), new Promise((resolve) => hung.close(resolve))]);
  });

  it('exits 0 with the report when /readyz answers 200', async () => {
    readiness = { status: 200, body: '{"status":"DEGRADED","reason":"qdrant slow"}\n' };
    paths = [];
    const result = await check(portOf(http));
    expect(result).toEqual({ code: 0, stdout: '{"status":"DEGRADED","reason":"qdrant slow"}\n', stderr: '' });
    expect(paths).toEqual(['/readyz']);
  });

  it('exits 1 with the status and the report when the service is not serving', async () => {
    readiness = { status: 503, body: '{"status":"NOT_SERVING"}' };
    const result = await check(portOf(http));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('not ready: 503 Service Unavailable {"status":"NOT_SERVING"}\n');
  });

  it('exits 1 naming the port when nothing listens, and when the service never answers', async () => {
    const closed = String(await freePort());
    expect(await check(closed)).toEqual({ code: 1, stdout: '', stderr: `no answer on port ${closed}\n` });
    const silent = await check(portOf(hung));
    expect(silent).toEqual({ code: 1, stdout: '', stderr: `no reply on port ${portOf(hung)} within 3 s\n` });
  });
});
