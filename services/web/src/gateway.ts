import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import { SpanKind } from '@opentelemetry/api';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Authenticator } from '@ratchet/grpc-api';
import { withSpan } from '@ratchet/telemetry';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { httpFailureOf, requestErrorOf } from './domain/http-errors';
import { allowedHostSchema, allowedHostsSetting, requestSourcePolicy } from './domain/request-source';
import { traceUrlTemplateSchema } from './domain/trace-link';
import type { HandlerContext } from './handlers/context';
import { registerDecisionRoutes } from './handlers/decisions';
import { registerLessonRoutes } from './handlers/lessons';
import { registerTaskEventRoutes } from './handlers/task-events';
import { registerTaskRoutes } from './handlers/tasks';
import type { OrchestratorApi } from './orchestrator-api';

/** Where the built single-page app is: `dist/app`, next to the compiled gateway (and above `src/` when run from source). */
export const defaultAppDirectory = path.resolve(__dirname, '..', 'dist', 'app');

/** Largest request body accepted, bytes: a goal and its options, never files. */
const defaultBodyLimitBytes = 1024 * 1024;

export interface GatewayOptions {
  /** The orchestrator's API: the gRPC client (distributed), or embedded mode's in-process client. */
  readonly orchestrator: OrchestratorApi;
  /**
   * Checks each request's bearer token here (embedded mode's per-run token),
   * throwing UNAUTHENTICATED. Without it the token is passed on to the
   * orchestrator, which authenticates it like any gRPC client's: same
   * tokens, same roles.
   */
  readonly authenticate?: Authenticator;
  /** The built app (index.html and assets). Default `defaultAppDirectory`. */
  readonly appDirectory?: string;
  /** A Grafana/Tempo link per task, with `{taskId}` and `{traceId}`; see `traceLinkOf`. */
  readonly traceUrlTemplate?: string;
  /**
   * Names beyond loopback that browsers address this dashboard by (its
   * ingress's, a proxy's), each a host name with an optional `:port`; see
   * `allowedHostSchema`. Loopback names (localhost, 127.0.0.1, [::1]) are
   * always answered, with any port. A request addressed by another name is
   * refused with 421 (a page of another site whose name resolves to this
   * machine: DNS rebinding), and one from a page of another origin with 403.
   */
  readonly allowedHosts?: readonly string[];
  /** The setting the refusals name for adding a name. Default: web.allowedHosts in config/web.yaml. */
  readonly allowedHostsSetting?: string;
  /** Where people get their tokens, for the sign-in messages. Default: from an operator, with `ratchet token`. */
  readonly tokenHint?: string;
  /** Serve HTTPS with this PEM certificate and key. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  readonly logger?: Logger;
  /** Default 1 MiB. */
  readonly bodyLimitBytes?: number;
}

export interface Gateway {
  /**
   * Starts listening. Port 0 picks a free one.
   *
   * @returns the bound port.
   * @throws AppError CONFIG_INVALID when the address cannot be bound (in use, no permission).
   */
  listen(host: string, port: number): Promise<number>;
  /** Ends open event streams, stops listening and waits for requests in flight. */
  close(): Promise<void>;
}

/** Security headers of every answer: the app loads only its own files and is never framed. */
const securityHeaders = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
} as const;

/**
 * The dashboard's HTTP server: the built React app, and a thin JSON
 * gateway under `/api` to the orchestrator's client API (tasks, their live
 * events as Server-Sent Events, approvals, answers, lessons, profiles).
 * Every failure is `{error: {code, message}}` with the status of its code
 * (`httpStatusOfCode`); bad input (a body that is not JSON, an unknown
 * task, a missing or refused token) gets a clear answer and never stops
 * the server.
 *
 * @throws AppError CONFIG_INVALID when a TLS file cannot be read, or the trace link template or an allowed host is not valid.
 */
export function createGateway(options: GatewayOptions): Gateway {
  const bodyLimitBytes = options.bodyLimitBytes ?? defaultBodyLimitBytes;
  if (options.traceUrlTemplate !== undefined && options.traceUrlTemplate !== '') {
    const checked = traceUrlTemplateSchema.safeParse(options.traceUrlTemplate);
    if (!checked.success) throw new AppError(ErrorCode.CONFIG_INVALID, `the trace link template ${JSON.stringify(options.traceUrlTemplate)} ${checked.error.issues[0]?.message ?? 'is not valid'} (RATCHET_WEB_TRACE_URL_TEMPLATE, web.traceUrlTemplate)`);
  }
  for (const entry of options.allowedHosts ?? []) {
    const checked = allowedHostSchema.safeParse(entry);
    if (!checked.success) throw new AppError(ErrorCode.CONFIG_INVALID, `the allowed host ${JSON.stringify(entry)} ${checked.error.issues[0]?.message ?? 'is not valid'} (${options.allowedHostsSetting ?? allowedHostsSetting})`);
  }
  const server: FastifyInstance = Fastify({
    ...(options.tls === undefined ? {} : { https: { cert: readTlsFile(options.tls.certFile, 'certificate'), key: readTlsFile(options.tls.keyFile, 'key') } }),
    bodyLimit: bodyLimitBytes,
    // Requests are traced and failures logged below; a line per request would drown the rest.
    logController: new LogController({ disableRequestLogging: true }),
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger as FastifyBaseLogger }),
    // A long-lived event stream must not hold shutdown: close() ends them first.
    forceCloseConnections: 'idle',
  });
  const context: HandlerContext = {
    orchestrator: options.orchestrator,
    ...(options.authenticate === undefined ? {} : { authenticate: options.authenticate }),
    ...(options.traceUrlTemplate === undefined || options.traceUrlTemplate === '' ? {} : { traceUrlTemplate: options.traceUrlTemplate }),
    streams: new Set(),
    ...(options.tokenHint === undefined ? {} : { tokenHint: options.tokenHint }),
  };
  // Bodies are JSON only: a form post or plain text from another site is refused before any handler.
  server.removeContentTypeParser('text/plain');

  const sources = requestSourcePolicy({
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
    ...(options.allowedHostsSetting === undefined ? {} : { setting: options.allowedHostsSetting }),
    defaultPort: options.tls === undefined ? 80 : 443,
  });
  server.addHook('onRequest', async (request, reply) => {
    void reply.headers(securityHeaders);
    if (request.url.startsWith('/api/')) void reply.header('cache-control', 'no-store');
    const refusal = sources.refusalOf({ method: request.method, url: request.url, host: request.headers.host, origin: request.headers.origin, secFetchSite: headerText(request.headers['sec-fetch-site']) });
    if (refusal !== undefined) {
      request.log.warn({ url: request.url, method: request.method, host: request.headers.host, origin: request.headers.origin, status: refusal.status }, 'request refused: not addressed to this dashboard, or from another site');
      return reply.code(refusal.status).send({ error: { code: refusal.code, message: refusal.message } });
    }
    return undefined;
  });

  // One span per request (every route's handler runs inside it), so a task submitted here is one trace from the dashboard to the sandbox.
  server.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/api/')) return;
    const handler = route.handler;
    const name = `${route.method.toString()} ${route.url}`;
    route.handler = function traced(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      return withSpan(name, { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route.url } }, () => handler.call(this, request, reply));
    };
  });

  server.setErrorHandler((error: unknown, request, reply) => {
    const failure = httpFailureOf(requestErrorOf(error, bodyLimitBytes) ?? error, request.headers.authorization !== undefined && request.headers.authorization.trim() !== '', context.tokenHint);
    // The orchestrator being away is its own log's story; an unexpected failure is this one's.
    if (failure.body.error.code === ErrorCode.UNAVAILABLE) request.log.warn({ url: request.url, err: (error as Error).message }, 'the orchestrator is not reachable');
    else if (failure.status >= 500 && failure.status !== 501) request.log.error({ err: error, url: request.url, method: request.method }, 'request failed');
    if (failure.status === 401) void reply.header('www-authenticate', 'Bearer realm="ratchet"');
    return reply.code(failure.status).send(failure.body);
  });

  registerTaskRoutes(server, context);
  registerTaskEventRoutes(server, context);
  registerDecisionRoutes(server, context);
  registerLessonRoutes(server, context);

  const appDirectory = options.appDirectory ?? defaultAppDirectory;
  const appBuilt = existsSync(path.join(appDirectory, 'index.html'));
  if (appBuilt) {
    // Built assets carry a content hash in their names: cache them for good; index.html never.
    void server.register(fastifyStatic, {
      root: appDirectory,
      wildcard: false,
      index: false,
      setHeaders: (reply, file) => void reply.header('cache-control', file.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-store'),
    });
  }
  const sendApp = (reply: FastifyReply) =>
    appBuilt
      ? reply.header('cache-control', 'no-store').sendFile('index.html')
      : reply.code(503).type('text/plain; charset=utf-8').send(`the dashboard's app is not built (${appDirectory} has no index.html): run npm run build\n`);
  server.get('/', (_request, reply) => sendApp(reply));
  // The app's own paths (/tasks/..., /lessons/...) load the app, which routes itself; unknown API paths are JSON errors.
  server.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    if ((request.method === 'GET' || request.method === 'HEAD') && !request.url.startsWith('/api/') && request.url !== '/api') return sendApp(reply);
    return reply.code(404).send({ error: { code: ErrorCode.NOT_FOUND, message: `no such endpoint: ${request.method} ${request.url.split('?')[0]}` } });
  });

  let closing: Promise<void> | undefined;
  return {
    async listen(host, port) {
      try {
        await server.listen({ host, port });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const why = code === 'EADDRINUSE' ? 'it is in use' : code === 'EACCES' ? 'this process may not bind it (use a port above 1023)' : (error as Error).message;
        throw new AppError(ErrorCode.CONFIG_INVALID, `the dashboard cannot listen on ${host}:${port}: ${why}`, { cause: error });
      }
      const address = server.server.address();
      return typeof address === 'object' && address !== null ? address.port : port;
    },
    close() {
      closing ??= (async () => {
        for (const stream of context.streams) stream.abort();
        await server.close();
      })();
      return closing;
    },
  };
}

/** A header's value, the first when it came more than once. */
function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function readTlsFile(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `cannot read the dashboard's TLS ${what} ${file}: ${(error as Error).message}`, { cause: error });
  }
}
