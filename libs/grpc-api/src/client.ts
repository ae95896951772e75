import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { SpanKind } from '@opentelemetry/api';
import { AppError, ErrorCode } from '@ratchet/errors';
import { injectTraceContext, withSpan, type SpanOptions } from '@ratchet/telemetry';
import type * as HealthCheck from 'grpc-health-check';
import type { RequestOf, ResponseOf } from '@ratchet/bus';
import { errorOf, grpcServiceOf, messageSizeOptions, type GrpcServiceDefinition } from './definition';

export interface GrpcClientOptions {
  /** Sent as `authorization: Bearer <token>`. */
  readonly token?: string;
  /** Without it the client speaks plaintext. `caFile` verifies the server; `certFile` + `keyFile` present a client certificate (mTLS). */
  readonly tls?: { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string };
  /** Deadline of a unary call when the caller sets none, ms. Default 30000. */
  readonly defaultTimeoutMs?: number;
  /**
   * Largest message sent or received, in bytes. Default
   * DEFAULT_GRPC_MAX_MESSAGE_BYTES (64 MiB); grpc-js alone would take no
   * reply over 4 MiB. A larger message fails the call with RESOURCE_EXHAUSTED.
   */
  readonly maxMessageBytes?: number;
}

export interface GrpcCallOptions {
  /** Deadline of this call, ms; for a stream, the whole stream. Default: the client's for unary calls, none for streams. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /**
   * Sent as `authorization: Bearer <token>` on this call instead of the
   * client's own token: one client (one channel) acting for many callers,
   * as a gateway does for its users.
   */
  readonly token?: string;
}

/** A typed client: unary methods return a promise, server-streaming ones an async iterable. */
export type GrpcClient<D extends GrpcServiceDefinition> = {
  readonly [K in keyof D['methods']]: D['methods'][K] extends { responseStream: true }
    ? (request: RequestOf<D['methods'][K]>, options?: GrpcCallOptions) => AsyncIterable<ResponseOf<D['methods'][K]>>
    : (request: RequestOf<D['methods'][K]>, options?: GrpcCallOptions) => Promise<ResponseOf<D['methods'][K]>>;
} & { close(): void };

/**
 * A client of `definition` at `address` (host:port). Failures arrive as
 * AppError with the server's own code when it sent one.
 *
 * @throws AppError CONFIG_INVALID when a TLS file cannot be read or `maxMessageBytes` is not a positive integer.
 */
export function createGrpcClient<D extends GrpcServiceDefinition>(definition: D, address: string, options: GrpcClientOptions = {}): GrpcClient<D> {
  const Client = grpc.makeGenericClientConstructor(grpcServiceOf(definition), definition.name);
  const client = new Client(address, credentialsOf(options), messageSizeOptions(options.maxMessageBytes));
  const raw = client as unknown as Record<string, (...args: unknown[]) => unknown>;
  const metadata = (callOptions: GrpcCallOptions) => {
    const result = new grpc.Metadata();
    const token = callOptions.token ?? options.token;
    if (token !== undefined) result.set('authorization', `Bearer ${token}`);
    const trace: Record<string, string> = {};
    injectTraceContext(trace);
    for (const [key, value] of Object.entries(trace)) result.set(key, value);
    return result;
  };
  const typed: Record<string, unknown> = { close: () => client.close() };
  for (const [key, method] of Object.entries(definition.methods)) {
    const call = raw[key]?.bind(client);
    if (call === undefined) throw new AppError(ErrorCode.INTERNAL, `grpc-js made no method ${key}`);
    // A CLIENT span per call, whose context the metadata carries: the server's span is its child.
    const spanName = `${definition.fullName}/${method.name}`;
    const spanOptions: SpanOptions = { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'grpc', 'rpc.service': definition.fullName, 'rpc.method': method.name, 'server.address': address } };
    typed[key] = method.responseStream
      ? (request: unknown, callOptions: GrpcCallOptions = {}) =>
          tracedStream(spanName, spanOptions, () => streamOf(call(request, metadata(callOptions), deadlineOf(callOptions.timeoutMs)) as grpc.ClientReadableStream<unknown>, callOptions.signal, address))
      : (request: unknown, callOptions: GrpcCallOptions = {}) =>
          withSpan(
            spanName,
            spanOptions,
            () =>
              new Promise((resolve, reject) => {
                const pending = call(request, metadata(callOptions), deadlineOf(callOptions.timeoutMs ?? options.defaultTimeoutMs ?? 30_000), (error: grpc.ServiceError | null, response: unknown) => {
                  callOptions.signal?.removeEventListener('abort', cancel);
                  if (error === null) resolve(response);
                  else reject(errorOf(error, address));
                }) as grpc.ClientUnaryCall;
                const cancel = () => pending.cancel();
                callOptions.signal?.addEventListener('abort', cancel, { once: true });
              }),
          );
  }
  return typed as GrpcClient<D>;
}

/**
 * `open()`'s stream inside a CLIENT span that lasts until the stream ends
 * (or the reader stops), ending with its error if it fails. The stream is
 * opened inside the span, so its metadata carries the span's context.
 */
async function* tracedStream<T>(spanName: string, spanOptions: SpanOptions, open: () => AsyncGenerator<T>): AsyncGenerator<T> {
  let settle!: (error?: unknown) => void;
  const ended = new Promise<void>((resolve, reject) => (settle = (error) => (error === undefined ? resolve() : reject(error as Error))));
  let stream!: AsyncGenerator<T>;
  // The span's own promise: it has recorded a failure by the time it rejects; the reader gets the error from the loop.
  withSpan(spanName, spanOptions, () => {
    stream = open();
    return ended;
  }).catch(() => undefined);
  try {
    yield* stream;
    settle();
  } catch (error) {
    settle(error);
    throw error;
  } finally {
    // A reader that stops early ends the span without an error.
    settle();
  }
}

function deadlineOf(timeoutMs: number | undefined): grpc.CallOptions {
  return timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs };
}

async function* streamOf<T>(call: grpc.ClientReadableStream<T>, signal: AbortSignal | undefined, address: string): AsyncGenerator<T> {
  const cancel = () => call.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    for await (const message of call) yield message as T;
  } catch (error) {
    const serviceError = error as grpc.ServiceError;
    // A stream the caller cancelled ends quietly; the caller knows why.
    if (serviceError.code === grpc.status.CANCELLED && signal?.aborted === true) return;
    throw typeof serviceError.code === 'number' ? errorOf(serviceError, address) : error;
  } finally {
    signal?.removeEventListener('abort', cancel);
    // Breaking out of the loop early must stop the server side too.
    call.cancel();
  }
}

/**
 * The standard gRPC health check of the server at `address`: SERVING,
 * NOT_SERVING, ... as the server reports it (what load balancers and
 * Kubernetes probes see).
 *
 * @throws AppError UNAVAILABLE when the server does not answer in `timeoutMs`.
 */
export function grpcHealth(address: string, options: Pick<GrpcClientOptions, 'tls'> & { timeoutMs?: number } = {}): Promise<string> {
  // Loaded here, not with the client: it brings protobufjs, which no other call of a client needs.
  const { service: healthService } = require('grpc-health-check') as typeof HealthCheck;
  const Health = grpc.makeGenericClientConstructor(healthService, 'Health');
  const client = new Health(address, credentialsOf(options)) as unknown as grpc.Client & {
    check(request: object, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response: { status: string }) => void): void;
  };
  return new Promise((resolve, reject) =>
    client.check({ service: '' }, { deadline: Date.now() + (options.timeoutMs ?? 5_000) }, (error, response) => {
      client.close();
      if (error) reject(errorOf(error, address));
      else resolve(response.status);
    }),
  );
}

function credentialsOf(options: Pick<GrpcClientOptions, 'tls'>): grpc.ChannelCredentials {
  const tls = options.tls;
  if (tls === undefined) return grpc.credentials.createInsecure();
  const read = (file: string | undefined, what: string) => {
    if (file === undefined) return null;
    try {
      return readFileSync(file);
    } catch (error) {
      throw new AppError(ErrorCode.CONFIG_INVALID, `cannot read the ${what} ${file}: ${(error as Error).message}`, { cause: error });
    }
  };
  return grpc.credentials.createSsl(read(tls.caFile, 'CA certificate'), read(tls.keyFile, 'client key'), read(tls.certFile, 'client certificate'));
}
