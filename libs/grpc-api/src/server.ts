import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type * as ProtoLoader from '@grpc/proto-loader';
import type * as Reflection from '@grpc/reflection';
import { context as otelContext, SpanKind } from '@opentelemetry/api';
import { AppError, ErrorCode } from '@ratchet/errors';
import { extractTraceContext, withSpan, type SpanOptions } from '@ratchet/telemetry';
import type * as HealthCheck from 'grpc-health-check';
import type { RequestOf, ResponseOf } from '@ratchet/bus';
import { grpcServiceOf, messageSizeOptions, statusOf, undecodableRequestError, type GrpcServiceDefinition } from './definition';
import { LOCAL_PRINCIPAL, PrincipalDirectory, type Authenticator, type Principal } from './principals';

/** What a handler knows about its call; the same shape as the bus's CallContext, so one handler serves both. */
export interface GrpcCallContext {
  readonly requestId: string;
  /** Absolute deadline, epoch ms; Infinity when the client set none. */
  readonly deadline: number;
  /** Aborts when the client cancels, disconnects or its deadline passes. */
  readonly signal: AbortSignal;
  /** Request metadata (text values), lower-case keys. */
  readonly headers: Readonly<Record<string, string>>;
  /** Who is calling, as the server's authenticator decided; `LOCAL_PRINCIPAL` when it authenticates nobody. */
  readonly principal: Principal;
}

/** Handlers per method: unary ones return a promise, server-streaming ones an async iterable. */
export type GrpcImplementation<D extends GrpcServiceDefinition> = {
  readonly [K in keyof D['methods']]?: D['methods'][K] extends { responseStream: true }
    ? (request: RequestOf<D['methods'][K]>, context: GrpcCallContext) => AsyncIterable<ResponseOf<D['methods'][K]>>
    : (request: RequestOf<D['methods'][K]>, context: GrpcCallContext) => Promise<ResponseOf<D['methods'][K]>>;
};

export interface GrpcTlsFiles {
  /** PEM certificate chain of the server. */
  readonly certFile: string;
  /** PEM private key of the server. */
  readonly keyFile: string;
  /** PEM CA that signs client certificates; when set, clients must present one (mTLS). */
  readonly clientCaFile?: string;
}

export interface GrpcServerOptions {
  /**
   * Decides who each call is from its bearer token (`authorization`
   * metadata) and verified client certificate. Without it, every call is
   * `LOCAL_PRINCIPAL` (a trusted network only).
   */
  readonly authenticate?: Authenticator;
  /** Shorthand for `authenticate` with `PrincipalDirectory.ofTokens(tokens)`; ignored when `authenticate` is set. */
  readonly tokens?: readonly string[];
  /** Without it the server speaks plaintext. */
  readonly tls?: GrpcTlsFiles;
  /** Serves gRPC server reflection from these .proto files (`files` relative to `protoRoot`), for grpcurl and friends. */
  readonly reflection?: { readonly protoRoot: string; readonly files: readonly string[] };
  readonly logger?: { error(details: object, message: string): void };
  /**
   * Largest message received or sent, in bytes. Default
   * DEFAULT_GRPC_MAX_MESSAGE_BYTES (64 MiB). A larger request is refused
   * with RESOURCE_EXHAUSTED before any handler runs.
   */
  readonly maxMessageBytes?: number;
}

/**
 * A gRPC server for generated service definitions, with bearer-token
 * authentication, optional TLS/mTLS, the standard health service
 * (`grpc.health.v1.Health`, exempt from authentication) and optional
 * reflection.
 */
export class GrpcServer {
  /** The standard health service; `setServing` drives it. */
  readonly health: HealthCheck.HealthImplementation;
  private readonly server: grpc.Server;
  private readonly services: string[] = [];
  private readonly authenticate: Authenticator | undefined;

  /** @throws AppError CONFIG_INVALID when a TLS or proto file cannot be read, or `maxMessageBytes` is not a positive integer. */
  constructor(private readonly options: GrpcServerOptions = {}) {
    // The health, reflection and proto-loading packages load with the first server, not with this library:
    // a process that is only a client (a CLI command) never loads them (protobufjs among them).
    const { HealthImplementation } = require('grpc-health-check') as typeof HealthCheck;
    this.health = new HealthImplementation({ '': 'NOT_SERVING' });
    this.server = new grpc.Server(messageSizeOptions(options.maxMessageBytes));
    this.authenticate = options.authenticate ?? (options.tokens !== undefined && options.tokens.length > 0 ? PrincipalDirectory.ofTokens(options.tokens).authenticate : undefined);
    this.health.addToServer(this.server);
    if (options.reflection !== undefined) {
      const { protoRoot, files } = options.reflection;
      let definition;
      try {
        const { loadSync } = require('@grpc/proto-loader') as typeof ProtoLoader;
        definition = loadSync(files.map((file) => path.join(protoRoot, file)), { includeDirs: [protoRoot] });
      } catch (error) {
        throw new AppError(ErrorCode.CONFIG_INVALID, `cannot load the .proto files for reflection from ${protoRoot}: ${(error as Error).message}`, { cause: error });
      }
      const { ReflectionService } = require('@grpc/reflection') as typeof Reflection;
      new ReflectionService(definition).addToServer(this.server);
    }
  }

  /** Serves `definition` with `implementation`; a method without a handler answers UNIMPLEMENTED. */
  addService<D extends GrpcServiceDefinition>(definition: D, implementation: GrpcImplementation<D>): void {
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const [key, method] of Object.entries(definition.methods)) {
      const handler = (implementation as Record<string, ((request: unknown, context: GrpcCallContext) => unknown) | undefined>)[key];
      const spanName = `${definition.fullName}/${method.name}`;
      if (method.responseStream) {
        handlers[key] = (call: grpc.ServerWritableStream<unknown, unknown>) => void this.serveStream(call, spanName, handler as StreamHandler | undefined);
      } else {
        handlers[key] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void this.serveUnary(call, callback, spanName, handler as UnaryHandler | undefined);
      }
    }
    this.server.addService(grpcServiceOf(definition), handlers);
    this.services.push(definition.fullName);
  }

  /**
   * Binds `address` (host:port; port 0 picks a free one) and starts serving.
   *
   * @returns the bound port.
   * @throws AppError UNAVAILABLE when the address cannot be bound; CONFIG_INVALID for unreadable TLS files.
   */
  async listen(address: string): Promise<number> {
    const credentials = this.credentials();
    return new Promise((resolve, reject) => {
      this.server.bindAsync(address, credentials, (error, port) => {
        if (error !== null) reject(new AppError(ErrorCode.UNAVAILABLE, `cannot listen on ${address}: ${error.message}`, { cause: error }));
        else resolve(port);
      });
    });
  }

  /** Reports the server and every added service SERVING or NOT_SERVING on the health service. */
  setServing(serving: boolean): void {
    const status = serving ? 'SERVING' : 'NOT_SERVING';
    this.health.setStatus('', status);
    for (const service of this.services) this.health.setStatus(service, status);
  }

  /** Stops taking calls, lets those in flight finish for up to `graceMs`, then cuts the rest. */
  async close(graceMs: number): Promise<void> {
    this.setServing(false);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private credentials(): grpc.ServerCredentials {
    const tls = this.options.tls;
    if (tls === undefined) return grpc.ServerCredentials.createInsecure();
    const read = (file: string, what: string) => {
      try {
        return readFileSync(file);
      } catch (error) {
        throw new AppError(ErrorCode.CONFIG_INVALID, `cannot read the ${what} ${file}: ${(error as Error).message}`, { cause: error });
      }
    };
    const clientCa = tls.clientCaFile === undefined ? null : read(tls.clientCaFile, 'client CA');
    return grpc.ServerCredentials.createSsl(clientCa, [{ cert_chain: read(tls.certFile, 'server certificate'), private_key: read(tls.keyFile, 'server key') }], clientCa !== null);
  }

  /** The call's context, or an UNAUTHENTICATED error when the authenticator cannot tell who calls. */
  private open(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>): { context: GrpcCallContext; done(): void } {
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(call.metadata.getMap())) if (typeof value === 'string') headers[key] = value;
    let principal = LOCAL_PRINCIPAL;
    if (this.authenticate !== undefined) {
      const authorization = headers['authorization'];
      const match = /^Bearer\s+(.+)$/i.exec(authorization ?? '');
      if (authorization !== undefined && match === null) throw new AppError(ErrorCode.UNAUTHENTICATED, 'the authorization metadata must be "Bearer <token>"; pass --token or set RATCHET_TOKEN');
      principal = this.authenticate({ ...(match === null ? {} : { token: (match[1] as string).trim() }), certificateNames: certificateNamesOf(call) });
    }
    const controller = new AbortController();
    const rawDeadline = call.getDeadline();
    const deadline = rawDeadline instanceof Date ? rawDeadline.getTime() : Number.isFinite(rawDeadline) ? rawDeadline : Infinity;
    const onCancel = () => controller.abort(new AppError(ErrorCode.CANCELLED, 'the client cancelled the call'));
    call.on('cancelled', onCancel);
    const timer = Number.isFinite(deadline) ? setTimeout(() => controller.abort(new AppError(ErrorCode.DEADLINE_EXCEEDED, 'the call deadline passed')), Math.max(0, deadline - Date.now())) : undefined;
    return {
      context: { requestId: headers['x-request-id'] ?? '', deadline, signal: controller.signal, headers, principal },
      done: () => {
        clearTimeout(timer);
        call.removeListener('cancelled', onCancel);
      },
    };
  }

  private async serveUnary(call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>, spanName: string, handler: UnaryHandler | undefined): Promise<void> {
    let opened: ReturnType<GrpcServer['open']> | undefined;
    try {
      if (handler === undefined) throw new AppError(ErrorCode.UNIMPLEMENTED, `${spanName} is not served here`);
      opened = this.open(call);
      const undecodable = undecodableRequestError(call.request);
      if (undecodable !== undefined) throw undecodable;
      const context = opened.context;
      const response = await otelContext.with(extractTraceContext(context.headers), () => withSpan(spanName, serverSpanOptions(spanName), () => handler(call.request, context)));
      callback(null, response);
    } catch (error) {
      this.logUnexpected(spanName, error);
      callback(statusOf(error));
    } finally {
      opened?.done();
    }
  }

  private async serveStream(call: grpc.ServerWritableStream<unknown, unknown>, spanName: string, handler: StreamHandler | undefined): Promise<void> {
    let opened: ReturnType<GrpcServer['open']> | undefined;
    try {
      if (handler === undefined) throw new AppError(ErrorCode.UNIMPLEMENTED, `${spanName} is not served here`);
      opened = this.open(call);
      const undecodable = undecodableRequestError(call.request);
      if (undecodable !== undefined) throw undecodable;
      const context = opened.context;
      await otelContext.with(extractTraceContext(context.headers), () =>
        withSpan(spanName, serverSpanOptions(spanName), async () => {
          for await (const message of handler(call.request, context)) {
            if (context.signal.aborted) break;
            // Respect the client's pace: a slow reader must not make the server buffer without bound.
            if (!call.write(message)) await new Promise((resolve) => call.once('drain', resolve));
          }
        }),
      );
      call.end();
    } catch (error) {
      this.logUnexpected(spanName, error);
      call.emit('error', statusOf(error));
    } finally {
      opened?.done();
    }
  }

  private logUnexpected(method: string, error: unknown): void {
    // The cause (a database error's statement, say) goes to the log only, never to the client.
    if (!AppError.is(error) || error.code === ErrorCode.INTERNAL) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
      this.options.logger?.error({ method, err: error instanceof Error ? (error.stack ?? error.message) : String(error), ...(cause === undefined ? {} : { cause }) }, 'gRPC handler failed');
    }
  }
}

/** The names a verified client certificate carries: its subject's common name, then its DNS and e-mail alternative names. */
function certificateNamesOf(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>): string[] {
  const certificate = call.getAuthContext().sslPeerCertificate;
  // grpc-js reports a certificate only after the TLS handshake verified it against the client CA.
  if (certificate === undefined) return [];
  const names: string[] = [];
  const commonName = certificate.subject?.CN;
  if (typeof commonName === 'string') names.push(commonName);
  for (const part of (certificate.subjectaltname ?? '').split(',')) {
    const match = /^\s*(DNS|email):(.+)$/.exec(part);
    if (match !== null) names.push((match[2] as string).trim());
  }
  return names;
}

type UnaryHandler = (request: unknown, context: GrpcCallContext) => Promise<unknown>;
type StreamHandler = (request: unknown, context: GrpcCallContext) => AsyncIterable<unknown>;

/** A gRPC server span's kind and the RPC semantic-convention attributes, from its `package.Service/Method` name. */
function serverSpanOptions(spanName: string): SpanOptions {
  const slash = spanName.lastIndexOf('/');
  return { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', 'rpc.service': spanName.slice(0, slash), 'rpc.method': spanName.slice(slash + 1) } };
}
