import { randomUUID } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import { AppError, backoffDelay, ErrorCode, sleepUnlessAborted } from '@ratchet/errors';
import { injectTraceContext, processMetrics, withSpan } from '@ratchet/telemetry';
import type { MethodDefinition, RequestOf, ResponseOf, ServiceDefinition, UnaryMethodName } from './definitions';
import { errorFromHeaders } from './error-headers';
import { Header, rpcSubject } from './headers';
import type { Headers, Transport } from './transport';

export interface ClientOptions {
  /** Deadline of a call when the caller gives none, in ms. Default 5000. */
  readonly defaultTimeoutMs?: number;
  /** Attempts per call, first included; only retryable errors are retried. Default 3. */
  readonly maxAttempts?: number;
  /** First retry delay in ms, doubled per attempt, with jitter. Default 100. */
  readonly retryBackoffMs?: number;
  /**
   * Send every call to this one replica (its `ServeOptions.instance`), not to
   * the service's queue group. Nobody serving it (the replica is gone) is
   * UNAVAILABLE, retryable.
   */
  readonly instance?: string;
}

export interface CallOptions {
  /** Time allowed for the whole call including retries, in ms. Ignored when `deadline` is set. */
  readonly timeoutMs?: number;
  /** Absolute deadline, epoch ms; pass a handler's `context.deadline` on to keep one budget end to end. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
  readonly maxAttempts?: number;
  /** Reused on retries so responders can spot a repeat. Default: a new UUID per call. */
  readonly requestId?: string;
}

export type ServiceClient<D extends ServiceDefinition> = {
  readonly [K in UnaryMethodName<D>]: (request: RequestOf<D['methods'][K]>, options?: CallOptions) => Promise<ResponseOf<D['methods'][K]>>;
};

/**
 * A typed client for a generated service definition. Every call has a
 * deadline, carries a request id and W3C trace context in headers, rebuilds
 * remote errors as AppError and retries only retryable ones with backoff
 * while the deadline allows.
 */
export function createClient<D extends ServiceDefinition>(transport: Transport, definition: D, options: ClientOptions = {}): ServiceClient<D> {
  const client: Record<string, unknown> = {};
  for (const [key, method] of Object.entries(definition.methods)) {
    if (method.requestStream || method.responseStream) continue;
    client[key] = (request: unknown, callOptions: CallOptions = {}) => call(transport, definition, method, request, options, callOptions);
  }
  return Object.freeze(client) as ServiceClient<D>;
}

async function call(
  transport: Transport,
  definition: ServiceDefinition,
  method: MethodDefinition,
  request: unknown,
  clientOptions: ClientOptions,
  options: CallOptions,
): Promise<unknown> {
  const subject = rpcSubject(definition.fullName, method.name, clientOptions.instance);
  const deadline = options.deadline ?? Date.now() + (options.timeoutMs ?? clientOptions.defaultTimeoutMs ?? 5_000);
  const maxAttempts = Math.max(1, options.maxAttempts ?? clientOptions.maxAttempts ?? 3);
  const requestId = options.requestId ?? randomUUID();
  const payload = method.requestType.encode(request).finish();
  const metrics = processMetrics();
  // The service's short name and the method: bounded, unlike the subject (which may name a replica).
  const labels = { rpc_service: definition.name, rpc_method: method.name };
  const started = performance.now();

  return withSpan(
    `${definition.fullName}/${method.name}`,
    { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'ratchet-bus', 'rpc.service': definition.fullName, 'rpc.method': method.name, 'ratchet.request_id': requestId } },
    async (span) => {
      for (let attempt = 1; ; attempt++) {
        throwIfAborted(options.signal, subject);
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new AppError(ErrorCode.DEADLINE_EXCEEDED, `deadline passed before ${subject} could be called (attempt ${attempt})`);
        const headers: Headers = { [Header.REQUEST_ID]: requestId, [Header.DEADLINE]: String(deadline) };
        injectTraceContext(headers);
        try {
          const reply = await abortable(transport.request(subject, payload, { timeoutMs: remaining, headers }), options.signal, subject);
          const remoteError = errorFromHeaders(reply.headers, subject);
          if (remoteError) throw remoteError;
          try {
            return method.responseType.decode(reply.data);
          } catch (error) {
            throw new AppError(ErrorCode.INTERNAL, `malformed reply on ${subject}: ${(error as Error).message}`, { cause: error });
          }
        } catch (error) {
          const appError = AppError.from(error);
          const retryAfter = backoffDelay(attempt, clientOptions.retryBackoffMs ?? 100, 5_000, { jitter: true });
          const canRetry = appError.isRetryable && attempt < maxAttempts && deadline - Date.now() > retryAfter;
          span.addEvent('attempt failed', { attempt, 'error.code': appError.code, retrying: canRetry });
          if (!canRetry) throw appError;
          metrics.rpcClientRetries.inc(labels);
          await sleepUnlessAborted(retryAfter, options.signal);
        }
      }
    },
  ).then(
    (response) => {
      metrics.rpcClientDuration.observe(labels, (performance.now() - started) / 1000);
      return response;
    },
    (error: unknown) => {
      metrics.rpcClientDuration.observe(labels, (performance.now() - started) / 1000);
      metrics.rpcClientErrors.inc({ ...labels, code: AppError.from(error).code });
      throw error;
    },
  );
}

function throwIfAborted(signal: AbortSignal | undefined, subject: string): void {
  if (signal?.aborted) throw new AppError(ErrorCode.CANCELLED, `call to ${subject} was cancelled by the caller`);
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, subject: string): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AppError(ErrorCode.CANCELLED, `call to ${subject} was cancelled by the caller`));
    signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => signal.removeEventListener('abort', onAbort);
    promise.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (error: unknown) => {
        cleanup();
        reject(error);
      },
    );
  });
}
