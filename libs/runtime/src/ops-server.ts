import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HealthStatus, healthStatusToJSON } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';

/** The `telemetry.metrics` config section. */
export interface OpsSettings {
  readonly port?: number | undefined;
  readonly host: string;
  readonly token?: string | undefined;
  readonly allowUnauthenticated: boolean;
}

export interface OpsServerOptions {
  readonly port: number;
  readonly host: string;
  /** Bearer token `/metrics` requires; none means anyone who can connect may read it. */
  readonly token?: string | undefined;
  /** The Prometheus registry to serve (prom-client's `Registry`). */
  readonly registry: { metrics(): Promise<string>; readonly contentType: string };
  /** The service's overall Health status, as its Health RPC reports it. */
  readonly health: () => Promise<HealthStatus>;
  readonly logger?: { warn(details: object, message: string): void };
}

export interface OpsServer {
  /** The port listened on. */
  readonly port: number;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

/** True for a host name or address that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare) || /^::ffff:127\.\d+\.\d+\.\d+$/.test(bare);
}

/**
 * Checks the `telemetry.metrics` section before anything listens: metrics
 * name the services, RPCs and models of a deployment, so serving them beyond
 * this machine needs a token, or an explicit `allowUnauthenticated`.
 * @throws AppError CONFIG_INVALID naming the variables to set.
 */
export function checkOpsSettings(settings: OpsSettings): void {
  if (settings.port === undefined || isLoopbackHost(settings.host) || settings.token !== undefined || settings.allowUnauthenticated) return;
  throw new AppError(
    ErrorCode.CONFIG_INVALID,
    `telemetry.metrics.host is ${settings.host}, beyond this machine, and /metrics has no token: set RATCHET_TELEMETRY_METRICS_TOKEN (Prometheus then sends it as a bearer token), ` +
      'or RATCHET_TELEMETRY_METRICS_ALLOW_UNAUTHENTICATED=true on a network where every client is trusted, or bind RATCHET_TELEMETRY_METRICS_HOST=127.0.0.1',
    { retryable: false },
  );
}

/** The word `/readyz` answers with: SERVING, DEGRADED, NOT_SERVING. */
function statusWord(status: HealthStatus): string {
  return healthStatusToJSON(status).replace(/^HEALTH_STATUS_/, '');
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The operations HTTP server of a service process: `GET /metrics`
 * (Prometheus text format, behind `Authorization: Bearer <token>` when a
 * token is set), `GET /livez` (200 while the process runs) and `GET /readyz`
 * (200 when the service is SERVING or DEGRADED, 503 otherwise; the body is
 * the status word only, so it tells nothing about dependencies to whoever
 * can reach it). Resolves once listening.
 * @throws AppError CONFIG_INVALID when the port is in use or the host cannot
 *   be bound, naming the variable to change.
 */
export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const expected = options.token === undefined ? undefined : digest(`Bearer ${options.token}`);
  // Probes may come faster than the checks answer: they share one Health run.
  let pendingHealth: Promise<HealthStatus> | undefined;
  const health = (): Promise<HealthStatus> => {
    pendingHealth ??= options.health().finally(() => (pendingHealth = undefined));
    return pendingHealth;
  };

  const send = (response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
    response.end(body);
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'only GET\n', { allow: 'GET, HEAD' });
    if (path === '/livez') return send(response, 200, 'ok\n');
    if (path === '/readyz') {
      const status = await health().catch(() => HealthStatus.HEALTH_STATUS_NOT_SERVING);
      const ready = status === HealthStatus.HEALTH_STATUS_SERVING || status === HealthStatus.HEALTH_STATUS_DEGRADED;
      return send(response, ready ? 200 : 503, `${statusWord(ready ? status : HealthStatus.HEALTH_STATUS_NOT_SERVING)}\n`);
    }
    if (path === '/metrics') {
      if (expected !== undefined) {
        const given = digest(request.headers.authorization ?? '');
        if (!timingSafeEqual(given, expected)) {
          return send(response, 401, 'unauthorized: send Authorization: Bearer <telemetry.metrics.token>\n', { 'www-authenticate': 'Bearer realm="ratchet-metrics"' });
        }
      }
      const text = await options.registry.metrics();
      return send(response, 200, text, { 'content-type': options.registry.contentType });
    }
    return send(response, 404, 'not found: try /metrics, /livez or /readyz\n');
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      options.logger?.warn({ path: request.url, err: AppError.from(error).message }, 'operations request failed');
      if (!response.headersSent) send(response, 500, 'internal error\n');
      else response.destroy();
    });
  });
  // A slow or stuck client must not hold a socket for long.
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.removeListener('listening', onListening);
      reject(listenError(error, options.host, options.port));
    };
    const onListening = () => {
      server.removeListener('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(options.port, options.host);
  });
  server.on('error', (error) => options.logger?.warn({ err: error.message }, 'operations server error'));
  let closing: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function listenError(error: NodeJS.ErrnoException, host: string, port: number): AppError {
  if (error.code === 'EADDRINUSE') {
    return new AppError(ErrorCode.CONFIG_INVALID, `telemetry.metrics.port ${port} on ${host} is already in use: set RATCHET_TELEMETRY_METRICS_PORT to a free port, or stop what listens there`, { cause: error, retryable: false });
  }
  if (error.code === 'EACCES') {
    return new AppError(ErrorCode.CONFIG_INVALID, `telemetry.metrics.port ${port} needs privileges this process lacks: set RATCHET_TELEMETRY_METRICS_PORT to a port above 1023`, { cause: error, retryable: false });
  }
  return new AppError(ErrorCode.CONFIG_INVALID, `cannot serve metrics on ${host}:${port} (${error.code ?? error.message}): set RATCHET_TELEMETRY_METRICS_HOST to an address of this machine`, { cause: error, retryable: false });
}
