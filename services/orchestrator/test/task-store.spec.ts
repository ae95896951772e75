import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApprovalDecision, ApprovalKind, Language, Phase, StopReason, TaskStatus, TestCaseStatus } from '@ratchet/contracts';
import { openPglite, openPostgres, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { startPostgres, type PostgresFixture } from '@ratchet/testing';
import { TaskStore } from '../src';
import type { IterationRecord, TaskRecord } from '../src/domain/records';

jest.setTimeout(90_000);

let sequence = 0;
function task(overrides: Partial<TaskRecord> = {}): TaskRecord {
  sequence += 1;
  const created = new Date(Date.UTC(2026, 10, 22, 12, 0, sequence));
  return {
    id: `${String(sequence).padStart(8, '0')}-aaaa-bbbb-cccc-${String(Date.now()).slice(-12).padStart(12, '0')}`,
    goal: `goal ${sequence}`,
    language: Language.LANGUAGE_PYTHON,
    status: TaskStatus.TASK_STATUS_QUEUED,
    statusReason: '',
    stopReason: StopReason.STOP_REASON_UNSPECIFIED,
    currentIteration: 0,
    replanCount: 0,
    replanReason: '',
    budget: { maxIterations: 3, maxTokens: 0, maxCostUsd: 0.5, maxWallTime: { seconds: 60, nanos: 0 } },
    usage: { promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 },
    labels: { team: 'core' },
    workspace: [{ path: 'README.md', content: '# hi' }],
    acceptanceTests: [],
    generatedTests: [],
    approvalKinds: [],
    approvalTimeoutMs: 0,
    pendingGateId: '',
    resultFiles: [],
    lessons: [],
    requestId: '',
    createdAt: created,
    updatedAt: created,
    ...overrides,
  };
}

function emptyIteration(taskId: string, number: number): IterationRecord {
  return {
    taskId,
    number,
    phase: Phase.PHASE_CODING,
    files: [],
    safetyFindings: [],
    hypothesis: '',
    retrievedLessonIds: [],
    reflectionLessons: [],
    failureId: '',
    output: '',
    usage: { promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 },
    startedAt: new Date('2026-11-22T12:00:00Z'),
  };
}

function storeContract(name: string, open: () => Promise<Database>) {
  describe(`TaskStore on ${name}`, () => {
    let db: Database;
    let store: TaskStore;
    beforeAll(async () => {
      db = await open();
      store = await TaskStore.open(db);
      await TaskStore.open(db); // migrations are re-runnable
    });
    afterAll(async () => {
      await db.close();
    });

    it('stores a transition atomically: task row, iteration and numbered events', async () => {
      const record = task();
      const created = await store.create(record, [{ time: new Date(), iteration: 0, payload: { $case: 'logLine', logLine: { level: 2, message: 'hello', service: 's', attributes: {} } } }], { leaseMs: 60_000 });
      expect(created.created).toBe(true);
      expect(created.events.map((event) => event.sequence)).toEqual([1]);
      record.status = TaskStatus.TASK_STATUS_CODING;
      record.currentIteration = 1;
      record.usage = { promptTokens: 10, completionTokens: 5, costUsd: 0.001, modelCalls: 1 };
      record.plan = { summary: 'p', steps: [{ number: 1, description: 'd', paths: ['a.py'] }], files: [], testStrategy: 't', language: 1, dependencies: [], appliedLessonIds: [] };
      const iteration: IterationRecord = {
        taskId: record.id,
        number: 1,
        phase: Phase.PHASE_REFLECTING,
        files: [{ path: 'a.py', content: 'x = 1\n' }],
        testReport: {
          framework: 'pytest',
          total: 1,
          passed: 0,
          failed: 1,
          errored: 0,
          skipped: 0,
          duration: { seconds: 1, nanos: 5e8 },
          parsed: true,
          parseError: '',
          cases: [{ name: 't', suite: 's', file: 'f', status: TestCaseStatus.TEST_CASE_STATUS_FAILED, duration: undefined, failureMessage: 'boom', failureDetail: '' }],
        },
        error: { code: 'TESTS_FAILED', message: '0/1', retryable: false, signature: 'E: x', detail: '' },
        safetyFindings: [],
        hypothesis: 'h',
        retrievedLessonIds: ['l1'],
        reflectionLessons: [],
        failureId: 'f1',
        fingerprint: { errorSignature: 'E: x', failingTests: ['s::t'] },
        output: 'out',
        usage: record.usage,
        startedAt: new Date('2026-11-22T12:00:00Z'),
        completedAt: new Date('2026-11-22T12:00:03Z'),
      };
      const events = await store.save({ task: record, iteration, events: [{ time: new Date(), iteration: 0, payload: { $case: 'phaseStarted', phaseStarted: { phase: Phase.PHASE_CODING, attempt: 1 } } }] });
      expect(events[0]).toMatchObject({ sequence: 2, iteration: 1, taskId: record.id });
      const loaded = await store.get(record.id);
      expect(loaded).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, currentIteration: 1, labels: { team: 'core' }, budget: record.budget, usage: record.usage });
      expect(loaded.plan?.steps[0]?.paths).toEqual(['a.py']);
      expect(loaded.workspace).toEqual(record.workspace);
      // A second store on the same database reads it back from the tables; the writer answers from what it wrote.
      const reader = await TaskStore.open(db);
      const [stored] = await reader.iterations(record.id);
      expect(stored).toEqual(iteration);
      expect(await reader.iteration(record.id, 1)).toEqual(iteration);
      expect(await store.iterations(record.id)).toEqual([iteration]);
      expect((await store.events(record.id)).map((event) => event.payload?.$case)).toEqual(['logLine', 'phaseStarted']);
      expect((await store.events(record.id, 2)).length).toBe(1);
      expect(await store.unfinished()).toContain(record.id);
    });

    it('answers iteration reads from what it wrote, as copies, until the task ends or is forgotten', async () => {
      const record = task();
      await store.create(record, [], { leaseMs: 60_000 });
      record.status = TaskStatus.TASK_STATUS_CODING;
      record.currentIteration = 1;
      const iteration = { ...emptyIteration(record.id, 1), hypothesis: 'first' };
      await store.save({ task: record, iteration, events: [] });
      iteration.hypothesis = 'changed after the save';
      const read = await store.iteration(record.id, 1);
      expect(read.hypothesis).toBe('first');
      read.hypothesis = 'changed by a reader';
      expect((await store.iteration(record.id, 1)).hypothesis).toBe('first');
      // Another writer (a replica that took the task over) changes the row; forget() makes this store read it.
      await db.query(`UPDATE orchestrator.iterations SET hypothesis = 'from elsewhere' WHERE task_id = $1`, [record.id]);
      expect((await store.iteration(record.id, 1)).hypothesis).toBe('first');
      store.forget(record.id);
      expect((await store.iteration(record.id, 1)).hypothesis).toBe('from elsewhere');
      await expect(store.iteration(record.id, 2)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    });

    it('lets one replica at a time drive a task: leases, take-over after expiry, release, cancel requests', async () => {
      const first = await TaskStore.open(db, { owner: 'replica-a' });
      const second = await TaskStore.open(db, { owner: 'replica-b' });
      const record = task();
      await first.create(record, [], { leaseMs: 60_000 });
      expect(await second.claim({ ids: [record.id] }, 60_000)).toEqual([]);
      record.status = TaskStatus.TASK_STATUS_RETRIEVING;
      await expect(second.save({ task: record, events: [] })).rejects.toMatchObject({ code: ErrorCode.ABORTED });
      await first.save({ task: record, events: [] });

      // A cancel asked of the replica that does not drive the task reaches the one that does.
      await second.requestCancel(record.id, 'stop it');
      expect(await first.renew([record.id], 60_000)).toEqual(new Map([[record.id, 'stop it']]));

      // The lease runs out (it is renewed for 1 ms): the other replica takes the task, and the first can no longer write.
      await first.renew([record.id], 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await second.claim({ ids: [record.id] }, 60_000)).toEqual([record.id]);
      expect(await first.renew([record.id], 60_000)).toEqual(new Map());
      await expect(first.save({ task: record, events: [] })).rejects.toMatchObject({ code: ErrorCode.ABORTED });

      // Released, any replica takes it at once; a replica restarted under the same name takes its own back.
      await second.release();
      expect(await first.claim({ ids: [record.id] }, 60_000)).toEqual([record.id]);
      const restarted = await TaskStore.open(db, { owner: 'replica-a' });
      expect(await restarted.claim({ ids: [record.id] }, 60_000)).toEqual([record.id]);

      // A task nobody holds is taken by claim({ limit }); a finished one never is.
      const unowned = task();
      await first.create(unowned, []);
      const finished = task({ status: TaskStatus.TASK_STATUS_SUCCEEDED });
      await first.create(finished, []);
      const taken = await second.claim({ limit: 100 }, 60_000);
      expect(taken).toContain(unowned.id);
      expect(taken).not.toContain(finished.id);
      expect(taken).not.toContain(record.id);
    });

    it('lets only one of two drivers that read the same state advance a task', async () => {
      const owner = await TaskStore.open(db, { owner: 'replica-c' });
      const record = task();
      await owner.create(record, [], { leaseMs: 60_000 });
      // Two drivers of one task in one owner (or two processes given one owner id) each read it...
      const one = await owner.get(record.id);
      const other = await owner.get(record.id);
      one.status = TaskStatus.TASK_STATUS_RETRIEVING;
      other.status = TaskStatus.TASK_STATUS_RETRIEVING;
      await owner.save({ task: one, events: [{ time: new Date(), iteration: 0, payload: { $case: 'logLine', logLine: { level: 1, message: 'one', service: 't', attributes: {} } } }] });
      // ...and the second to write is turned away instead of recording the transition twice.
      await expect(owner.save({ task: other, events: [] })).rejects.toMatchObject({ code: ErrorCode.ABORTED, message: expect.stringContaining('saved by another driver') });
      // The winner goes on writing; a fresh read can too.
      one.status = TaskStatus.TASK_STATUS_PLANNING;
      await owner.save({ task: one, events: [] });
      const fresh = await owner.get(record.id);
      expect(fresh.status).toBe(TaskStatus.TASK_STATUS_PLANNING);
      expect(await owner.events(record.id)).toHaveLength(1);
    });

    it('keeps a task waiting on a gate out of the work pool until one decision moves it on', async () => {
      const owner = await TaskStore.open(db, { owner: 'replica-d' });
      const record = task({ approvalKinds: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT], approvalTimeoutMs: 1 });
      await owner.create(record, [], { leaseMs: 60_000 });
      record.status = TaskStatus.TASK_STATUS_AWAITING_APPROVAL;
      const gate = {
        gateId: `gate-${record.id}`,
        taskId: record.id,
        iteration: 1,
        kind: ApprovalKind.APPROVAL_KIND_FINAL_RESULT,
        summary: 'tests passed',
        detail: 'files',
        decision: ApprovalDecision.APPROVAL_DECISION_PENDING,
        approver: '',
        comment: '',
        requestedAt: new Date(),
        decidedAt: undefined,
      };
      await owner.save({ task: record, events: [], gate });
      const waiting = await owner.get(record.id);
      expect(waiting.pendingGateId).toBe(gate.gateId);
      expect(waiting.approvalKinds).toEqual([ApprovalKind.APPROVAL_KIND_FINAL_RESULT]);
      // Nobody looking for work takes it, even once its lease is gone.
      await owner.release([record.id]);
      expect(await owner.claim({ limit: 100 }, 60_000)).not.toContain(record.id);
      // Its 1 ms timeout has passed.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await owner.expiredGates()).toContainEqual({ taskId: record.id, gateId: gate.gateId });

      await expect(owner.decide(record.id, 'no-such-gate', { decision: ApprovalDecision.APPROVAL_DECISION_APPROVED, approver: 'ann', comment: '', next: TaskStatus.TASK_STATUS_LEARNING, reason: 'approved' }, () => [])).rejects.toMatchObject({
        code: ErrorCode.NOT_FOUND,
      });
      const rejection = { decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: 'ann', comment: 'rename it', next: TaskStatus.TASK_STATUS_PLANNING, reason: 'rejected by ann: rename it' };
      const { gate: decided, events } = await owner.decide(record.id, gate.gateId, rejection, (done) => [
        { time: new Date(), iteration: done.iteration, payload: { $case: 'approvalDecided', approvalDecided: { gate: done } } },
      ]);
      expect(decided).toMatchObject({ decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: 'ann', comment: 'rename it' });
      expect(events.map((event) => event.payload?.$case)).toEqual(['approvalDecided']);
      const moved = await owner.get(record.id);
      expect(moved).toMatchObject({ status: TaskStatus.TASK_STATUS_PLANNING, replanReason: 'rejected by ann: rename it', pendingGateId: '' });
      // A second decision on the same gate changes nothing.
      await expect(owner.decide(record.id, gate.gateId, rejection, () => [])).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('already decided: REJECTED by ann') });
      expect(await owner.approvals(record.id)).toEqual([expect.objectContaining({ gateId: gate.gateId, decision: ApprovalDecision.APPROVAL_DECISION_REJECTED })]);
      expect(await owner.expiredGates()).not.toContainEqual({ taskId: record.id, gateId: gate.gateId });
    });

    it('returns the existing task for a repeated request id instead of a second one', async () => {
      const first = await store.create(task({ requestId: `req-${name}` }), []);
      const again = await store.create(task({ requestId: `req-${name}` }), []);
      expect(again.created).toBe(false);
      expect(again.task.id).toBe(first.task.id);
    });

    it('finds a task by a unique id prefix and explains an unknown id', async () => {
      const record = task();
      await store.create(record, []);
      expect((await store.get(record.id.slice(0, 8))).id).toBe(record.id);
      await expect(store.get('zzzzzzzz-none')).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND, message: expect.stringContaining('ratchet history') });
    });

    it('lists newest first, filters by status and pages', async () => {
      const done = task({ status: TaskStatus.TASK_STATUS_SUCCEEDED });
      await store.create(done, []);
      const page = await store.list({ statuses: [], pageSize: 2, offset: 0 });
      expect(page.tasks).toHaveLength(2);
      expect(page.more).toBe(true);
      expect(page.tasks[0]!.createdAt.getTime()).toBeGreaterThanOrEqual(page.tasks[1]!.createdAt.getTime());
      const succeeded = await store.list({ statuses: [TaskStatus.TASK_STATUS_SUCCEEDED], pageSize: 10, offset: 0 });
      expect(succeeded.tasks.map((found) => found.id)).toContain(done.id);
      expect(new Set(succeeded.tasks.map((found) => found.status))).toEqual(new Set([TaskStatus.TASK_STATUS_SUCCEEDED]));
    });
  });
}

storeContract('PGlite', () => openPglite());

describe('on real Postgres', () => {
  let server: PostgresFixture;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server.stop();
  });
  storeContract('Postgres', () => openPostgres({ connectionString: server.connectionString }));
});
