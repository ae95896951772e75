import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApprovalDecision, ApprovalKind, Phase, Severity, TaskStatus, TestCaseStatus, TestEdits } from '@ratchet/contracts';
import { openPglite, openPostgres, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { startPostgres, type PostgresFixture } from '@ratchet/testing';
import { TaskStore } from '../src';
import { iteration as sampleIteration, task as baseTask } from './fixtures';
import type { Decision } from '../src/domain/decide';
import type { NewEvent } from '../src/domain/events';
import type { IterationRecord, TaskRecord } from '../src/domain/records';

jest.setTimeout(90_000);

let sequence = 0;
/** A new task with its own id and creation time, so tests sharing one database do not collide. */
function task(overrides: Partial<TaskRecord> = {}): TaskRecord {
  sequence += 1;
  const created = new Date(Date.UTC(2026, 10, 22, 12, 0, sequence));
  return baseTask({
    id: `${String(sequence).padStart(8, '0')}-aaaa-bbbb-cccc-${String(Date.now()).slice(-12).padStart(12, '0')}`,
    goal: `goal ${sequence}`,
    budget: { maxIterations: 3, maxTokens: 0, maxCostUsd: 0.5, maxWallTime: { seconds: 60, nanos: 0 } },
    labels: { team: 'core' },
    workspace: [{ path: 'README.md', content: '# hi' }],
    createdAt: created,
    updatedAt: created,
    version: 0,
    ...overrides,
  });
}

/** A decision as `decide` would make it: the task with `patch`, and what else the transition writes. */
function change(task: TaskRecord, patch: Partial<TaskRecord>, extra: { iterations?: IterationRecord[]; events?: NewEvent[]; gate?: Decision['gate']; decidedGate?: Decision['decidedGate'] } = {}): Decision {
  return { task: { ...task, ...patch }, iterations: extra.iterations ?? [], events: extra.events ?? [], changed: true, ...(extra.gate === undefined ? {} : { gate: extra.gate }), ...(extra.decidedGate === undefined ? {} : { decidedGate: extra.decidedGate }) };
}

const logLine = (message: string): NewEvent => ({ time: new Date(), iteration: 0, payload: { $case: 'logLine', logLine: { level: 2, message, service: 's', attributes: {} } } });

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

    it('stores a transition atomically: task row, iteration and numbered events, and bumps the version', async () => {
      const created = await store.tasks.create(task(), [logLine('hello')], { leaseMs: 60_000 });
      expect(created.created).toBe(true);
      expect(created.events.map((event) => event.sequence)).toEqual([1]);
      expect(created.task.version).toBe(1);
      const record = created.task;
      const usage = { promptTokens: 10, completionTokens: 5, costUsd: 0.001, modelCalls: 1 };
      const plan = { summary: 'p', steps: [{ number: 1, description: 'd', paths: ['a.py'] }], files: [], testStrategy: 't', language: 1, dependencies: [], appliedLessonIds: [], changesTests: false, changesTestsReason: '' };
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
        reviewFindings: [{ severity: Severity.SEVERITY_HIGH, path: 'a.py', line: 1, category: 'correctness', cwe: '', message: 'x is never used', suggestion: 'return it', blocking: true, source: 'reviewer' }],
        auditFindings: [{ severity: Severity.SEVERITY_MEDIUM, path: 'a.py', line: 1, category: 'A02:2021-Cryptographic Failures', cwe: 'CWE-328', message: 'md5', suggestion: 'sha256', blocking: false, source: 'py.weak-hash' }],
        hypothesis: 'h',
        retrievedLessonIds: ['l1'],
        reflectionLessons: [],
        testDisputes: [{ path: 'tests/test_a.py', testName: 't', reason: 'the goal says so' }],
        toolSteps: [{ number: 1, tool: 'run', arguments: '{"command":"pytest -q"}', result: 'exit code 1', failed: false, decision: 'allow', duration: { seconds: 0, nanos: 5e6 }, thought: 'run the tests' }],
        failureId: 'f1',
        fingerprint: { errorSignature: 'E: x', failingTests: ['s::t'] },
        output: 'out',
        usage,
        startedAt: new Date('2026-11-22T12:00:00Z'),
        completedAt: new Date('2026-11-22T12:00:03Z'),
      };
      const phaseStarted: NewEvent = { time: new Date(), iteration: 1, payload: { $case: 'phaseStarted', phaseStarted: { phase: Phase.PHASE_CODING, attempt: 1 } } };
      const spec = { summary: 's', behaviour: 'b', inputs: 'i', outputs: 'o', interface: ['f(x)'], edgeCases: ['empty'], acceptanceCriteria: ['f(1) == 2'], assumptions: ['ints'] };
      const questions = [{ questionId: 'q1', question: 'ints?', why: 'types', options: ['yes'], assumption: 'yes', answer: 'yes', answeredBy: 'ada', askedAt: new Date('2026-11-22T12:00:00Z'), answeredAt: new Date('2026-11-22T12:00:01Z') }];
      const saved = await store.transitions.save(record, change(record, { status: TaskStatus.TASK_STATUS_CODING, currentIteration: 1, usage, plan, spec, questions }, { iterations: [iteration], events: [phaseStarted] }));
      expect(saved.version).toBe(2);
      expect(saved.events[0]).toMatchObject({ sequence: 2, iteration: 1, taskId: record.id });
      const loaded = await store.tasks.get(record.id);
      expect(loaded).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, currentIteration: 1, labels: { team: 'core' }, budget: record.budget, usage, version: 2 });
      expect(loaded.plan?.steps[0]?.paths).toEqual(['a.py']);
      expect(loaded).toMatchObject({ spec, questions, phases: record.phases });
      expect(loaded.workspace).toEqual(record.workspace);
      // A second store on the same database reads the same rows back.
      const reader = await TaskStore.open(db);
      expect(await reader.iterations.list(record.id)).toEqual([iteration]);
      expect(await reader.iterations.get(record.id, 1)).toEqual(iteration);
      await expect(reader.iterations.get(record.id, 2)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
      expect((await store.events.list(record.id)).map((event) => event.payload?.$case)).toEqual(['logLine', 'phaseStarted']);
      expect((await store.events.list(record.id, 2)).length).toBe(1);
      expect(await store.tasks.unfinished()).toContain(record.id);
    });

    it('leaves an iteration\'s stored files alone when the decision says they did not change (a tool step)', async () => {
      const { task: record } = await store.tasks.create(task(), [], { leaseMs: 60_000 });
      const files = [{ path: 'big.py', content: 'x = 1\n'.repeat(1000) }];
      const first: IterationRecord = { ...sampleIteration(1), taskId: record.id, files };
      const saved = await store.transitions.save(record, change(record, { status: TaskStatus.TASK_STATUS_CODING, currentIteration: 1 }, { iterations: [first] }));
      const coding = { ...record, status: TaskStatus.TASK_STATUS_CODING, currentIteration: 1, version: saved.version };
      // The files sent here are not the stored ones; marked unchanged, they are not written.
      const stepped = { ...first, files: [], toolSteps: [{ number: 1, tool: 'run', arguments: '{}', result: 'ok', failed: false, decision: 'allow', duration: undefined, thought: '' }] };
      const again = await store.transitions.save(coding, { ...change(coding, {}, { iterations: [stepped] }), filesUnchanged: new Set([1]) });
      const [stored] = await store.iterations.list(record.id);
      expect(stored?.files).toEqual(files);
      expect(stored?.toolSteps.map((step) => step.tool)).toEqual(['run']);
      // Not marked: the new files are written.
      await store.transitions.save({ ...coding, version: again.version }, change({ ...coding, version: again.version }, {}, { iterations: [{ ...stepped, files: [{ path: 'small.py', content: '' }] }] }));
      expect((await store.iterations.list(record.id))[0]?.files.map((file) => file.path)).toEqual(['small.py']);
    });

    it('writes a large column only when the record holds a new value for it', async () => {
      const { task: record } = await store.tasks.create(task({ generatedTests: [{ path: 'tests/test_a.py', content: 'def test(): pass\n' }] }), [], { leaseMs: 60_000 });
      // Someone changes the column behind the writer's back; a transition that keeps the field (same value) leaves it alone...
      await db.query(`UPDATE orchestrator.tasks SET generated_tests = '[]' WHERE id = $1`, [record.id]);
      const saved = await store.transitions.save(record, change(record, { status: TaskStatus.TASK_STATUS_RETRIEVING }));
      expect((await store.tasks.get(record.id)).generatedTests).toEqual([]);
      // ...and one that sets a new value writes it.
      const next = { ...record, status: TaskStatus.TASK_STATUS_RETRIEVING, version: saved.version };
      await store.transitions.save(next, change(next, { generatedTests: [{ path: 'tests/test_b.py', content: 'x' }] }));
      expect((await store.tasks.get(record.id)).generatedTests.map((file) => file.path)).toEqual(['tests/test_b.py']);
    });

    it('keeps a plan waiting for its packages\' check, with the planner call\'s usage, and clears the mark', async () => {
      const { task: record } = await store.tasks.create(task(), [], { leaseMs: 60_000 });
      const usage = { promptTokens: 40, completionTokens: 2, costUsd: 0.01, modelCalls: 1 };
      const saved = await store.transitions.save(record, change(record, { status: TaskStatus.TASK_STATUS_PLANNING, unjudgedPlan: { usage } }));
      const waiting = await store.tasks.get(record.id);
      expect(waiting.unjudgedPlan).toEqual({ usage });
      await store.transitions.save(waiting, change({ ...waiting, version: saved.version }, { status: TaskStatus.TASK_STATUS_CODING, unjudgedPlan: undefined }));
      expect((await store.tasks.get(record.id)).unjudgedPlan).toBeUndefined();
    });

    it('lets one replica at a time drive a task: leases, take-over after expiry, release, cancel requests', async () => {
      const first = await TaskStore.open(db, { owner: 'replica-a' });
      const second = await TaskStore.open(db, { owner: 'replica-b' });
      const { task: record } = await first.tasks.create(task(), [], { leaseMs: 60_000 });
      expect(await second.leases.claim({ ids: [record.id] }, 60_000)).toEqual([]);
      const retrieving = change(record, { status: TaskStatus.TASK_STATUS_RETRIEVING }, { events: [logLine('r')] });
      await expect(second.transitions.save(record, retrieving)).rejects.toMatchObject({ code: ErrorCode.ABORTED, message: expect.stringContaining('no longer leased') });
      const { version } = await first.transitions.save(record, retrieving);
      const current = { ...retrieving.task, version };

      // A cancel asked of the replica that does not drive the task reaches the one that does.
      await second.leases.requestCancel(record.id, 'stop it');
      expect(await first.leases.renew([record.id], 60_000)).toEqual(new Map([[record.id, 'stop it']]));

      // The lease runs out (it is renewed for 1 ms): the other replica takes the task, and the first can no longer write.
      await first.leases.renew([record.id], 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await second.leases.claim({ ids: [record.id] }, 60_000)).toEqual([record.id]);
      expect(await first.leases.renew([record.id], 60_000)).toEqual(new Map());
      await expect(first.transitions.save(current, change(current, { status: TaskStatus.TASK_STATUS_PLANNING }, { events: [logLine('p')] }))).rejects.toMatchObject({ code: ErrorCode.ABORTED });

      // Released, any replica takes it at once; a replica restarted under the same name takes its own back.
      await second.leases.release();
      expect(await first.leases.claim({ ids: [record.id] }, 60_000)).toEqual([record.id]);
      const restarted = await TaskStore.open(db, { owner: 'replica-a' });
      expect(await restarted.leases.claim({ ids: [record.id] }, 60_000)).toEqual([record.id]);

      // A task nobody holds is taken by claim({ limit }); a finished one never is.
      const { task: unowned } = await first.tasks.create(task(), []);
      const { task: finished } = await first.tasks.create(task({ status: TaskStatus.TASK_STATUS_SUCCEEDED }), []);
      const taken = await second.leases.claim({ limit: 100 }, 60_000);
      expect(taken).toContain(unowned.id);
      expect(taken).not.toContain(finished.id);
      expect(taken).not.toContain(record.id);
    });

    it('lets only one of two writers that read the same version advance a task', async () => {
      const owner = await TaskStore.open(db, { owner: 'replica-c' });
      await owner.tasks.create(task(), [], { leaseMs: 60_000 });
      const { task: record } = await owner.tasks.create(task(), [], { leaseMs: 60_000 });
      // Two runners of one task in one owner (or two processes given one owner id) each read it...
      const one = await owner.tasks.get(record.id);
      const other = await owner.tasks.get(record.id);
      const saved = await owner.transitions.save(one, change(one, { status: TaskStatus.TASK_STATUS_RETRIEVING }, { events: [logLine('one')] }));
      // ...and the second to write is turned away instead of recording the transition twice.
      await expect(owner.transitions.save(other, change(other, { status: TaskStatus.TASK_STATUS_RETRIEVING }, { events: [logLine('other')] }))).rejects.toMatchObject({
        code: ErrorCode.ABORTED,
        message: expect.stringContaining('changed by someone else'),
      });
      // The winner goes on writing at its new version; a fresh read can too.
      const next = { ...one, status: TaskStatus.TASK_STATUS_RETRIEVING, version: saved.version };
      await owner.transitions.save(next, change(next, { status: TaskStatus.TASK_STATUS_PLANNING }));
      const fresh = await owner.tasks.get(record.id);
      expect(fresh.status).toBe(TaskStatus.TASK_STATUS_PLANNING);
      expect((await owner.events.list(record.id)).map((event) => event.payload?.$case === 'logLine' && event.payload.logLine.message)).toEqual(['one']);
    });

    it('keeps a task waiting on a gate out of the work pool until one decision moves it on', async () => {
      const owner = await TaskStore.open(db, { owner: 'replica-d' });
      const { task: record } = await owner.tasks.create(task({ approvalKinds: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT], approvalTimeoutMs: 1 }), [], { leaseMs: 60_000 });
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
      await owner.transitions.save(record, change(record, { status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL }, { gate }));
      const waiting = await owner.tasks.get(record.id);
      expect(waiting.pendingGateId).toBe(gate.gateId);
      expect(waiting.approvalKinds).toEqual([ApprovalKind.APPROVAL_KIND_FINAL_RESULT]);
      // Nobody looking for work takes it, even once its lease is gone.
      await owner.leases.release([record.id]);
      expect(await owner.leases.claim({ limit: 100 }, 60_000)).not.toContain(record.id);
      // Its 1 ms timeout has passed.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await owner.approvals.expired()).toContainEqual({ taskId: record.id, gateId: gate.gateId });
      await expect(owner.approvals.get(record.id, 'no-such-gate')).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });

      const rejected = { ...gate, decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: 'ann', comment: 'rename it', decidedAt: new Date() };
      const rejection = change(waiting, { status: TaskStatus.TASK_STATUS_PLANNING, replanReason: 'rejected by ann: rename it', pendingGateId: '' }, { decidedGate: rejected, events: [logLine('decided')] });
      const { events } = await owner.transitions.save(waiting, rejection, { lease: { lease: 'take', leaseMs: 60_000 } });
      expect(events).toHaveLength(1);
      const moved = await owner.tasks.get(record.id);
      expect(moved).toMatchObject({ status: TaskStatus.TASK_STATUS_PLANNING, replanReason: 'rejected by ann: rename it', pendingGateId: '' });
      expect(await owner.approvals.get(record.id, gate.gateId)).toMatchObject({ decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: 'ann', comment: 'rename it' });
      // A second decision on the same gate changes nothing: not the gate, not the task.
      const again = { ...moved, status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL };
      await db.query(`UPDATE orchestrator.tasks SET status = 'TASK_STATUS_AWAITING_APPROVAL' WHERE id = $1`, [record.id]);
      await expect(owner.transitions.save(again, change(again, { status: TaskStatus.TASK_STATUS_LEARNING }, { decidedGate: { ...gate, decision: ApprovalDecision.APPROVAL_DECISION_APPROVED, approver: 'bob' } }))).rejects.toMatchObject({
        code: ErrorCode.FAILED_PRECONDITION,
        message: expect.stringContaining('no longer pending'),
      });
      expect((await owner.tasks.get(record.id)).status).toBe(TaskStatus.TASK_STATUS_AWAITING_APPROVAL);
      expect(await owner.approvals.list(record.id)).toEqual([expect.objectContaining({ gateId: gate.gateId, decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: 'ann' })]);
      expect(await owner.approvals.expired()).not.toContainEqual({ taskId: record.id, gateId: gate.gateId });
    });

    it("keeps a workspace task's test command and test edits as submitted", async () => {
      const created = await store.tasks.create(task({ testCommand: ['sh', '-c', 'npm test'], testEdits: TestEdits.TEST_EDITS_ALLOWED }), []);
      const read = await store.tasks.get(created.task.id);
      expect(read.testCommand).toEqual(['sh', '-c', 'npm test']);
      expect(read.testEdits).toBe(TestEdits.TEST_EDITS_ALLOWED);
      expect((await store.tasks.get((await store.tasks.create(task(), [])).task.id)).testEdits).toBe(TestEdits.TEST_EDITS_UNSPECIFIED);
    });

    it("keeps the submit's trace context through every transition, and none for an untraced submit", async () => {
      const traceContext = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
      const { task: traced } = await store.tasks.create(task({ traceContext }), [], { leaseMs: 60_000 });
      await store.transitions.save(traced, change(traced, { status: TaskStatus.TASK_STATUS_PLANNING }));
      expect((await store.tasks.get(traced.id)).traceContext).toEqual(traceContext);
      expect(await store.tasks.get((await store.tasks.create(task(), [])).task.id)).not.toHaveProperty('traceContext');
    });

    it('returns the existing task for a repeated request id instead of a second one', async () => {
      const first = await store.tasks.create(task({ requestId: `req-${name}` }), []);
      const again = await store.tasks.create(task({ requestId: `req-${name}` }), []);
      expect(again.created).toBe(false);
      expect(again.task.id).toBe(first.task.id);
    });

    it('finds a task by a unique id prefix and explains an unknown id', async () => {
      const { task: record } = await store.tasks.create(task(), []);
      expect((await store.tasks.get(record.id.slice(0, 8))).id).toBe(record.id);
      await expect(store.tasks.get('zzzzzzzz-none')).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND, message: expect.stringContaining('ratchet history') });
    });

    it('lists newest first, filters by status and pages', async () => {
      const { task: done } = await store.tasks.create(task({ status: TaskStatus.TASK_STATUS_SUCCEEDED }), []);
      const page = await store.tasks.list({ team: 'default', statuses: [], pageSize: 2, offset: 0 });
      expect(page.tasks).toHaveLength(2);
      expect(page.more).toBe(true);
      expect(page.tasks[0]!.createdAt.getTime()).toBeGreaterThanOrEqual(page.tasks[1]!.createdAt.getTime());
      const succeeded = await store.tasks.list({ team: 'default', statuses: [TaskStatus.TASK_STATUS_SUCCEEDED], pageSize: 10, offset: 0 });
      expect(succeeded.tasks.map((found) => found.id)).toContain(done.id);
      expect(new Set(succeeded.tasks.map((found) => found.status))).toEqual(new Set([TaskStatus.TASK_STATUS_SUCCEEDED]));
    });

    it('filters by labels: only tasks carrying every one with its value', async () => {
      const { task: both } = await store.tasks.create(task({ labels: { team: 'red', bench: 'run-1' } }), []);
      const { task: red } = await store.tasks.create(task({ labels: { team: 'red' } }), []);
      await store.tasks.create(task({ labels: { team: 'blue', bench: 'run-1' } }), []);
      const ids = async (labels: Record<string, string>) => (await store.tasks.list({ team: 'default', statuses: [], labels, pageSize: 100, offset: 0 })).tasks.map((found) => found.id);
      expect(await ids({ team: 'red' })).toEqual([red.id, both.id]);
      expect(await ids({ team: 'red', bench: 'run-1' })).toEqual([both.id]);
      expect(await ids({ team: 'green' })).toEqual([]);
      expect((await ids({})).length).toBeGreaterThanOrEqual(3);
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
