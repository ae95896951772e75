import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InProcessTransport } from '@ratchet/bus';
import { ApprovalDecision, ApprovalKind, TaskStatus, type TaskEvent } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import ts from 'typescript';
import { agentClients, createOrchestratorService, loopSettingsOf, orchestratorConfigSection, TaskStore, type OrchestratorService } from '../src';
import { iteration, task } from './fixtures';

// One write path: every change to a task's state goes through the task
// runner (`TaskRunner.apply` for a run's phases, `TaskRunner.commit` for a
// person's approval, answer or resume), which redacts, decides on the full
// state and saves at the version read.

const sourceRoot = path.join(__dirname, '..', 'src');
/** The only modules that may touch the store's transition writer: the runner, and the store that defines it. */
const writers = new Set(['runner/task-runner.ts', 'adapters/store/index.ts', 'adapters/store/transitions.ts']);

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [full] : [];
  });
}

/** Every place in `file` that reaches a `transitions` member (`x.transitions`, `x['transitions']`, `{ transitions }`) or names the writer class. */
function transitionUses(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const uses: string[] = [];
  const at = (node: ts.Node) => `${path.relative(sourceRoot, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const visit = (node: ts.Node) => {
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'transitions') uses.push(at(node));
    if (ts.isElementAccessExpression(node) && ts.isStringLiteralLike(node.argumentExpression) && node.argumentExpression.text === 'transitions') uses.push(at(node));
    if (ts.isBindingElement(node) && ((node.propertyName !== undefined && ts.isIdentifier(node.propertyName) && node.propertyName.text === 'transitions') || (node.propertyName === undefined && ts.isIdentifier(node.name) && node.name.text === 'transitions'))) uses.push(at(node));
    if (ts.isIdentifier(node) && node.text === 'TransitionWriter') uses.push(at(node));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}

describe('the write path', () => {
  it('has one writer: no module but the task runner reaches the store’s transition writer', () => {
    const files = sourceFiles(sourceRoot);
    expect(files.length).toBeGreaterThan(20);
    const outside = files.filter((file) => !writers.has(path.relative(sourceRoot, file).split(path.sep).join('/'))).flatMap(transitionUses);
    expect(outside).toEqual([]);
    // The check itself sees a use: the runner has one.
    expect(transitionUses(path.join(sourceRoot, 'runner', 'task-runner.ts')).length).toBeGreaterThan(0);
  });
});

describe('a person’s input, stored through the runner', () => {
  let db: Database;
  let store: TaskStore;
  let orchestrator: OrchestratorService;
  const published: TaskEvent[] = [];
  // Shaped like a GitHub token, so the built-in redaction rules know it.
  const secret = `ghp_${'a1B2c3D4e5'.repeat(3)}a1B2c3`;
  // A local call (embedded mode's): no principal, so the local user.
  const call = () => ({ requestId: 'r', deadline: Date.now() + 5_000, signal: new AbortController().signal, headers: {} });

  beforeAll(async () => {
    db = await openPglite();
    store = await TaskStore.open(db);
    orchestrator = await createOrchestratorService({
      db,
      clients: agentClients(new InProcessTransport(), 1_000),
      publish: (events) => {
        published.push(...events);
        return Promise.resolve();
      },
      settings: loopSettingsOf(orchestratorConfigSection.parse({}), 60),
      // No slots: nothing runs, so what is stored is what the handlers wrote.
      maxConcurrentTasks: 0,
    });
  });
  afterAll(async () => {
    await orchestrator?.close();
    await db?.close();
  });

  it('redacts an approver’s comment and decides with the task’s iterations as stored', async () => {
    const { task: record } = await store.tasks.create(task({ id: 'gated', approvalKinds: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT] }), [], { leaseMs: 60_000 });
    const gate = { gateId: 'gate-1', taskId: record.id, iteration: 1, kind: ApprovalKind.APPROVAL_KIND_FINAL_RESULT, summary: 'tests passed', detail: '', decision: ApprovalDecision.APPROVAL_DECISION_PENDING, approver: '', comment: '', requestedAt: new Date(), decidedAt: undefined };
    await store.transitions.save(record, { task: { ...record, status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL, currentIteration: 1 }, iterations: [iteration(1, { taskId: record.id })], events: [], gate, changed: true });
    await store.leases.release([record.id]);

    const response = await orchestrator.implementation.approve({ taskId: record.id, gateId: 'gate-1', decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: '', comment: `token ${secret} leaked in the log` }, call());
    expect(response.gate?.comment).not.toContain(secret);
    expect((await store.approvals.get(record.id, 'gate-1')).comment).not.toContain(secret);
    const stored = await store.tasks.get(record.id);
    // Rejected: back to planning with the comment as the reason, in the stored task and every event, never the secret.
    expect(stored.status).toBe(TaskStatus.TASK_STATUS_PLANNING);
    expect(JSON.stringify(stored)).not.toContain(secret);
    expect(JSON.stringify(await store.events.list(record.id))).not.toContain(secret);
    expect(JSON.stringify(published)).not.toContain(secret);
    expect(JSON.stringify(published)).toContain('leaked in the log');
    // The iteration the decision was made on is still there, unchanged.
    expect((await store.iterations.list(record.id)).map((stored) => stored.number)).toEqual([1]);
  });

  it('redacts an answer to a clarifying question', async () => {
    const { task: record } = await store.tasks.create(task({ id: 'asking' }), [], { leaseMs: 60_000 });
    const question = { questionId: 'q1', question: 'Which API key should the client use?', why: 'the goal names none', options: [], assumption: 'one from the environment', answer: '', answeredBy: '', answeredAt: undefined };
    await store.transitions.save(record, { task: { ...record, status: TaskStatus.TASK_STATUS_AWAITING_ANSWER, questions: [question] }, iterations: [], events: [], changed: true });
    await store.leases.release([record.id]);

    const response = await orchestrator.implementation.answer({ taskId: record.id, answers: [{ questionId: 'q1', answer: `use ${secret}` }] }, call());
    expect(response.task?.status).toBe(TaskStatus.TASK_STATUS_REPROMPTING);
    const stored = await store.tasks.get(record.id);
    expect(stored.questions[0]?.answer).toMatch(/^use /);
    expect(stored.questions[0]?.answer).not.toContain(secret);
    expect(JSON.stringify(await store.events.list(record.id))).not.toContain(secret);
  });
});
