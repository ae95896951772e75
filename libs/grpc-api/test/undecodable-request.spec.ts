import * as grpc from '@grpc/grpc-js';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OrchestratorServiceDefinition, Task, TaskStatus } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { ErrorMetadata, grpcServiceOf, GrpcServer, type GrpcImplementation } from '../src';
import { undecodableRequestError } from '../src/definition';

// A request the server cannot decode is the client's fault: INVALID_ARGUMENT
// naming the problem, not grpc-js's INTERNAL "Error deserializing request".
// The bytes go over a real gRPC connection from a raw client, as any client
// in any language could send them.
jest.setTimeout(30_000);

const maxInt64 = 2n ** 63n - 1n;

/** SubmitTaskRequest { goal: "g", language: 1, budget: { max_tokens: 2^63-1 } }, encoded by hand. */
function submitWithMaxTokens(maxTokens: bigint): Buffer {
  const budget = new BinaryWriter().uint32(16).int64(maxTokens).finish();
  return Buffer.from(new BinaryWriter().uint32(10).string('g').uint32(16).int32(1).uint32(26).bytes(budget).finish());
}

/** WatchTaskRequest { task_id: "t", from_sequence: 2^63-1 }. */
function watchFromSequence(sequence: bigint): Buffer {
  return Buffer.from(new BinaryWriter().uint32(10).string('t').uint32(16).int64(sequence).finish());
}

describe('a request the server cannot decode', () => {
  const server = new GrpcServer();
  const handled: string[] = [];
  let client: grpc.Client;

  const implementation: GrpcImplementation<typeof OrchestratorServiceDefinition> = {
    submitTask: async (request) => {
      handled.push(`submit max_tokens=${request.budget?.maxTokens}`);
      return { task: Task.fromPartial({ id: 'accepted', status: TaskStatus.TASK_STATUS_QUEUED }) };
    },
    watchTask: async function* (request) {
      handled.push(`watch from=${request.fromSequence}`);
      yield { event: undefined };
    },
  };

  beforeAll(async () => {
    server.addService(OrchestratorServiceDefinition, implementation);
    const port = await server.listen('127.0.0.1:0');
    client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    client.close();
    await server.close(1_000);
  });

  const identity = (bytes: Buffer) => bytes;
  const unary = (method: string, bytes: Buffer) =>
    new Promise<{ error: grpc.ServiceError | null; reply?: Buffer }>((resolve) => {
      client.makeUnaryRequest(`/ratchet.v1.OrchestratorService/${method}`, identity, identity, bytes, (error, reply) => resolve({ error, ...(reply === undefined ? {} : { reply }) }));
    });

  it('answers SubmitTask with max_tokens 2^63-1 INVALID_ARGUMENT naming the limit, and the handler never sees a value', async () => {
    const { error } = await unary('SubmitTask', submitWithMaxTokens(maxInt64));
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toBe(
      `the SubmitTask request cannot be decoded: a 64-bit integer field is beyond ±(2^53-1) (${Number.MAX_SAFE_INTEGER}), the largest this server accepts; send a smaller value`,
    );
    expect(error?.metadata.get(ErrorMetadata.CODE)).toEqual([ErrorCode.INVALID_ARGUMENT]);
    expect(error?.metadata.get(ErrorMetadata.RETRYABLE)).toEqual(['false']);
    expect(handled).toEqual([]);
  });

  it('still serves the same request with a value a number holds', async () => {
    const { error, reply } = await unary('SubmitTask', submitWithMaxTokens(1_000n));
    expect(error).toBeNull();
    expect(reply?.length).toBeGreaterThan(0);
    expect(handled).toEqual(['submit max_tokens=1000']);
  });

  it('answers bytes that are not a protobuf message INVALID_ARGUMENT', async () => {
    const { error } = await unary('SubmitTask', Buffer.from([0x0a, 0xff, 0xff, 0xff]));
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toMatch(/^the SubmitTask request is not a valid protobuf message \(.+\); check that the client uses Ratchet's \.proto files$/);
  });

  it('ends a stream whose request cannot be decoded with INVALID_ARGUMENT', async () => {
    handled.length = 0;
    const stream = client.makeServerStreamRequest('/ratchet.v1.OrchestratorService/WatchTask', identity, identity, watchFromSequence(maxInt64));
    const error = await new Promise<grpc.ServiceError>((resolve, reject) => {
      stream.on('data', () => reject(new Error('expected no message')));
      stream.on('error', resolve);
      stream.on('end', () => reject(new Error('expected an error')));
    });
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.details).toMatch(/WatchTask request cannot be decoded: a 64-bit integer field is beyond/);
    expect(handled).toEqual([]);
  });
});

describe('undecodableRequestError', () => {
  const submitTask = grpcServiceOf(OrchestratorServiceDefinition)['submitTask'];

  it('gives the error of a request that could not be decoded, which is no request at all', () => {
    const request = submitTask?.requestDeserialize(submitWithMaxTokens(maxInt64));
    expect(undecodableRequestError(request)).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('a 64-bit integer field is beyond') });
    expect((request as { goal?: string }).goal).toBeUndefined();
  });

  it('is undefined for a decoded request', () => {
    expect(undecodableRequestError(submitTask?.requestDeserialize(submitWithMaxTokens(5n)))).toBeUndefined();
    expect(undecodableRequestError(undefined)).toBeUndefined();
  });
});
