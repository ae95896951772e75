import { context as otelContext, SpanKind } from '@opentelemetry/api';
import { AppError, ErrorCode } from '@ratchet/errors';
import { extractTraceContext, processMetrics, withSpan } from '@ratchet/telemetry';
import type { BusLogger } from './logger';
import type { MethodDefinition, RequestOf, ResponseOf, ServiceDefinition, UnaryMethodName } from './definitions';
import { errorToHeaders } from './error-headers';
import { Header, isSubjectToken, rpcSubject } from './headers';
import type { Headers, IncomingRequest, Subscription, Transport } from './transport';

/** What a handler knows about the call it is serving. */
export interface CallContext {
  readonly requestId: string;
  /** Absolute deadline, epoch ms. Pass it on to downstream calls. */
  readonly deadline: number;
  /** Aborts at the deadline or when the server gives the call back during shutdown. */
  readonly signal: AbortSignal;
  readonly headers: Readonly<Headers>;
}

export type ServiceImplementation<D extends ServiceDefinition> = {
  readonly [K in UnaryMethodName<D>]?: (request: RequestOf<D['methods'][K]>, context: CallContext) => Promise<ResponseOf<D['methods'][K]>>;
};

export interface ServeOptions {
  /** Queue group; one per service, so replicas share the load. */
  readonly queue: string;
  /** Version reported when a method is not served by this build. */
  readonly version?: string;
  readonly logger?: BusLogger;
  /** Deadline applied to callers that send none, in ms. Default 30 000. */
  readonly defaultDeadlineMs?: number;
  /**
   * This replica's own name (a subject token, see `instanceToken`): every
   * method is also served on `rpcSubject(service, method, instance)`, where
   * only this replica listens, for calls pinned to it.
   */
  readonly instance?: string;
}

export interface ServiceServer {
  /** Resolves once the subscriptions are in place on the server, so calls from anywhere reach them. */
  readonly ready: Promise<void>;
  /** Calls being handled right now. */
  readonly inFlight: number;
  /**
   * Stops taking calls, waits up to `graceMs` for the ones in flight, then
   * aborts the rest and answers them UNAVAILABLE (retryable) so callers retry
   * on another replica instead of losing them.
   */
  drain(graceMs: number): Promise<void>;
}

interface Active {
  readonly controller: AbortController;
  readonly request: IncomingRequest;
  readonly done: Promise<void>;
}

/**
 * Serves a generated service definition on the bus: one subscription per
 * method on `ratchet.v1.<Service>.<Method>` in the service's queue group.
 * Malformed payloads get INVALID_ARGUMENT and a log line naming the subject;
 * a handler that throws never takes the process down.
 */
export function serveService<D extends ServiceDefinition>(transport: Transport, definition: D, implementation: ServiceImplementation<D>, options: ServeOptions): ServiceServer {
  const active = new Set<Active>();
  const subscriptions: Subscription[] = [];
  const handlers = implementation as Record<string, ((request: unknown, context: CallContext) => Promise<unknown>) | undefined>;

  for (const [key, method] of Object.entries(definition.methods)) {
    if (method.requestStream || method.responseStream) continue;
    const handler = handlers[key];
    const onRequest = (request: IncomingRequest) => {
      const controller = new AbortController();
      const entry: Active = { controller, request, done: Promise.resolve() };
      const done = handle(definition, method, handler, request, controller, options).finally(() => active.delete(entry));
      active.add(Object.assign(entry, { done }));
    };
    subscriptions.push(transport.subscribe(rpcSubject(definition.fullName, method.name), { queue: options.queue }, onRequest));
    if (options.instance !== undefined) {
      if (!isSubjectToken(options.instance)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `instance ${JSON.stringify(options.instance)} is not a subject token; pass it through instanceToken()`);
      subscriptions.push(transport.subscribe(rpcSubject(definition.fullName, method.name, options.instance), { queue: `${options.queue}.${options.instance}` }, onRequest));
    }
  }

  const ready = transport.flush();
  // Callers that never await `ready` must not see an unhandled rejection.
  ready.catch(() => undefined);
  return {
    ready,
    get inFlight() {
      return active.size;
    },
    async drain(graceMs) {
      await Promise.all(subscriptions.map((subscription) => subscription.unsubscribe()));
      const all = Promise.all([...active].map((entry) => entry.done));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([all.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs)))]);
      clearTimeout(timer);
      if (!timedOut) return;
      for (const entry of active) {
        entry.request.respond(new Uint8Array(), errorToHeaders(new AppError(ErrorCode.UNAVAILABLE, `${options.queue} is shutting down; retry on another replica`)));
        entry.controller.abort(new AppError(ErrorCode.CANCELLED, 'server shutting down'));
      }
    },
  };
}

async function handle(
  definition: ServiceDefinition,
  method: MethodDefinition,
  handler: ((request: unknown, context: CallContext) => Promise<unknown>) | undefined,
  request: IncomingRequest,
  controller: AbortController,
  options: ServeOptions,
): Promise<void> {
  const subject = request.subject;
  const requestId = request.headers[Header.REQUEST_ID] ?? '';
  const metrics = processMetrics();
  const labels = { rpc_service: definition.name, rpc_method: method.name };
  const started = performance.now();
  // Only the first answer reaches the caller (a handler may finish after the deadline answered): only it is counted.
  let answered = false;
  const answer = (data: Uint8Array, error?: AppError) => {
    if (!answered) {
      answered = true;
      metrics.rpcServerDuration.observe(labels, (performance.now() - started) / 1000);
      if (error !== undefined) metrics.rpcServerErrors.inc({ ...labels, code: error.code });
    }
    request.respond(data, error === undefined ? undefined : errorToHeaders(error));
  };
  const fail = (error: AppError) => answer(new Uint8Array(), error);

  const deadline = Number(request.headers[Header.DEADLINE] ?? Date.now() + (options.defaultDeadlineMs ?? 30_000));
  if (!Number.isFinite(deadline)) {
    return fail(new AppError(ErrorCode.INVALID_ARGUMENT, `bad ${Header.DEADLINE} header on ${subject}: expected epoch milliseconds`));
  }
  if (deadline <= Date.now()) {
    return fail(new AppError(ErrorCode.DEADLINE_EXCEEDED, `${subject} arrived after its deadline`));
  }
  if (!handler) {
    return fail(new AppError(ErrorCode.UNIMPLEMENTED, `${definition.name}.${method.name} is not served by ${options.queue}${options.version ? ` ${options.version}` : ''}`));
  }

  let decoded: unknown;
  try {
    decoded = method.requestType.decode(request.data);
  } catch (error) {
    options.logger?.warn({ subject, requestId, bytes: request.data.length, err: error }, 'malformed request payload');
    return fail(new AppError(ErrorCode.INVALID_ARGUMENT, `malformed ${method.name} request on ${subject}: ${(error as Error).message}`));
  }

  // The responder stops at the deadline: the caller has given up by then.
  const deadlineTimer = setTimeout(() => {
    fail(new AppError(ErrorCode.DEADLINE_EXCEEDED, `${subject} ran past its deadline`));
    controller.abort(new AppError(ErrorCode.DEADLINE_EXCEEDED, `${subject} ran past its deadline`));
  }, deadline - Date.now());

  const parent = extractTraceContext(request.headers);
  try {
    await otelContext.with(parent, () =>
      withSpan(
        `${definition.fullName}/${method.name}`,
        { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'ratchet-bus', 'rpc.service': definition.fullName, 'rpc.method': method.name, 'ratchet.request_id': requestId } },
        async () => {
          const response = await handler(decoded, { requestId, deadline, signal: controller.signal, headers: request.headers });
          answer(method.responseType.encode(response).finish());
        },
      ),
    );
  } catch (error) {
    const appError = AppError.from(error);
    if (appError.code === ErrorCode.INTERNAL) options.logger?.error({ subject, requestId, err: error }, 'handler failed');
    fail(appError);
  } finally {
    clearTimeout(deadlineTimer);
  }
}
