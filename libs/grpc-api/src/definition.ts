import * as grpc from '@grpc/grpc-js';
import type { MessageCodec, ServiceDefinition } from '@ratchet/bus';
import { AppError, ErrorCode } from '@ratchet/errors';

/** A ts-proto generic service definition, as the bus states it. */
export type GrpcServiceDefinition = ServiceDefinition;

/**
 * Largest gRPC message the server and the client send or accept, in bytes,
 * unless they are given another `maxMessageBytes`: 64 MiB, room for a
 * workspace at its 50 MiB default limit plus protobuf framing, where
 * grpc-js alone would refuse anything over 4 MiB.
 */
export const DEFAULT_GRPC_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** grpc-js channel options that set both message size limits to `maxMessageBytes`. */
export function messageSizeOptions(maxMessageBytes: number | undefined): grpc.ChannelOptions {
  const limit = maxMessageBytes ?? DEFAULT_GRPC_MAX_MESSAGE_BYTES;
  if (!Number.isSafeInteger(limit) || limit <= 0) throw new AppError(ErrorCode.CONFIG_INVALID, `maxMessageBytes must be a positive whole number of bytes, got ${limit}`);
  return { 'grpc.max_receive_message_length': limit, 'grpc.max_send_message_length': limit };
}

/** The grpc-js service definition of a generated one: paths `/<fullName>/<Name>`, protobuf bytes on the wire. */
export function grpcServiceOf(definition: GrpcServiceDefinition): grpc.ServiceDefinition {
  const service: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [key, method] of Object.entries(definition.methods)) {
    const requestType = method.requestType as MessageCodec<unknown>;
    const responseType = method.responseType as MessageCodec<unknown>;
    service[key] = {
      path: `/${definition.fullName}/${method.name}`,
      requestStream: method.requestStream,
      responseStream: method.responseStream,
      requestSerialize: (message: unknown) => Buffer.from(requestType.encode(message).finish()),
      requestDeserialize: (bytes: Buffer) => decodeRequest(requestType, bytes, method.name),
      responseSerialize: (message: unknown) => Buffer.from(responseType.encode(message).finish()),
      responseDeserialize: (bytes: Buffer) => responseType.decode(bytes),
      originalName: key,
    };
  }
  return service;
}

/** What a request that could not be decoded becomes: its error, for the server to answer with. */
class UndecodableRequest {
  constructor(readonly error: AppError) {}
}

/**
 * A request decoded from `bytes`. One that cannot be decoded (a 64-bit
 * field beyond what a JavaScript number holds exactly, a malformed message)
 * is the client's fault, but grpc-js answers a throwing deserializer with
 * INTERNAL "Error deserializing request". So decoding does not throw: it
 * returns an UndecodableRequest, which `GrpcServer` answers with its
 * INVALID_ARGUMENT before any handler runs.
 */
function decodeRequest(requestType: MessageCodec<unknown>, bytes: Buffer, methodName: string): unknown {
  try {
    return requestType.decode(bytes);
  } catch (error) {
    return new UndecodableRequest(new AppError(ErrorCode.INVALID_ARGUMENT, decodeProblem(error, methodName), { cause: error }));
  }
}

/** What is wrong with a request that cannot be decoded, for the client. */
function decodeProblem(error: unknown, methodName: string): string {
  const detail = error instanceof Error ? error.message : String(error);
  // ts-proto decodes int64 to number (forceLong=number) and throws past ±(2^53-1).
  if (/(larger|smaller) than Number\.(MAX|MIN)_SAFE_INTEGER/.test(detail)) {
    return `the ${methodName} request cannot be decoded: a 64-bit integer field is beyond ±(2^53-1) (${Number.MAX_SAFE_INTEGER}), the largest this server accepts; send a smaller value`;
  }
  return `the ${methodName} request is not a valid protobuf message (${detail.slice(0, 200)}); check that the client uses Ratchet's .proto files`;
}

/** The INVALID_ARGUMENT error of a request that could not be decoded, or undefined for a decoded one. */
export function undecodableRequestError(request: unknown): AppError | undefined {
  return request instanceof UndecodableRequest ? request.error : undefined;
}

/** Trailing metadata that carries Ratchet's own error code and retry flag across gRPC. */
export const ErrorMetadata = { CODE: 'ratchet-error-code', RETRYABLE: 'ratchet-retryable' } as const;

const toStatus: Readonly<Record<string, grpc.status>> = {
  [ErrorCode.INVALID_ARGUMENT]: grpc.status.INVALID_ARGUMENT,
  [ErrorCode.NOT_FOUND]: grpc.status.NOT_FOUND,
  [ErrorCode.ALREADY_EXISTS]: grpc.status.ALREADY_EXISTS,
  [ErrorCode.FAILED_PRECONDITION]: grpc.status.FAILED_PRECONDITION,
  [ErrorCode.PERMISSION_DENIED]: grpc.status.PERMISSION_DENIED,
  [ErrorCode.UNAUTHENTICATED]: grpc.status.UNAUTHENTICATED,
  [ErrorCode.RESOURCE_EXHAUSTED]: grpc.status.RESOURCE_EXHAUSTED,
  [ErrorCode.DEADLINE_EXCEEDED]: grpc.status.DEADLINE_EXCEEDED,
  [ErrorCode.CANCELLED]: grpc.status.CANCELLED,
  [ErrorCode.ABORTED]: grpc.status.ABORTED,
  [ErrorCode.UNAVAILABLE]: grpc.status.UNAVAILABLE,
  [ErrorCode.UNIMPLEMENTED]: grpc.status.UNIMPLEMENTED,
  [ErrorCode.CONFIG_INVALID]: grpc.status.FAILED_PRECONDITION,
};

const fromStatus: Readonly<Partial<Record<grpc.status, ErrorCode>>> = {
  [grpc.status.INVALID_ARGUMENT]: ErrorCode.INVALID_ARGUMENT,
  [grpc.status.NOT_FOUND]: ErrorCode.NOT_FOUND,
  [grpc.status.ALREADY_EXISTS]: ErrorCode.ALREADY_EXISTS,
  [grpc.status.FAILED_PRECONDITION]: ErrorCode.FAILED_PRECONDITION,
  [grpc.status.PERMISSION_DENIED]: ErrorCode.PERMISSION_DENIED,
  [grpc.status.UNAUTHENTICATED]: ErrorCode.UNAUTHENTICATED,
  [grpc.status.RESOURCE_EXHAUSTED]: ErrorCode.RESOURCE_EXHAUSTED,
  [grpc.status.DEADLINE_EXCEEDED]: ErrorCode.DEADLINE_EXCEEDED,
  [grpc.status.CANCELLED]: ErrorCode.CANCELLED,
  [grpc.status.ABORTED]: ErrorCode.ABORTED,
  [grpc.status.UNAVAILABLE]: ErrorCode.UNAVAILABLE,
  [grpc.status.UNIMPLEMENTED]: ErrorCode.UNIMPLEMENTED,
};

/** A gRPC status for a failed handler; unknown errors become INTERNAL without their stack. */
export function statusOf(error: unknown): Partial<grpc.StatusObject> {
  const appError = AppError.is(error) ? error : new AppError(ErrorCode.INTERNAL, 'internal error; the server log has the details', { cause: error });
  const metadata = new grpc.Metadata();
  metadata.set(ErrorMetadata.CODE, appError.code);
  metadata.set(ErrorMetadata.RETRYABLE, String(appError.isRetryable));
  return { code: toStatus[appError.code] ?? grpc.status.INTERNAL, details: appError.message, metadata };
}

/** The AppError a gRPC failure stands for: Ratchet's own code when the server sent it, else one mapped from the status. */
export function errorOf(error: grpc.ServiceError, address: string): AppError {
  const code = error.metadata?.get(ErrorMetadata.CODE)[0];
  const retryable = error.metadata?.get(ErrorMetadata.RETRYABLE)[0];
  if (typeof code === 'string' && code in ErrorCode) {
    return new AppError(code as ErrorCode, error.details, { cause: error, ...(retryable === undefined ? {} : { retryable: retryable === 'true' }) });
  }
  // grpc-js's own size check (either side): resending the same message would fail the same way.
  // ("Received message larger than max (N vs. M)", "Attempted to send message with a size larger than M")
  if (error.code === grpc.status.RESOURCE_EXHAUSTED && /message .*larger than/i.test(error.details)) {
    return new AppError(
      ErrorCode.RESOURCE_EXHAUSTED,
      `${error.details}: the message is over the gRPC size limit (maxMessageBytes of client and server, default ${DEFAULT_GRPC_MAX_MESSAGE_BYTES / 1024 / 1024} MiB); send a smaller workspace or raise the limit on both sides`,
      { cause: error, retryable: false },
    );
  }
  if (error.code === grpc.status.UNAVAILABLE) {
    return new AppError(ErrorCode.UNAVAILABLE, `the Ratchet server at ${address} is not reachable (${error.details}); check --server / RATCHET_SERVER and that the orchestrator runs`, {
      cause: error,
    });
  }
  return new AppError(fromStatus[error.code] ?? ErrorCode.INTERNAL, error.details || `gRPC status ${error.code}`, { cause: error });
}
