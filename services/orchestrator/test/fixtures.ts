import { ApprovalDecision, ApprovalKind, DependencyVerdict, Language, Phase, SafetyVerdict, Severity, StopReason, type ReviewFinding, TaskStatus, TestCaseStatus, TestEdits, MemoryUse, type ApprovalGate, type TestReport } from '@ratchet/contracts';
import { InputKind, type TaskInput } from '../src/domain/inputs';
import type { LoopPolicy } from '../src/domain/policy';
import type { PhaseSettings } from '../src/runner/phases';
import type { IterationRecord, TaskRecord, TaskState } from '../src/domain/records';

/** Records and inputs for the domain's unit tests: plain data, no store, bus or clock. */

export const start = new Date('2026-11-24T12:00:00Z');
/** `seconds` after `start`. */
export const at = (seconds: number) => new Date(start.getTime() + seconds * 1000);
export const usage = (tokens: number, costUsd = 0) => ({ promptTokens: tokens, completionTokens: 0, costUsd, modelCalls: 1 });
export const noUsage = { promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 };

export const policy: LoopPolicy = {
  defaultBudget: { maxIterations: 10, maxTokens: 0, maxCostUsd: 0, maxWallTimeMs: 0 },
  maxReplans: 2,
  noProgress: { replanAfter: 2, stopAfter: 3 },
  phases: { reprompt: false, questions: true, review: false, audit: false },
  questions: { max: 3, timeoutMs: 0, onTimeout: 'assume' },
};

/** Phase runner settings for tests that call `phaseRunners` directly: short deadlines, no gates. */
export const phaseSettings: PhaseSettings = {
  defaultBudget: policy.defaultBudget,
  modelCallTimeoutMs: 1_000,
  testRunTimeoutMs: 1_000,
  serviceCallTimeoutMs: 1_000,
  lessonLimit: 5,
  lessonMinScore: 0.2,
  agentPhaseTimeoutMs: 1_000,
  approveAskedCommands: false,
  commandGates: false,
  maxQuestions: 3,
};

export const spec = {
  summary: 'A todo list kept in todo.json.',
  behaviour: 'add, list and remove items',
  inputs: 'command-line arguments',
  outputs: 'lines on stdout',
  interface: ['todo add TEXT', 'todo list'],
  edgeCases: ['an empty list prints nothing'],
  acceptanceCriteria: ['add then list shows the item'],
  assumptions: ['items are stored as JSON'],
};

export const question = { questionId: 'q1', question: 'JSON or CSV?', why: 'the file format', options: ['JSON', 'CSV'], assumption: 'JSON', answer: '', answeredBy: '', askedAt: undefined, answeredAt: undefined };

/** A review or audit finding. */
export function finding(overrides: Partial<ReviewFinding> = {}): ReviewFinding {
  return { severity: Severity.SEVERITY_HIGH, path: 'calc.py', line: 2, category: 'correctness', cwe: '', message: 'add subtracts', suggestion: 'use +', blocking: true, source: 'reviewer', ...overrides };
}

export const plan = { summary: 'calc.py with add', steps: [{ number: 1, description: 'write add', paths: ['calc.py'] }], files: [], testStrategy: 'pytest', language: Language.LANGUAGE_PYTHON, dependencies: [], appliedLessonIds: [], changesTests: false, changesTestsReason: '' };

export function task(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    id: 'task-1',
    goal: 'add two numbers',
    language: Language.LANGUAGE_PYTHON,
    status: TaskStatus.TASK_STATUS_QUEUED,
    statusReason: '',
    stopReason: StopReason.STOP_REASON_UNSPECIFIED,
    currentIteration: 0,
    replanCount: 0,
    resumeCount: 0,
    replanReason: '',
    budget: { maxIterations: 0, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined },
    usage: noUsage,
    labels: {},
    workspace: [],
    dataFiles: [],
    acceptanceTests: [],
    generatedTests: [],
    resultFiles: [],
    lessons: [],
    requestId: '',
    approvalKinds: [],
    commandDecisions: [],
    dependencyDecisions: [],
    questions: [],
    phases: { reprompt: false, questions: true, review: false, audit: false },
    testCommand: [],
    setupCommand: '',
    testEdits: TestEdits.TEST_EDITS_UNSPECIFIED,
    project: '',
    memory: MemoryUse.MEMORY_USE_UNSPECIFIED,
    team: 'default',
    submittedBy: 'local',
    approvalTimeoutMs: 0,
    pendingGateId: '',
    createdAt: start,
    updatedAt: start,
    version: 1,
    ...overrides,
  };
}

export function iteration(number: number, overrides: Partial<IterationRecord> = {}): IterationRecord {
  return {
    taskId: 'task-1',
    number,
    phase: Phase.PHASE_CODING,
    plan,
    files: [{ path: 'calc.py', content: 'def add(a, b):\n    return a - b\n' }],
    safetyFindings: [],
    reviewFindings: [],
    auditFindings: [],
    hypothesis: '',
    retrievedLessonIds: [],
    reflectionLessons: [],
    testDisputes: [],
    toolSteps: [],
    failureId: '',
    output: '',
    usage: noUsage,
    startedAt: at(number * 10),
    ...overrides,
  };
}

/** A task in `status` in its first iteration, with a plan and generated tests. */
export function stateIn(status: TaskStatus, overrides: Partial<TaskRecord> = {}, iterations: IterationRecord[] = [iteration(1)]): TaskState {
  return {
    task: task({ status, currentIteration: 1, plan, startedAt: start, generatedTests: [{ path: 'tests/test_calc.py', content: 'def test_add(): ...\n' }], ...overrides }),
    iterations,
  };
}

export function report(passed: number, total: number): TestReport {
  return {
    framework: 'pytest',
    total,
    passed,
    failed: total - passed,
    errored: 0,
    skipped: 0,
    duration: undefined,
    parsed: true,
    parseError: '',
    cases: Array.from({ length: total }, (_, index) => ({
      name: `test_${index}`,
      suite: 'tests/test_calc.py',
      file: 'tests/test_calc.py',
      status: index < passed ? TestCaseStatus.TEST_CASE_STATUS_PASSED : TestCaseStatus.TEST_CASE_STATUS_FAILED,
      duration: undefined,
      failureMessage: index < passed ? '' : 'assert -1 == 3',
      failureDetail: '',
    })),
  };
}

export function reflection(signature = 'AssertionError: assert <n> == <n>', overrides: Partial<import('@ratchet/contracts').Reflection> = {}) {
  return {
    rootCause: 'add subtracts',
    hypothesis: 'use +',
    fixDirection: 'return a + b',
    confidence: 0.9,
    replanRecommended: false,
    errorSignature: signature,
    candidateLesson: undefined,
    relevantLessonIds: [],
    disputedTests: [],
    ...overrides,
  };
}

export const pendingGate: ApprovalGate = {
  gateId: 'gate-1',
  taskId: 'task-1',
  iteration: 1,
  kind: ApprovalKind.APPROVAL_KIND_FINAL_RESULT,
  summary: 'passed',
  detail: '',
  decision: ApprovalDecision.APPROVAL_DECISION_PENDING,
  approver: 'ann',
  comment: 'rename it',
  requestedAt: at(5),
  decidedAt: at(6),
};

/** A package the change imports that the dependency policy asks a person about. */
export function askedPackage(name: string): import('@ratchet/contracts').DependencyDecision {
  return {
    dependency: { name, versionSpec: '' },
    verdict: DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL,
    reason: 'not on the allowlist: the policy asks a person',
    installSpec: '',
    declared: false,
    importedAt: ['app.py:1'],
    approvedBy: '',
    provided: false,
  };
}

const testRun = { startedAt: at(1), output: 'out', exitCode: 0, timedOut: false, oomKilled: false, jobId: 'job', runnerId: 'runner', errorMessage: '' };

/** One input of every kind, as a phase or a person would give it. */
export function sampleInput(kind: InputKind, when = at(2)): TaskInput {
  const run = { at: when, startedAt: at(1), usage: usage(10) };
  switch (kind) {
    case InputKind.START:
      return { kind, at: when };
    case InputKind.REPROMPTED:
      return { kind, ...run, spec };
    case InputKind.QUESTION_ASKED:
      return { kind, ...run, questions: [question] };
    case InputKind.ANSWERED:
      return { kind, at: when, answers: [{ questionId: 'q1', answer: 'JSON' }], answeredBy: 'ada' };
    case InputKind.LESSONS_RETRIEVED:
      return { kind, at: when, startedAt: at(1), lessons: [] };
    case InputKind.BASELINE_RAN:
      return { kind, at: when, startedAt: at(1), report: report(2, 3) };
    case InputKind.PLANNED:
      return { kind, ...run, plan };
    case InputKind.PACKAGES_JUDGED:
      return { kind, at: when, startedAt: at(1), dependencies: [], gateId: 'gate-deps' };
    case InputKind.TOOL_STEP:
      return { kind, at: when, step: { number: 1, tool: 'read_file', arguments: '{"path":"calc.py"}', result: 'calc.py (2 lines)', failed: false, decision: '', duration: undefined, thought: '' } };
    case InputKind.COMMAND_ASKED:
      return { kind, ...run, gateId: 'gate-cmd', commandLine: 'pip install requests', reason: 'installs packages (requests)', files: [{ path: 'calc.py', content: 'x = 1\n' }] };
    case InputKind.CODED:
      return { kind, ...run, files: [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }], summary: 'wrote add', disputes: [] };
    case InputKind.REPLY_INVALID:
      return { kind, at: when, startedAt: at(1), phase: Phase.PHASE_CODING, message: 'reply is not JSON', truncated: false, usage: usage(7) };
    case InputKind.SAFETY_PASSED:
      return { kind, at: when, startedAt: at(1), findings: [], undeclared: [] };
    case InputKind.SAFETY_BLOCKED:
      return { kind, at: when, startedAt: at(1), verdict: SafetyVerdict.SAFETY_VERDICT_BLOCK, findings: [{ ruleId: 'py-eval', severity: 3, path: 'calc.py', line: 2, column: 1, message: 'eval', snippet: '', remediation: '', cwe: '', confidence: 0, tool: 'ratchet', action: 0, preExisting: false }] };
    case InputKind.SAFETY_ASKED:
      return { kind, at: when, startedAt: at(1), findings: [], undeclared: [], waiting: [askedPackage('padkit')], gateId: 'gate-imports' };
    case InputKind.REVIEWED:
      return { kind, ...run, findings: [finding({ blocking: false, severity: Severity.SEVERITY_LOW })], summary: 'looks right' };
    case InputKind.AUDITED:
      return { kind, ...run, findings: [], summary: 'no findings' };
    case InputKind.TESTS_WRITTEN:
      return { kind, ...run, tests: [{ path: 'tests/test_calc.py', content: 'def test_add(): ...\n' }] };
    case InputKind.TESTS_REJECTED:
      return { kind, ...run, blocked: false, verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW, findings: [], unparseable: [{ ruleId: 'parse-error', severity: 3, path: 'tests/test_calc.py', line: 1, column: 1, message: 'syntax', snippet: '', remediation: '', cwe: '', confidence: 0, tool: 'ratchet', action: 0, preExisting: false }] };
    case InputKind.TESTS_PASSED:
      return { kind, at: when, ...testRun, report: report(3, 3), gateId: 'gate-1' };
    case InputKind.TESTS_FAILED:
      return { kind, at: when, ...testRun, exitCode: 1, report: report(1, 3) };
    case InputKind.REFLECTED:
      return { kind, ...run, reflection: reflection(), similarLessons: [], failureId: 'failure-1' };
    case InputKind.LEARNED:
      return { kind, at: when, startedAt: at(1), updatedLessons: [] };
    case InputKind.APPROVED:
      return { kind, at: when, gate: pendingGate };
    case InputKind.REJECTED:
      return { kind, at: when, gate: pendingGate };
    case InputKind.RESUMED:
      return { kind, at: when, budget: { maxIterations: 5, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined }, hint: 'try a dict' };
    case InputKind.STOPPED:
      return { kind, at: when, reason: StopReason.STOP_REASON_TOKEN_BUDGET, detail: 'used 10 of 10 tokens' };
    case InputKind.PAUSED:
      return { kind, at: when, dependency: 'memory', code: 'UNAVAILABLE', message: 'no responders on ratchet.v1.MemoryService.RetrieveLessons', waitedMs: 1_500, retryAt: new Date(when.getTime() + 2_000), until: new Date(when.getTime() + 298_500) };
    case InputKind.ERRORED:
      return { kind, at: when, code: 'UNAVAILABLE', message: 'memory is down' };
    case InputKind.CANCELLED:
      return { kind, at: when, reason: 'cancelled by the user' };
    case InputKind.HANDED_OVER:
      return { kind, at: when };
  }
}
