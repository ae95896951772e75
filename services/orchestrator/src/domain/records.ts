import { durationFromMs, phaseOfStatus } from '@ratchet/agent';
import { ApprovalDecision } from '@ratchet/contracts';
import type {
  ApprovalGate,
  ApprovalKind,
  CommandDecision,
  DependencyDecision,
  DependencyInstall,
  TestEdits,
  MemoryUse,
  Budget,
  ClarifyingQuestion,
  DataFile,
  ErrorDetail,
  ProjectProfile,
  ReviewFinding,
  TaskPhases,
  TaskSpec,
  Iteration,
  Language,
  Lesson,
  Phase,
  Plan,
  Reflection,
  SafetyFinding,
  ToolStep,
  SourceFile,
  StopReason,
  StoredLesson,
  Task,
  TaskStatus,
  TestDispute,
  TestReport,
  Usage,
} from '@ratchet/contracts';
import type { FailureFingerprint } from './progress';
import { shownLabels } from './labels';

/**
 * A task as the orchestrator keeps it: the proto Task plus what the loop
 * needs between phases. Immutable: a transition makes a new record
 * (`decide`), and the store writes it only at the `version` it was read at.
 */
export interface TaskRecord {
  readonly id: string;
  readonly goal: string;
  readonly language: Language;
  readonly status: TaskStatus;
  readonly statusReason: string;
  readonly stopReason: StopReason;
  readonly currentIteration: number;
  readonly replanCount: number;
  /** Times a user resumed the task after it failed. */
  readonly resumeCount: number;
  /** Why the next PLANNING is a re-plan; empty for the first plan. */
  readonly replanReason: string;
  readonly budget: Budget;
  readonly usage: Usage;
  readonly labels: Readonly<Record<string, string>>;
  readonly workspace: readonly SourceFile[];
  /** The workspace's files that are not text: written into every sandbox of the task, never shown to a model. */
  readonly dataFiles: readonly DataFile[];
  readonly acceptanceTests: readonly SourceFile[];
  /**
   * A workspace task's tests as they ran on the original workspace, before any
   * change (run with the first plan); failures in it are pre-existing.
   */
  readonly baselineReport?: TestReport;
  /** Tests the tester wrote for the current plan; rewritten after a re-plan. */
  readonly generatedTests: readonly SourceFile[];
  readonly resultFiles: readonly SourceFile[];
  readonly plan?: Plan;
  /**
   * Set while the stored plan's packages wait for the dependency check
   * (JUDGE_PACKAGES), with the planner call's usage, which the iteration the
   * check starts counts as its own; absent otherwise.
   */
  readonly unjudgedPlan?: { readonly usage: Usage };
  /** Lessons retrieved for the goal before planning. */
  readonly lessons: readonly Lesson[];
  readonly requestId: string;
  /** Gates that need a human before the loop goes past them (empty: none). */
  readonly approvalKinds: readonly ApprovalKind[];
  /** How long a gate waits before it is rejected automatically, ms; 0 waits forever. */
  readonly approvalTimeoutMs: number;
  /** What people decided about commands the coder asked to run (command gates), oldest first. */
  readonly commandDecisions: readonly CommandDecision[];
  /** The dependency policy's decisions on the plan's packages, approvals and refusals included; ALLOWED ones are installed for the tests. */
  readonly dependencyDecisions: readonly DependencyDecision[];
  /** The workspace's own test command, program and arguments; empty runs the acceptance tests with the language's runner. */
  readonly testCommand: readonly string[];
  /** The workspace's setup command, a shell line run before coding and every test run; empty for none. */
  readonly setupCommand: string;
  /** Whether the model may edit the acceptance tests, as submitted (unspecified: the planner judges the goal). */
  readonly testEdits: TestEdits;
  /** Project key: the scope its lessons are stored in and retrieved from (with the global one); empty for global only. */
  readonly project: string;
  /** How the task uses memory, as submitted. */
  readonly memory: MemoryUse;
  /** The reprompter's spec of the goal: what the planner and the tester receive. */
  readonly spec?: TaskSpec;
  /** The reprompter's clarifying questions with their answers, oldest first; open ones have an empty `answeredBy`. */
  readonly questions: readonly ClarifyingQuestion[];
  /** When open questions stop waiting (answered by their assumptions, or the task fails, per policy); unset: they wait forever. */
  readonly answerDeadline?: Date;
  /** The project profile, resolved at submit. */
  readonly profile?: ProjectProfile;
  /** The optional phases that run for this task, resolved at submit from the request and the configured defaults. */
  readonly phases: TaskPhases;
  /** The submitter's team: only its principals see the task and act on it. */
  readonly team: string;
  /** The authenticated principal that submitted the task. */
  readonly submittedBy: string;
  /**
   * The W3C trace context (`traceparent`, `tracestate`) of the submit, the
   * parent of every phase span; absent when the submit was not traced. Set at
   * submit, never changed.
   */
  readonly traceContext?: Readonly<Record<string, string>>;
  /** The gate the task waits on while AWAITING_APPROVAL; empty otherwise. Read from the gates, never saved. */
  readonly pendingGateId: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly startedAt?: Date;
  readonly completedAt?: Date;
  /** The task's last event sequence when it was read or written; a write applies only at this version. */
  readonly version: number;
}

/** One iteration: an attempt at the code, from CODING to its test result and reflection. */
export interface IterationRecord {
  readonly taskId: string;
  readonly number: number;
  /** Derived by `decide` from the status the task enters while this is its current iteration. */
  readonly phase: Phase;
  readonly plan?: Plan;
  readonly files: readonly SourceFile[];
  readonly testReport?: TestReport;
  readonly error?: ErrorDetail;
  readonly safetyFindings: readonly SafetyFinding[];
  readonly reflection?: Reflection;
  readonly hypothesis: string;
  readonly retrievedLessonIds: readonly string[];
  /** Lessons about similar errors found while reflecting. */
  readonly reflectionLessons: readonly Lesson[];
  /** Generated tests the coder said contradict the goal, for the reflector to judge. */
  readonly testDisputes: readonly TestDispute[];
  /** The lesson memory kept from the reflection, as stored (merged into an earlier one: that one's title). */
  readonly storedLesson?: StoredLesson;
  /** The agentic coder's tool calls in this iteration's coding phase(s), in order. */
  readonly toolSteps: readonly ToolStep[];
  /** The install step of the iteration's test run, when the task has dependencies. */
  readonly dependencyInstall?: DependencyInstall;
  /** The reviewer's findings on this iteration's change. */
  readonly reviewFindings: readonly ReviewFinding[];
  /** The security audit's findings (the auditor's and the scanners'). */
  readonly auditFindings: readonly ReviewFinding[];
  /** Memory's id for this iteration's failure record. */
  readonly failureId: string;
  readonly fingerprint?: FailureFingerprint;
  /** Capped test output, for the reflector and `ratchet show`. */
  readonly output: string;
  readonly usage: Usage;
  readonly startedAt: Date;
  readonly completedAt?: Date;
}

/** A task with its iterations, oldest first: everything `decide` reads. */
export interface TaskState {
  readonly task: TaskRecord;
  readonly iterations: readonly IterationRecord[];
}

export const emptyUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 });

/** The proto Task of a record (the `full` view includes files). */
export function toTaskProto(record: TaskRecord, full: boolean): Task {
  return {
    id: record.id,
    goal: record.goal,
    language: record.language,
    status: record.status,
    statusReason: record.statusReason,
    stopReason: record.stopReason,
    currentIteration: record.currentIteration,
    completedIterations: record.currentIteration,
    replanCount: record.replanCount,
    resumeCount: record.resumeCount,
    phase: phaseOfStatus(record.status),
    budget: record.budget,
    usage: record.usage,
    approvalPolicy: record.approvalKinds.length === 0 ? undefined : { required: [...record.approvalKinds], timeout: record.approvalTimeoutMs > 0 ? durationFromMs(record.approvalTimeoutMs) : undefined },
    pendingGateId: record.pendingGateId,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    startedAt: record.startedAt,
    completedAt: record.completedAt,
    labels: shownLabels(record.labels),
    workspace: full ? [...record.workspace] : [],
    dataFiles: full ? [...record.dataFiles] : [],
    acceptanceTests: full ? [...record.acceptanceTests] : [],
    resultFiles: full ? [...record.resultFiles] : [],
    lessons: full ? [...record.lessons] : [],
    testCommand: [...record.testCommand],
    setupCommand: record.setupCommand,
    testEdits: record.testEdits,
    project: record.project,
    memory: record.memory,
    team: record.team,
    submittedBy: record.submittedBy,
    dependencyDecisions: [...record.dependencyDecisions],
    spec: record.spec,
    questions: [...record.questions],
    profile: record.profile,
    phases: record.phases,
    traceId: traceIdOf(record.traceContext),
  };
}

/** The trace id of a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`); empty when there is none. */
function traceIdOf(context: TaskRecord['traceContext']): string {
  const parts = (context?.traceparent ?? '').split('-');
  return parts.length === 4 && /^[0-9a-f]{32}$/.test(parts[1] ?? '') ? (parts[1] as string) : '';
}

/** A question nobody has answered yet (nor its assumption taken). */
/** A gate of `kind` on `task`, pending: what it asks (`text`), when, and nothing decided yet. */
export function pendingGate(task: Pick<TaskRecord, 'id'>, iteration: number, kind: ApprovalKind, text: { readonly summary: string; readonly detail: string }, gateId: string, at: Date): ApprovalGate {
  return { gateId, taskId: task.id, iteration, kind, ...text, decision: ApprovalDecision.APPROVAL_DECISION_PENDING, approver: '', comment: '', requestedAt: at, decidedAt: undefined };
}

export const isOpenQuestion = (question: ClarifyingQuestion): boolean => question.answeredBy === '';

/** The proto Iteration of a record. */
export function toIterationProto(record: IterationRecord): Iteration {
  const durationMs = record.completedAt === undefined ? 0 : record.completedAt.getTime() - record.startedAt.getTime();
  return {
    taskId: record.taskId,
    number: record.number,
    phase: record.phase,
    plan: record.plan,
    files: [...record.files],
    testReport: record.testReport,
    error: record.error,
    safetyFindings: [...record.safetyFindings],
    reflection: record.reflection,
    hypothesis: record.hypothesis,
    retrievedLessonIds: [...record.retrievedLessonIds],
    usage: record.usage,
    duration: durationFromMs(durationMs),
    startedAt: record.startedAt,
    completedAt: record.completedAt,
    reflectionLessons: [...record.reflectionLessons],
    storedLesson: record.storedLesson,
    toolSteps: [...record.toolSteps],
    ...(record.dependencyInstall === undefined ? {} : { dependencyInstall: record.dependencyInstall }),
    reviewFindings: [...record.reviewFindings],
    auditFindings: [...record.auditFindings],
  };
}

