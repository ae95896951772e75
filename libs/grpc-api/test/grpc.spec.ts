import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ListTasksRequest, OrchestratorServiceDefinition, Task, TaskStatus, type WatchTaskResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { createGrpcClient, grpcHealth, GrpcServer, hashToken, PrincipalDirectory, Role, type GrpcCallContext, type GrpcImplementation } from '../src';
import { rejectionOf } from '@ratchet/testing';

// A real gRPC connection on loopback; the handlers are small but real.
jest.setTimeout(30_000);

const task = (id: string) => Task.fromPartial({ id, goal: `goal ${id}`, status: TaskStatus.TASK_STATUS_QUEUED });

function implementation(seen: { streamAborted?: boolean; slowAborted?: Promise<unknown> }): GrpcImplementation<typeof OrchestratorServiceDefinition> {
  return {
    submitTask: async (request) => {
      if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty');
      return { task: task(request.goal) };
    },
    getTask: async (request, context) => {
      if (request.taskId === 'slow') {
        seen.slowAborted = new Promise((resolve) => context.signal.addEventListener('abort', () => resolve(context.signal.reason), { once: true }));
        await seen.slowAborted;
      }
      if (request.taskId === 'boom') throw new Error('secret stack detail');
      if (request.taskId === 'db-boom') throw new AppError(ErrorCode.INTERNAL, 'database error', { cause: new Error('relation "secret_table" does not exist in: SELECT * FROM secret_table...') });
      if (request.taskId === 'whoami') return { task: Task.fromPartial({ id: 'whoami', goal: `${context.principal.name} of ${context.principal.team} as ${[...context.principal.roles].join('+')}` }), iterations: [], approvals: [] };
      return { task: task(request.taskId), iterations: [], approvals: [] };
    },
    watchTask: async function* (request, context: GrpcCallContext): AsyncGenerator<WatchTaskResponse> {
      for (let sequence = 1; sequence <= 1000; sequence += 1) {
        if (context.signal.aborted) {
          seen.streamAborted = true;
          return;
        }
        yield { event: { taskId: request.taskId, sequence, time: undefined, iteration: 0, payload: undefined } };
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
  };
}

describe('GrpcServer and createGrpcClient', () => {
  const seen: { streamAborted?: boolean; slowAborted?: Promise<unknown> } = {};
  const server = new GrpcServer({ tokens: ['right-token'] });
  let address: string;

  beforeAll(async () => {
    server.addService(OrchestratorServiceDefinition, implementation(seen));
    address = `127.0.0.1:${await server.listen('127.0.0.1:0')}`;
    server.setServing(true);
  });
  afterAll(() => server.close(1_000));

  it('answers unary calls with the caller token and refuses a missing or wrong one', async () => {
    const client = createGrpcClient(OrchestratorServiceDefinition, address, { token: 'right-token' });
    try {
      const response = await client.submitTask({ goal: 'a', language: 0, budget: undefined, workspace: [], dataFiles: [], setupCommand: '', acceptanceTests: [], approvalPolicy: undefined, labels: {}, requestId: '', testCommand: [], testEdits: 0, project: '', memory: 0, profile: '', reprompt: 0, questions: 0, review: 0, audit: 0 });
      expect(response.task).toMatchObject({ id: 'a', goal: 'goal a' });
    } finally {
      client.close();
    }
    for (const token of [undefined, 'wrong-token']) {
      const stranger = createGrpcClient(OrchestratorServiceDefinition, address, token === undefined ? {} : { token });
      try {
        const error = await rejectionOf(stranger.getTask({ taskId: 'x', view: 0 }));
        expect(error.code).toBe(ErrorCode.UNAUTHENTICATED);
        expect(error.message).toMatch(token === undefined ? /needs a token: pass --token or set RATCHET_TOKEN/ : /not valid/);
      } finally {
        stranger.close();
      }
    }
  });

  it('sends a per-call token instead of the client\'s own, so one client can act for many callers', async () => {
    const shared = createGrpcClient(OrchestratorServiceDefinition, address);
    try {
      expect((await shared.getTask({ taskId: 'x', view: 0 }, { token: 'right-token' })).task?.id).toBe('x');
      expect((await rejectionOf(shared.getTask({ taskId: 'x', view: 0 }, { token: 'wrong-token' }))).code).toBe(ErrorCode.UNAUTHENTICATED);
      expect((await rejectionOf(shared.getTask({ taskId: 'x', view: 0 }))).code).toBe(ErrorCode.UNAUTHENTICATED);
      const events: number[] = [];
      for await (const { event } of shared.watchTask({ taskId: 'x', fromSequence: 0, followAfterCompletion: false }, { token: 'right-token' })) {
        events.push(event?.sequence ?? 0);
        if (events.length === 2) break;
      }
      expect(events).toEqual([1, 2]);
    } finally {
      shared.close();
    }
  });

  it('carries AppError codes across, hides unexpected errors and names unimplemented methods', async () => {
    const client = createGrpcClient(OrchestratorServiceDefinition, address, { token: 'right-token' });
    const invalid = await rejectionOf(client.submitTask({ goal: ' ', language: 0, budget: undefined, workspace: [], dataFiles: [], setupCommand: '', acceptanceTests: [], approvalPolicy: undefined, labels: {}, requestId: '', testCommand: [], testEdits: 0, project: '', memory: 0, profile: '', reprompt: 0, questions: 0, review: 0, audit: 0 }));
    expect(invalid).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: 'goal is empty', isRetryable: false });
    const internal = await rejectionOf(client.getTask({ taskId: 'boom', view: 0 }));
    expect(internal.code).toBe(ErrorCode.INTERNAL);
    expect(internal.message).not.toMatch(/secret/);
    const missing = await rejectionOf(client.cancelTask({ taskId: 'x', reason: '' }));
    expect(missing.code).toBe(ErrorCode.UNIMPLEMENTED);
    expect(missing.message).toMatch(/ratchet\.v1\.OrchestratorService\/CancelTask/);
    client.close();
  });

  it('logs the cause of an internal error for operators, and sends the client only the message', async () => {
    const logged: object[] = [];
    const logging = new GrpcServer({ logger: { error: (details) => void logged.push(details) } });
    logging.addService(OrchestratorServiceDefinition, implementation({}));
    const port = await logging.listen('127.0.0.1:0');
    const client = createGrpcClient(OrchestratorServiceDefinition, `127.0.0.1:${port}`);
    try {
      const error = await rejectionOf(client.getTask({ taskId: 'db-boom', view: 0 }));
      expect(error).toMatchObject({ code: ErrorCode.INTERNAL, message: 'database error' });
      expect(logged).toEqual([expect.objectContaining({ cause: 'relation "secret_table" does not exist in: SELECT * FROM secret_table...' })]);
    } finally {
      client.close();
      await logging.close(1_000);
    }
  });

  it('ends a call past its deadline on both sides', async () => {
    const client = createGrpcClient(OrchestratorServiceDefinition, address, { token: 'right-token' });
    // Long enough for the server to take the call on a loaded machine (at 200 ms it sometimes had not, and there was no server side to end).
    const error = await rejectionOf(client.getTask({ taskId: 'slow', view: 0 }, { timeoutMs: 1_500 }));
    expect(error.code).toBe(ErrorCode.DEADLINE_EXCEEDED);
    expect(seen.slowAborted).toBeDefined();
    await expect(seen.slowAborted).resolves.toBeDefined();
    client.close();
  });

  it('streams, and a client that stops reading cancels the server side', async () => {
    const client = createGrpcClient(OrchestratorServiceDefinition, address, { token: 'right-token' });
    const sequences: number[] = [];
    for await (const message of client.watchTask({ taskId: 't', fromSequence: 0, followAfterCompletion: false })) {
      sequences.push(message.event?.sequence ?? 0);
      if (sequences.length === 5) break;
    }
    expect(sequences).toEqual([1, 2, 3, 4, 5]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(seen.streamAborted).toBe(true);
    client.close();
  });

  it('serves health without a token, and reports NOT_SERVING when told', async () => {
    expect(await grpcHealth(address)).toBe('SERVING');
    server.setServing(false);
    expect(await grpcHealth(address)).toBe('NOT_SERVING');
    server.setServing(true);
  });

  it('explains an unreachable server', async () => {
    const client = createGrpcClient(OrchestratorServiceDefinition, '127.0.0.1:1', { defaultTimeoutMs: 2_000 });
    try {
      const error = await rejectionOf(client.listTasks(ListTasksRequest.fromPartial({ pageSize: 1 })));
      expect(error.code).toBe(ErrorCode.UNAVAILABLE);
      expect(error.message).toMatch(/127\.0\.0\.1:1 is not reachable.*RATCHET_SERVER/);
    } finally {
      client.close();
    }
  });
});

describe('GrpcServer over TLS', () => {
  let directory: string;
  const file = (name: string) => path.join(directory, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });

  beforeAll(() => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'ratchet-tls-'));
    const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'];
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-keyout', file('ca.key'), '-out', file('ca.pem'), '-subj', '/CN=ratchet-test-ca');
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('server.key'), '-out', file('server.csr'), ...subject);
    openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1', '-out', file('server.pem'), '-copy_extensions', 'copy');
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('client.key'), '-out', file('client.csr'), '-subj', '/CN=ratchet-cli');
    openssl('x509', '-req', '-in', file('client.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1', '-out', file('client.pem'));
  });
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('serves TLS, and with a client CA only clients that present a signed certificate', async () => {
    const plain = new GrpcServer({ tls: { certFile: file('server.pem'), keyFile: file('server.key') } });
    const mutual = new GrpcServer({ tls: { certFile: file('server.pem'), keyFile: file('server.key'), clientCaFile: file('ca.pem') } });
    const clients: { close(): void }[] = [];
    try {
      plain.addService(OrchestratorServiceDefinition, implementation({}));
      const tlsAddress = `localhost:${await plain.listen('127.0.0.1:0')}`;
      const verified = createGrpcClient(OrchestratorServiceDefinition, tlsAddress, { tls: { caFile: file('ca.pem') } });
      clients.push(verified);
      expect((await verified.getTask({ taskId: 'tls', view: 0 })).task).toMatchObject({ id: 'tls' });

      mutual.addService(OrchestratorServiceDefinition, implementation({}));
      const mtlsAddress = `localhost:${await mutual.listen('127.0.0.1:0')}`;
      const withCert = createGrpcClient(OrchestratorServiceDefinition, mtlsAddress, { tls: { caFile: file('ca.pem'), certFile: file('client.pem'), keyFile: file('client.key') } });
      clients.push(withCert);
      expect((await withCert.getTask({ taskId: 'mtls', view: 0 })).task).toMatchObject({ id: 'mtls' });
      const withoutCert = createGrpcClient(OrchestratorServiceDefinition, mtlsAddress, { tls: { caFile: file('ca.pem') }, defaultTimeoutMs: 3_000 });
      clients.push(withoutCert);
      const refused = await rejectionOf(withoutCert.getTask({ taskId: 'x', view: 0 }));
      expect([ErrorCode.UNAVAILABLE, ErrorCode.DEADLINE_EXCEEDED]).toContain(refused.code);
    } finally {
      for (const client of clients) client.close();
      await plain.close(1_000);
      await mutual.close(1_000);
    }
  });

  it('knows a client by the name in its certificate, and refuses a certificate no user has', async () => {
    const users = (certificateName: string) =>
      new PrincipalDirectory([
        { name: 'cli-user', team: 'payments', roles: [Role.SUBMITTER], certificateName },
        { name: 'token-user', team: 'web', roles: [Role.VIEWER], tokenSha256: hashToken('web-token') },
      ]);
    const tls = { certFile: file('server.pem'), keyFile: file('server.key'), clientCaFile: file('ca.pem') };
    const known = new GrpcServer({ tls, authenticate: users('ratchet-cli').authenticate });
    const unknown = new GrpcServer({ tls, authenticate: users('someone-else').authenticate });
    const clients: { close(): void }[] = [];
    const client = (port: number, token?: string) => {
      const created = createGrpcClient(OrchestratorServiceDefinition, `localhost:${port}`, { tls: { caFile: file('ca.pem'), certFile: file('client.pem'), keyFile: file('client.key') }, ...(token === undefined ? {} : { token }), defaultTimeoutMs: 5_000 });
      clients.push(created);
      return created;
    };
    try {
      known.addService(OrchestratorServiceDefinition, implementation({}));
      unknown.addService(OrchestratorServiceDefinition, implementation({}));
      const knownPort = await known.listen('127.0.0.1:0');
      const unknownPort = await unknown.listen('127.0.0.1:0');
      expect((await client(knownPort).getTask({ taskId: 'whoami', view: 0 })).task?.goal).toBe('cli-user of payments as submitter');
      // A token, when given, names the principal, whatever the certificate.
      expect((await client(knownPort, 'web-token').getTask({ taskId: 'whoami', view: 0 })).task?.goal).toBe('token-user of web as viewer');
      const refused = await rejectionOf(client(unknownPort).getTask({ taskId: 'whoami', view: 0 }));
      expect(refused.code).toBe(ErrorCode.UNAUTHENTICATED);
      expect(refused.message).toMatch(/no user of this server has the client certificate of ratchet-cli/);
    } finally {
      for (const open of clients) open.close();
      await known.close(1_000);
      await unknown.close(1_000);
    }
  });

  it('says which TLS file it cannot read', () => {
    const server = new GrpcServer({ tls: { certFile: file('missing.pem'), keyFile: file('server.key') } });
    return expect(server.listen('127.0.0.1:0')).rejects.toMatchObject({ code: ErrorCode.CONFIG_INVALID, message: expect.stringContaining('missing.pem') });
  });
});
