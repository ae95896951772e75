import { describe, expect, it } from '@jest/globals';
import { Task as TaskMessage, TaskEvent as TaskEventMessage } from '@ratchet/contracts';
import type { Task, TaskEvent } from '../app/src/types';

// The dashboard's types are generated from the protos (buf.gen.yaml's second
// ts-proto run) to have the shape of what the gateway sends: the services'
// generated `toJSON`. The two generators take different options, so this
// checks that they agree. Each sample is typed with the browser's type, with
// every field required (so the compiler, in the typecheck target, fails when a
// field is missing or has another type), and the real `fromJSON`/`toJSON` must
// give it back unchanged: same keys, same value types (enum names, ISO times,
// {seconds, nanos} durations, base64 bytes, numbers for 64-bit integers).

/** `T` with every field, at every depth, present. */
type Complete<T> = T extends readonly (infer Item)[]
  ? readonly Complete<Item>[]
  : T extends object
    ? { readonly [Key in keyof T]-?: Complete<Exclude<T[Key], undefined>> }
    : T;

const duration = { seconds: 3, nanos: 500_000_000 };
const usage = { promptTokens: 1200, completionTokens: 300, costUsd: 0.0125, modelCalls: 2 };
const question = {
  questionId: 'q1',
  question: 'Which format?',
  why: 'The goal does not say.',
  options: ['csv', 'json'],
  assumption: 'csv',
  answer: 'json',
  answeredBy: 'ada',
  askedAt: '2026-01-02T03:04:05.000Z',
  answeredAt: '2026-01-02T03:05:00.000Z',
};
const toolStep = { number: 1, tool: 'write_file', arguments: '{"path":"todo.py"}', result: 'ok', failed: true, decision: 'retry', duration, thought: 'write the CLI' };

const task: Complete<Task> = {
  id: 'task-1',
  goal: 'a TODO CLI',
  language: 'LANGUAGE_PYTHON',
  status: 'TASK_STATUS_TESTING',
  statusReason: 'running tests',
  stopReason: 'STOP_REASON_MAX_ITERATIONS',
  currentIteration: 2,
  completedIterations: 1,
  replanCount: 1,
  phase: 'PHASE_CODING',
  budget: { maxIterations: 5, maxTokens: 9_007_199_254_740_991, maxCostUsd: 2.5, maxWallTime: { seconds: 600, nanos: 1 } },
  usage,
  approvalPolicy: { required: ['APPROVAL_KIND_DEPENDENCY_INSTALL'], timeout: duration },
  pendingGateId: 'gate-1',
  createdAt: '2026-01-02T03:04:05.000Z',
  updatedAt: '2026-01-02T03:04:06.000Z',
  startedAt: '2026-01-02T03:04:07.000Z',
  completedAt: '2026-01-02T03:04:08.000Z',
  labels: { team: 'core', ticket: 'RAT-1' },
  workspace: [{ path: 'todo.py', content: 'print("hi")\n' }],
  acceptanceTests: [{ path: 'test_todo.py', content: 'def test(): pass\n' }],
  resultFiles: [{ path: 'todo.py', content: 'print("done")\n' }],
  lessons: [
    {
      id: 'lesson-1',
      title: 'Create the file first',
      body: 'Open with mode "a".',
      errorSignature: 'FileNotFoundError',
      tags: ['io'],
      language: 'LANGUAGE_PYTHON',
      evidence: [{ taskId: 'task-0', iteration: 3, failureSummary: 'missing file', fixSummary: 'created it', recordedAt: '2026-01-01T00:00:00.000Z' }],
      stats: {
        timesRetrieved: 4,
        timesHelped: 3,
        timesNotHelped: 1,
        lastRetrievedAt: '2026-01-01T01:00:00.000Z',
        timesApplied: 2,
        appliedSucceeded: 2,
        appliedMeanIterations: 1.5,
        comparableTasks: 6,
        comparableSucceeded: 3,
        comparableMeanIterations: 2.5,
        lastHelpedAt: '2026-01-01T02:00:00.000Z',
      },
      createdAt: '2025-12-31T00:00:00.000Z',
      updatedAt: '2026-01-01T03:00:00.000Z',
      kind: 'LESSON_KIND_FAILURE',
      status: 'LESSON_STATUS_PROMOTED',
      scope: 'project:todo',
      embedder: 'hash-v1',
      weight: 0.75,
      standing: ['helped 3 of 4'],
    },
  ],
  resumeCount: 1,
  testCommand: ['pytest', '-q'],
  testEdits: 'TEST_EDITS_PROTECTED',
  project: 'todo',
  memory: 'MEMORY_USE_PROJECT_ONLY',
  team: 'core',
  submittedBy: 'ada',
  dependencyDecisions: [
    {
      dependency: { name: 'click', versionSpec: '>=8' },
      verdict: 'DEPENDENCY_VERDICT_ALLOWED',
      reason: 'on the allow list',
      installSpec: 'click>=8',
      declared: true,
      importedAt: ['todo.py:1'],
      approvedBy: 'ada',
      provided: true,
    },
  ],
  spec: {
    summary: 'a CLI',
    behaviour: 'adds and lists items',
    inputs: 'argv',
    outputs: 'stdout',
    interface: ['todo add ITEM'],
    edgeCases: ['empty list'],
    acceptanceCriteria: ['lists what was added'],
    assumptions: ['one user'],
  },
  questions: [question],
  profile: {
    name: 'python-cli',
    description: 'a small Python CLI',
    language: 'LANGUAGE_PYTHON',
    layout: [{ path: 'main.py', purpose: 'entry point', content: 'import sys\n' }],
    testStyle: 'pytest',
    dependencies: [{ name: 'pytest', versionSpec: '8' }],
    prompt: 'keep it small',
  },
  phases: { reprompt: true, questions: true, review: true, audit: true },
  traceId: '0af7651916cd43dd8448eb211c80319c',
  // bytes: base64 in JSON ("hello").
  dataFiles: [{ path: 'data/input.bin', content: 'aGVsbG8=' }],
  setupCommand: 'pip install -e .',
};

/** One event per kind of payload the timeline reads, each payload complete. */
const events: readonly TaskEvent[] = [
  { taskId: 'task-1', sequence: 1, time: '2026-01-02T03:04:05.000Z', iteration: 1, taskSubmitted: { task } },
  { sequence: 2, taskStatusChanged: { fromStatus: 'TASK_STATUS_QUEUED', toStatus: 'TASK_STATUS_TESTING', reason: 'planned' } satisfies Complete<TaskEvent['taskStatusChanged']> },
  {
    sequence: 3,
    phaseCompleted: {
      phase: 'PHASE_CODING',
      duration,
      usage,
      summary: 'wrote 2 files',
      error: { code: 'MODEL_TIMEOUT', message: 'the model did not answer', retryable: true, signature: 'timeout', detail: 'after 60 s' },
    } satisfies Complete<TaskEvent['phaseCompleted']>,
  },
  {
    sequence: 4,
    testRunCompleted: {
      report: {
        framework: 'pytest',
        total: 2,
        passed: 1,
        failed: 1,
        errored: 1,
        skipped: 1,
        duration,
        cases: [{ name: 'test_add', suite: 'test_todo', file: 'test_todo.py', status: 'TEST_CASE_STATUS_FAILED', duration, failureMessage: 'assert 1 == 2', failureDetail: 'Traceback...' }],
        parsed: true,
        parseError: 'line 3',
      },
      exitCode: 1,
      timedOut: true,
      oomKilled: true,
      jobId: 'job-1',
      runnerId: 'runner-1',
    } satisfies Complete<TaskEvent['testRunCompleted']>,
  },
  {
    sequence: 5,
    approvalRequested: {
      gate: {
        gateId: 'gate-1',
        taskId: 'task-1',
        iteration: 2,
        kind: 'APPROVAL_KIND_DEPENDENCY_INSTALL',
        summary: 'install click',
        detail: 'click>=8',
        decision: 'APPROVAL_DECISION_APPROVED',
        approver: 'ada',
        comment: 'fine',
        requestedAt: '2026-01-02T03:04:05.000Z',
        decidedAt: '2026-01-02T03:04:09.000Z',
      },
    } satisfies Complete<TaskEvent['approvalRequested']>,
  },
  { sequence: 6, lessonsRetrieved: { lessons: [{ lessonId: 'lesson-1', title: 'Create the file first', score: 0.5 }], phase: 'PHASE_CODING' } satisfies Complete<TaskEvent['lessonsRetrieved']> },
  {
    sequence: 7,
    taskCompleted: { status: 'TASK_STATUS_FAILED', reason: 'STOP_REASON_NO_PROGRESS', reasonDetail: 'same failure twice', usage, iterations: 3, duration } satisfies Complete<TaskEvent['taskCompleted']>,
  },
  { sequence: 8, toolCalled: { step: toolStep, phase: 'PHASE_CODING' } satisfies Complete<TaskEvent['toolCalled']> },
  { sequence: 9, questionsAsked: { questions: [question] } satisfies Complete<TaskEvent['questionsAsked']> },
];

describe("the dashboard's generated types", () => {
  it('have the shape Task.toJSON writes, every field of a task included', () => {
    expect(TaskMessage.toJSON(TaskMessage.fromJSON(task))).toEqual(task);
  });

  it('have the shape TaskEvent.toJSON writes, for each kind of event payload', () => {
    for (const event of events) expect(TaskEventMessage.toJSON(TaskEventMessage.fromJSON(event))).toEqual(event);
  });
});
