import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InProcessTransport } from '@ratchet/bus';
import { ApprovalDecision, ApprovalKind, Language, OrchestratorServiceDefinition, SubmitTaskRequest, TaskStatus, TaskView } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { createGrpcClient, GrpcServer, hashToken, PrincipalDirectory, Role, type GrpcClient } from '@ratchet/grpc-api';
import { agentClients, createOrchestratorService, loopSettingsOf, orchestratorConfigSection, TaskStore, type OrchestratorService } from '../src';
import { task } from './fixtures';
import { rejectionOf } from '@ratchet/testing';

// Two teams on one orchestrator over a real gRPC connection: what each
// principal sees and may do. No task runs (no slots); the store is PGlite.
jest.setTimeout(30_000);

const users = new PrincipalDirectory([
  { name: 'ana', team: 'payments', roles: [Role.SUBMITTER], tokenSha256: hashToken('ana-token') },
  { name: 'ada', team: 'payments', roles: [Role.APPROVER], tokenSha256: hashToken('ada-token') },
  { name: 'vic', team: 'payments', roles: [Role.VIEWER], tokenSha256: hashToken('vic-token') },
  { name: 'bo', team: 'web', roles: [Role.SUBMITTER, Role.APPROVER], tokenSha256: hashToken('bo-token') },
]);

describe('users and teams over gRPC', () => {
  let db: Database;
  let orchestrator: OrchestratorService;
  const server = new GrpcServer({ authenticate: users.authenticate });
  const clients = new Map<string, GrpcClient<typeof OrchestratorServiceDefinition>>();
  const as = (name: string) => clients.get(name) as GrpcClient<typeof OrchestratorServiceDefinition>;
  const submit = (name: string, goal: string, requestId = '') => as(name).submitTask(SubmitTaskRequest.fromPartial({ goal, language: Language.LANGUAGE_PYTHON, requestId }));

  beforeAll(async () => {
    db = await openPglite();
    orchestrator = await createOrchestratorService({
      db,
      clients: agentClients(new InProcessTransport(), 1_000),
      publish: () => Promise.resolve(),
      settings: loopSettingsOf(orchestratorConfigSection.parse({}), 60),
      maxConcurrentTasks: 0,
    });
    server.addService(OrchestratorServiceDefinition, { ...orchestrator.implementation, watchTask: orchestrator.watchTask });
    const port = await server.listen('127.0.0.1:0');
    for (const name of ['ana', 'ada', 'vic', 'bo']) clients.set(name, createGrpcClient(OrchestratorServiceDefinition, `127.0.0.1:${port}`, { token: `${name}-token`, defaultTimeoutMs: 10_000 }));
  });
  afterAll(async () => {
    for (const client of clients.values()) client.close();
    await server.close(1_000);
    await orchestrator?.close();
    await db?.close();
  });

  it('gives a task its submitter and team, and shows it to that team only', async () => {
    const { task: mine } = await submit('ana', 'payments goal');
    expect(mine).toMatchObject({ team: 'payments', submittedBy: 'ana' });
    const { task: theirs } = await submit('bo', 'web goal');
    expect(theirs).toMatchObject({ team: 'web', submittedBy: 'bo' });

    expect((await as('vic').getTask({ taskId: mine!.id, view: TaskView.TASK_VIEW_FULL })).task?.goal).toBe('payments goal');
    expect((await as('vic').listTasks({ statuses: [], labels: {}, pageSize: 100, pageToken: '', view: TaskView.TASK_VIEW_BASIC })).tasks.map((found) => found.goal)).toEqual(['payments goal']);
    expect((await as('bo').listTasks({ statuses: [], labels: {}, pageSize: 100, pageToken: '', view: TaskView.TASK_VIEW_BASIC })).tasks.map((found) => found.goal)).toEqual(['web goal']);

    // Another team's task is not found, whether named in full or by prefix, read, watched, cancelled or resumed.
    for (const taskId of [mine!.id, mine!.id.slice(0, 8)]) {
      expect((await rejectionOf(as('bo').getTask({ taskId, view: TaskView.TASK_VIEW_FULL }))).code).toBe(ErrorCode.NOT_FOUND);
      expect((await rejectionOf(as('bo').cancelTask({ taskId, reason: 'mine now' }))).code).toBe(ErrorCode.NOT_FOUND);
      expect((await rejectionOf(as('bo').resumeTask({ taskId, hint: '' }))).code).toBe(ErrorCode.NOT_FOUND);
      const watched = await rejectionOf((async () => {
        for await (const response of as('bo').watchTask({ taskId, fromSequence: 0, followAfterCompletion: false })) void response;
      })());
      expect(watched.code).toBe(ErrorCode.NOT_FOUND);
    }
    expect((await as('ana').getTask({ taskId: mine!.id, view: TaskView.TASK_VIEW_BASIC })).task?.status).toBe(TaskStatus.TASK_STATUS_QUEUED);
  });

  it('keeps request ids per team: the same id in two teams makes two tasks', async () => {
    const first = await submit('ana', 'idempotent', 'request-1');
    const again = await submit('ana', 'idempotent', 'request-1');
    const other = await submit('bo', 'idempotent', 'request-1');
    expect(again.task?.id).toBe(first.task?.id);
    expect(other.task?.id).not.toBe(first.task?.id);
    expect(other.task?.team).toBe('web');
  });

  it('lets each role do its own: viewers read, submitters submit and cancel, approvers decide', async () => {
    const denied = await rejectionOf(submit('vic', 'not allowed'));
    expect(denied).toMatchObject({ code: ErrorCode.PERMISSION_DENIED, message: expect.stringMatching(/vic may not submit tasks: that needs the submitter role in team payments/) });
    const { task: queued } = await submit('ana', 'to cancel');
    expect((await rejectionOf(as('ada').cancelTask({ taskId: queued!.id, reason: '' }))).code).toBe(ErrorCode.PERMISSION_DENIED);
    expect((await as('ana').cancelTask({ taskId: queued!.id, reason: '' })).task?.status).toBe(TaskStatus.TASK_STATUS_CANCELLED);
    expect((await rejectionOf(as('vic').reindexLessons({ batchSize: 0 }))).code).toBe(ErrorCode.PERMISSION_DENIED);
  });

  it('records the authenticated approver, never the name the request gives', async () => {
    const store = await TaskStore.open(db);
    const { task: record } = await store.tasks.create(task({ id: 'gated-task', team: 'payments', submittedBy: 'ana', approvalKinds: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT] }), [], { leaseMs: 60_000 });
    const gate = { gateId: 'gate-1', taskId: record.id, iteration: 1, kind: ApprovalKind.APPROVAL_KIND_FINAL_RESULT, summary: 'tests passed', detail: '', decision: ApprovalDecision.APPROVAL_DECISION_PENDING, approver: '', comment: '', requestedAt: new Date(), decidedAt: undefined };
    await store.transitions.save(record, { task: { ...record, status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL }, iterations: [], events: [], gate, changed: true });
    await store.leases.release([record.id]);
    const decision = { taskId: record.id, gateId: 'gate-1', decision: ApprovalDecision.APPROVAL_DECISION_APPROVED, approver: 'the-ceo', comment: 'ship it' };

    expect((await rejectionOf(as('ana').approve(decision))).code).toBe(ErrorCode.PERMISSION_DENIED);
    expect((await rejectionOf(as('bo').approve(decision))).code).toBe(ErrorCode.NOT_FOUND);
    const approved = await as('ada').approve(decision);
    expect(approved.gate).toMatchObject({ decision: ApprovalDecision.APPROVAL_DECISION_APPROVED, approver: 'ada', comment: 'ship it' });
    expect(await store.approvals.get(record.id, 'gate-1')).toMatchObject({ approver: 'ada' });
  });
});
