import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GetTaskRequest, OrchestratorServiceDefinition, SubmitTaskRequest, Task, TaskStatus } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { createGrpcClient, DEFAULT_GRPC_MAX_MESSAGE_BYTES, GrpcServer, type GrpcImplementation } from '../src';
import { rejectionOf } from '@ratchet/testing';

// grpc-js refuses messages over 4 MiB unless told otherwise; a workspace task
// sends its files in SubmitTask and gets result files back in GetTask, so
// both sides carry a larger limit. A real server and client on loopback.
jest.setTimeout(30_000);

const MB = 1024 * 1024;

/** SubmitTask answers with the bytes it received; GetTask answers with a goal of `taskId` megabytes. */
const implementation: GrpcImplementation<typeof OrchestratorServiceDefinition> = {
  submitTask: async (request) => ({
    task: Task.fromPartial({ id: String(request.workspace.reduce((sum, file) => sum + file.content.length, 0)), status: TaskStatus.TASK_STATUS_QUEUED }),
  }),
  getTask: async (request) => ({ task: Task.fromPartial({ id: request.taskId, goal: 'g'.repeat(Number(request.taskId) * MB) }), iterations: [], approvals: [] }),
};

const submit = (bytes: number) =>
  SubmitTaskRequest.fromPartial({ goal: 'big workspace', workspace: [{ path: 'data.txt', content: 'w'.repeat(bytes) }] });

describe('gRPC message size limit', () => {
  const servers: GrpcServer[] = [];
  const serve = async (options: { maxMessageBytes?: number } = {}) => {
    const server = new GrpcServer(options);
    servers.push(server);
    server.addService(OrchestratorServiceDefinition, implementation);
    return `127.0.0.1:${await server.listen('127.0.0.1:0')}`;
  };
  let address: string;

  beforeAll(async () => {
    address = await serve();
  });
  afterAll(() => Promise.all(servers.map((server) => server.close(1_000))));

  it('defaults to 64 MiB, room for a 50 MiB workspace', () => {
    expect(DEFAULT_GRPC_MAX_MESSAGE_BYTES).toBe(64 * MB);
  });

  it('carries a request and a reply over 4 MiB both ways', async () => {
    const client = createGrpcClient(OrchestratorServiceDefinition, address);
    try {
      const submitted = await client.submitTask(submit(6 * MB));
      expect(submitted.task?.id).toBe(String(6 * MB));
      const fetched = await client.getTask(GetTaskRequest.fromPartial({ taskId: '6' }));
      expect(fetched.task?.goal.length).toBe(6 * MB);
    } finally {
      client.close();
    }
  });

  it('refuses a request over the server limit with RESOURCE_EXHAUSTED that names the limit, not retryable', async () => {
    const small = await serve({ maxMessageBytes: 2 * MB });
    const client = createGrpcClient(OrchestratorServiceDefinition, small);
    try {
      const error = await rejectionOf(client.submitTask(submit(3 * MB)));
      expect(error.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
      expect(error.isRetryable).toBe(false);
      expect(error.message).toMatch(/larger than max .*gRPC size limit \(maxMessageBytes/);
      // Below the limit the same server answers.
      expect((await client.submitTask(submit(MB))).task?.id).toBe(String(MB));
    } finally {
      client.close();
    }
  });

  it('refuses a reply over the client limit, and a request over it before sending', async () => {
    const client = createGrpcClient(OrchestratorServiceDefinition, address, { maxMessageBytes: 2 * MB });
    try {
      const reply = await rejectionOf(client.getTask(GetTaskRequest.fromPartial({ taskId: '3' })));
      expect(reply.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
      expect(reply.message).toMatch(/maxMessageBytes/);
      const request = await rejectionOf(client.submitTask(submit(3 * MB)));
      expect(request.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
      expect(request.isRetryable).toBe(false);
      expect(request.message).toMatch(/larger than .*maxMessageBytes/);
    } finally {
      client.close();
    }
  });

  it('rejects a limit that is not a positive whole number', () => {
    expect(() => new GrpcServer({ maxMessageBytes: 0 })).toThrow(/maxMessageBytes must be a positive whole number/);
    expect(() => createGrpcClient(OrchestratorServiceDefinition, address, { maxMessageBytes: 1.5 })).toThrow(/maxMessageBytes/);
  });
});
