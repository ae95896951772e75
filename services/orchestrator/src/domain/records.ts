import { Phase } from '@ratchet/contracts';
import type {
  ApprovalKind,
  Budget,
  ErrorDetail,
  Iteration,
  Language,
  Lesson,
  Plan,
  Reflection,
  SafetyFinding,
  SourceFile,
  StopReason,
  Task,
  TaskStatus,
  TestReport,
  Usage,
} from '@ratchet/contracts';
import { phaseOfStatus } from './phase';
import type { FailureFingerprint } from './progress';

/** A task as the orchestrator keeps it: the proto Task plus what the loop needs between phases. */
export interface TaskRecord {
  readonly id: string;
  readonly goal: string;
  readonly language: Language;
  status: TaskStatus;
  statusReason: string;
  stopReason: StopReason;
  currentIteration: number;
  replanCount: number;
  /** Why the next PLANNING is a re-plan; empty for the first plan. */
  replanReason: string;
  readonly budget: Budget;
  usage: Usage;
  readonly labels: Readonly<Record<string, string>>;
  readonly workspace: readonly SourceFile[];
  readonly acceptanceTests: readonly SourceFile[];
  /** Tests the tester wrote for the current plan; rewritten after a re-plan. */
  generatedTests: SourceFile[];
  resultFiles: SourceFile[];
  plan?: Plan;
  /** Lessons retrieved for the goal before planning. */
  lessons: Lesson[];
  readonly requestId: string;
  /** Gates that need a human before the loop goes past them (empty: none). */
  readonly approvalKinds: readonly ApprovalKind[];
  /** How long a gate waits before it is rejected automatically, ms; 0 waits forever. */
  readonly approvalTimeoutMs: number;
  /** The gate the task waits on while AWAITING_APPROVAL; empty otherwise. Read from the gates, never saved. */
  pendingGateId: string;
  readonly createdAt: Date;
  updatedAt: Date;
  startedAt?: Date;
  completedAt?: Date;
}

/** One iteration: an attempt at the code, from CODING to its test result and reflection. */
export interface IterationRecord {
  readonly taskId: string;
  readonly number: number;
  phase: Phase;
  plan?: Plan;
  files: SourceFile[];
  testReport?: TestReport;
  error?: ErrorDetail;
  safetyFindings: SafetyFinding[];
  reflection?: Reflection;
  hypothesis: string;
  retrievedLessonIds: string[];
  /** Lessons about similar errors found while reflecting. */
  reflectionLessons: Lesson[];
  /** Memory's id for this iteration's failure record. */
  failureId: string;
  fingerprint?: FailureFingerprint;
  /** Capped test output, for the reflector and `ratchet show`. */
  output: string;
  usage: Usage;
  readonly startedAt: Date;
  completedAt?: Date;
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
    phase: phaseOfStatus(record.status),
    budget: record.budget,
    usage: record.usage,
    approvalPolicy:
      record.approvalKinds.length === 0
        ? undefined
        : { required: [...record.approvalKinds], timeout: record.approvalTimeoutMs > 0 ? { seconds: Math.floor(record.approvalTimeoutMs / 1000), nanos: (record.approvalTimeoutMs % 1000) * 1e6 } : undefined },
    pendingGateId: record.pendingGateId,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    startedAt: record.startedAt,
    completedAt: record.completedAt,
    labels: { ...record.labels },
    workspace: full ? [...record.workspace] : [],
    acceptanceTests: full ? [...record.acceptanceTests] : [],
    resultFiles: full ? record.resultFiles : [],
    lessons: full ? record.lessons : [],
  };
}

/** The proto Iteration of a record. */
export function toIterationProto(record: IterationRecord): Iteration {
  const durationMs = record.completedAt === undefined ? 0 : record.completedAt.getTime() - record.startedAt.getTime();
  return {
    taskId: record.taskId,
    number: record.number,
    phase: record.phase,
    plan: record.plan,
    files: record.files,
    testReport: record.testReport,
    error: record.error,
    safetyFindings: record.safetyFindings,
    reflection: record.reflection,
    hypothesis: record.hypothesis,
    retrievedLessonIds: record.retrievedLessonIds,
    usage: record.usage,
    duration: { seconds: Math.floor(durationMs / 1000), nanos: (durationMs % 1000) * 1e6 },
    startedAt: record.startedAt,
    completedAt: record.completedAt,
    reflectionLessons: record.reflectionLessons,
  };
}

/** An iteration summarised for people and JSON output: its outcome, test counts and what was learnt. */
export function toIterationView(record: Pick<Iteration, 'number' | 'phase' | 'testReport' | 'error' | 'files' | 'safetyFindings' | 'reflection' | 'hypothesis' | 'retrievedLessonIds' | 'usage'>) {
  const report = record.testReport;
  const passed = report !== undefined && report.parsed && record.error === undefined && record.phase === Phase.PHASE_LEARNING;
  return {
    number: record.number,
    outcome: passed ? 'passed' : record.error !== undefined ? `failed (${record.error.code})` : 'in progress',
    tests: report === undefined ? '' : report.parsed ? `${report.passed}/${report.total} passed` : `no report: ${report.parseError}`,
    files: record.files.map((file) => file.path),
    error: record.error === undefined ? undefined : { code: record.error.code, message: record.error.message, signature: record.error.signature },
    safetyFindings: record.safetyFindings.map((finding) => ({ ruleId: finding.ruleId, path: finding.path, line: finding.line, message: finding.message })),
    rootCause: record.reflection?.rootCause ?? '',
    hypothesis: record.hypothesis,
    fixDirection: record.reflection?.fixDirection ?? '',
    lesson: record.reflection?.candidateLesson?.title ?? '',
    lessonsUsed: record.retrievedLessonIds,
    usage: record.usage,
  };
}
