import { chmod } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * The install sandbox's only way out: an HTTP proxy on a Unix socket that
 * lets through CONNECT tunnels and plain-HTTP requests to the configured
 * registries' host:port only, refuses everything else with 403 and records
 * what it refused and which registry it could not reach.
 *
 * Hand-written on node:http and node:net: the filter is a set lookup on the
 * request's host:port. The npm packages that filter by host (harrier,
 * filter-proxy) are unmaintained for years; the maintained forward proxies
 * (proxy-chain, straightforward) are general servers (upstream chaining,
 * authentication, MITM options) where the filter would still be a callback
 * of ours, so a dependency would add more code to trust than this file
 * holds. It reads no TLS: a tunnel's bytes go through untouched, and the
 * installer checks the registry's certificate itself.
 */
export class RegistryProxy {
  /** Hosts refused, "host:port", in the order first seen. */
  readonly refused = new Set<string>();
  /** Allowed hosts the proxy could not reach, with the error. */
  readonly unreachable = new Map<string, string>();
  private readonly sockets = new Set<Duplex>();

  private constructor(
    private readonly server: http.Server,
    private readonly allowed: ReadonlySet<string>,
  ) {}

  /**
   * Starts a proxy listening on `socketPath` (mode 0666: the sandbox user,
   * whoever the runner is, must connect; the directory holding it decides who
   * can reach it) that lets through `allowedHosts` ("host:port", any case).
   *
   * @throws the listen error (path too long, directory missing).
   */
  static async start(socketPath: string, allowedHosts: readonly string[]): Promise<RegistryProxy> {
    const server = http.createServer();
    const proxy = new RegistryProxy(server, new Set(allowedHosts.map((host) => host.toLowerCase())));
    server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => proxy.forward(request, response));
    server.on('connect', (request: http.IncomingMessage, socket: Duplex, head: Buffer) => proxy.tunnel(request, socket, head));
    server.on('connection', (socket: net.Socket) => proxy.track(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    await chmod(socketPath, 0o666);
    return proxy;
  }

  /** Stops listening and cuts every connection still open. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: Duplex): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  /** Whether `host:port` may be reached; records it when not. */
  private admit(hostPort: string): boolean {
    if (this.allowed.has(hostPort)) return true;
    this.refused.add(hostPort);
    return false;
  }

  private tunnel(request: http.IncomingMessage, client: Duplex, head: Buffer): void {
    this.track(client);
    client.on('error', () => client.destroy());
    const target = parseAuthority(request.url ?? '');
    if (target === undefined) return void client.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    if (!this.admit(target.key)) {
      return void client.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nratchet: ${target.key} is not a configured package registry\n`);
    }
    const upstream = net.connect({ host: target.host, port: target.port });
    this.track(upstream);
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (!connected && client.writable) {
        this.unreachable.set(target.key, error.code ?? error.message);
        client.end(`HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nratchet: ${target.key} did not answer (${error.code ?? error.message})\n`);
      } else {
        client.destroy();
      }
    });
    upstream.once('close', () => client.destroy());
    client.once('close', () => upstream.destroy());
  }

  private forward(request: http.IncomingMessage, response: http.ServerResponse): void {
    let url: URL;
    try {
      url = new URL(request.url ?? '');
    } catch {
      response.writeHead(400, { 'Content-Type': 'text/plain', Connection: 'close' }).end('ratchet: a proxy request needs an absolute http:// URL\n');
      return;
    }
    if (url.protocol !== 'http:') {
      response.writeHead(400, { 'Content-Type': 'text/plain', Connection: 'close' }).end(`ratchet: ${url.protocol} is not proxied; use CONNECT for https\n`);
      return;
    }
    const key = `${url.hostname.toLowerCase().replace(/\.$/, '')}:${url.port === '' ? '80' : url.port}`;
    if (!this.admit(key)) {
      response.writeHead(403, { 'Content-Type': 'text/plain', Connection: 'close' }).end(`ratchet: ${key} is not a configured package registry\n`);
      return;
    }
    const headers = { ...request.headers };
    for (const hop of ['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade']) delete headers[hop];
    const upstream = http.request({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80), method: request.method, path: `${url.pathname}${url.search}`, headers, agent: false }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.statusMessage, stripHopHeaders(answer.headers));
      answer.pipe(response);
    });
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (!response.headersSent) {
        this.unreachable.set(key, error.code ?? error.message);
        response.writeHead(502, { 'Content-Type': 'text/plain', Connection: 'close' }).end(`ratchet: ${key} did not answer (${error.code ?? error.message})\n`);
      } else {
        response.destroy();
      }
    });
    request.pipe(upstream);
  }
}

/** host, port and "host:port" (lower case, IPv6 in brackets) of a CONNECT target; undefined when malformed. */
export function parseAuthority(authority: string): { host: string; port: number; key: string } | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(authority);
  const [, host, portText] = match ?? [];
  if (host === undefined || portText === undefined) return undefined;
  const port = Number(portText);
  if (port < 1 || port > 65_535) return undefined;
  const named = host.toLowerCase().replace(/\.$/, '');
  return { host: named.replace(/^\[|\]$/g, ''), port, key: `${named}:${port}` };
}

function stripHopHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const kept = { ...headers };
  for (const hop of ['connection', 'keep-alive', 'transfer-encoding', 'proxy-authenticate', 'trailer', 'upgrade']) delete kept[hop];
  return kept;
}
