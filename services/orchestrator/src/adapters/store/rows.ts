import {
  approvalDecisionFromJSON,
  approvalKindFromJSON,
  type ApprovalGate,
  Budget,
  ClarifyingQuestion,
  DataFile,
  ErrorDetail,
  ProjectProfile,
  ReviewFinding,
  TaskPhases,
  TaskSpec,
  Language,
  Lesson,
  Phase,
  Plan,
  Reflection,
  SafetyFinding,
  SourceFile,
  StopReason,
  StoredLesson,
  CommandDecision,
  DependencyDecision,
  DependencyInstall,
  ToolStep,
  TestDispute,
  TestReport,
  Usage,
  languageFromJSON,
  languageToJSON,
  phaseFromJSON,
  phaseToJSON,
  stopReasonFromJSON,
  stopReasonToJSON,
  taskStatusFromJSON,
  taskStatusToJSON,
  testEditsFromJSON,
  memoryUseFromJSON,
  type TestEdits,
} from '@ratchet/contracts';
import { DEFAULT_TEAM } from '@ratchet/agent';
import type { FailureFingerprint } from '../../domain/progress';
import type { IterationRecord, TaskRecord } from '../../domain/records';

/** Row mappers between the orchestrator's records and its tables (schema `orchestrator`). */

export const schema = 'orchestrator';
export const json = (value: unknown) => JSON.stringify(value);
const files = (value: unknown): SourceFile[] => (Array.isArray(value) ? value.map((item) => SourceFile.fromJSON(item)) : []);
const findings = (value: unknown): ReviewFinding[] => (Array.isArray(value) ? value.map((item) => ReviewFinding.fromJSON(item)) : []);

export const iterationColumns = [
  'task_id',
  'number',
  'phase',
  'plan',
  'files',
  'test_report',
  'error',
  'safety_findings',
  'reflection',
  'hypothesis',
  'retrieved_lesson_ids',
  'reflection_lessons',
  'test_disputes',
  'stored_lesson',
  'tool_steps',
  'dependency_install',
  'review_findings',
  'audit_findings',
  'failure_id',
  'fingerprint',
  'output',
  'usage',
  'started_at',
  'completed_at',
];

export const iterationColumnTypes =
  'task_id text, number int, phase text, plan jsonb, files jsonb, test_report jsonb, error jsonb, safety_findings jsonb, reflection jsonb, hypothesis text, ' +
  'retrieved_lesson_ids jsonb, reflection_lessons jsonb, test_disputes jsonb, stored_lesson jsonb, tool_steps jsonb, dependency_install jsonb, review_findings jsonb, audit_findings jsonb, failure_id text, fingerprint jsonb, output text, usage jsonb, started_at timestamptz, completed_at timestamptz';

/** Sent as an iteration's files when they are the ones stored: a JSON string, never a valid file list. */
export const keepFiles = 'keep';

/**
 * An iteration as one JSON object keyed by column, for jsonb_to_recordset.
 * Without `withFiles`, files is the string `keepFiles`: the stored column is kept (see the upsert in transitions.ts).
 */
export function iterationJson(iteration: IterationRecord, withFiles = true): Record<string, unknown> {
  return {
    task_id: iteration.taskId,
    number: iteration.number,
    phase: phaseToJSON(iteration.phase),
    plan: iteration.plan === undefined ? null : Plan.toJSON(iteration.plan),
    files: withFiles ? iteration.files.map((file) => SourceFile.toJSON(file)) : keepFiles,
    test_report: iteration.testReport === undefined ? null : TestReport.toJSON(iteration.testReport),
    error: iteration.error === undefined ? null : ErrorDetail.toJSON(iteration.error),
    safety_findings: iteration.safetyFindings.map((finding) => SafetyFinding.toJSON(finding)),
    reflection: iteration.reflection === undefined ? null : Reflection.toJSON(iteration.reflection),
    hypothesis: iteration.hypothesis,
    retrieved_lesson_ids: iteration.retrievedLessonIds,
    reflection_lessons: iteration.reflectionLessons.map((lesson) => Lesson.toJSON(lesson)),
    test_disputes: iteration.testDisputes.map((dispute) => TestDispute.toJSON(dispute)),
    stored_lesson: iteration.storedLesson === undefined ? null : StoredLesson.toJSON(iteration.storedLesson),
    tool_steps: iteration.toolSteps.map((step) => ToolStep.toJSON(step)),
    dependency_install: iteration.dependencyInstall === undefined ? null : DependencyInstall.toJSON(iteration.dependencyInstall),
    review_findings: iteration.reviewFindings.map((finding) => ReviewFinding.toJSON(finding)),
    audit_findings: iteration.auditFindings.map((finding) => ReviewFinding.toJSON(finding)),
    failure_id: iteration.failureId,
    fingerprint: iteration.fingerprint ?? null,
    output: iteration.output,
    usage: Usage.toJSON(iteration.usage),
    started_at: iteration.startedAt.toISOString(),
    completed_at: iteration.completedAt?.toISOString() ?? null,
  };
}

/**
 * The task's large JSON columns that a transition may change, each with
 * the field it holds: written only when the record's field is a new value.
 */
export const heavyColumns = {
  generated_tests: (task: TaskRecord) => json(task.generatedTests.map((file) => SourceFile.toJSON(file))),
  result_files: (task: TaskRecord) => json(task.resultFiles.map((file) => SourceFile.toJSON(file))),
  plan: (task: TaskRecord) => (task.plan === undefined ? null : json(Plan.toJSON(task.plan))),
  lessons: (task: TaskRecord) => json(task.lessons.map((lesson) => Lesson.toJSON(lesson))),
  spec: (task: TaskRecord) => (task.spec === undefined ? null : json(TaskSpec.toJSON(task.spec))),
  questions: (task: TaskRecord) => json(task.questions.map((question) => ClarifyingQuestion.toJSON(question))),
  baseline_report: (task: TaskRecord) => (task.baselineReport === undefined ? null : json(TestReport.toJSON(task.baselineReport))),
  unjudged_plan: (task: TaskRecord) => (task.unjudgedPlan === undefined ? null : json({ usage: Usage.toJSON(task.unjudgedPlan.usage) })),
} as const;
export const heavyFields: Readonly<Record<keyof typeof heavyColumns, keyof TaskRecord>> = {
  generated_tests: 'generatedTests',
  result_files: 'resultFiles',
  plan: 'plan',
  lessons: 'lessons',
  spec: 'spec',
  questions: 'questions',
  baseline_report: 'baselineReport',
  unjudged_plan: 'unjudgedPlan',
};

export function taskParams(task: TaskRecord): unknown[] {
  return [
    task.id,
    task.goal,
    languageToJSON(task.language),
    taskStatusToJSON(task.status),
    task.statusReason,
    stopReasonToJSON(task.stopReason),
    task.currentIteration,
    task.replanCount,
    task.replanReason,
    json(Budget.toJSON(task.budget)),
    json(Usage.toJSON(task.usage)),
    json(task.labels),
    json(task.workspace.map((file) => SourceFile.toJSON(file))),
    json(task.acceptanceTests.map((file) => SourceFile.toJSON(file))),
    json(task.generatedTests.map((file) => SourceFile.toJSON(file))),
    json(task.resultFiles.map((file) => SourceFile.toJSON(file))),
    task.plan === undefined ? null : json(Plan.toJSON(task.plan)),
    json(task.lessons.map((lesson) => Lesson.toJSON(lesson))),
    task.requestId,
    task.createdAt,
    task.updatedAt,
    task.startedAt ?? null,
    task.completedAt ?? null,
  ];
}

export interface TaskRow {
  id: string;
  last_event_sequence: string | number;
  approval_kinds: unknown;
  command_decisions?: unknown;
  dependency_decisions?: unknown;
  spec?: unknown;
  questions?: unknown;
  answer_deadline?: Date | string | null;
  profile?: unknown;
  phases?: unknown;
  test_command?: unknown;
  test_edits?: string;
  project?: string;
  memory_use?: string;
  team?: string;
  submitted_by?: string;
  trace_context?: Record<string, string> | null;
  approval_timeout_ms: string | number;
  pending_gate_id: string | null;
  goal: string;
  language: string;
  status: string;
  status_reason: string;
  stop_reason: string;
  current_iteration: number;
  replan_count: number;
  resume_count: number;
  replan_reason: string;
  budget: unknown;
  usage: unknown;
  labels: Record<string, string>;
  workspace: unknown;
  data_files?: unknown;
  setup_command?: string | null;
  baseline_report?: unknown;
  unjudged_plan?: { usage: unknown } | null;
  acceptance_tests: unknown;
  generated_tests: unknown;
  result_files: unknown;
  plan: unknown;
  lessons: unknown;
  request_id: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  started_at: Date | string | null;
  completed_at: Date | string | null;
}

export interface IterationRow {
  task_id: string;
  number: number;
  phase: string;
  plan: unknown;
  files: unknown;
  test_report: unknown;
  error: unknown;
  safety_findings: unknown;
  reflection: unknown;
  hypothesis: string;
  retrieved_lesson_ids: string[];
  reflection_lessons: unknown;
  test_disputes: unknown;
  stored_lesson: unknown;
  tool_steps: unknown;
  dependency_install?: unknown;
  review_findings?: unknown;
  audit_findings?: unknown;
  failure_id: string;
  fingerprint: FailureFingerprint | null;
  output: string;
  usage: unknown;
  started_at: Date | string;
  completed_at: Date | string | null;
}

const date = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));
const optionalDate = (value: Date | string | null): Date | undefined => (value === null ? undefined : date(value));

export function taskFromRow(row: TaskRow): TaskRecord {
  return {
    id: row.id,
    goal: row.goal,
    language: languageFromJSON(row.language) as Language,
    status: taskStatusFromJSON(row.status),
    statusReason: row.status_reason,
    stopReason: stopReasonFromJSON(row.stop_reason) as StopReason,
    currentIteration: row.current_iteration,
    replanCount: row.replan_count,
    resumeCount: row.resume_count,
    replanReason: row.replan_reason,
    budget: Budget.fromJSON(row.budget),
    usage: Usage.fromJSON(row.usage),
    labels: row.labels,
    workspace: files(row.workspace),
    dataFiles: Array.isArray(row.data_files) ? row.data_files.map((file) => DataFile.fromJSON(file)) : [],
    ...(row.baseline_report === null || row.baseline_report === undefined ? {} : { baselineReport: TestReport.fromJSON(row.baseline_report) }),
    acceptanceTests: files(row.acceptance_tests),
    generatedTests: files(row.generated_tests),
    resultFiles: files(row.result_files),
    lessons: Array.isArray(row.lessons) ? row.lessons.map((lesson) => Lesson.fromJSON(lesson)) : [],
    requestId: row.request_id ?? '',
    approvalKinds: Array.isArray(row.approval_kinds) ? row.approval_kinds.map((kind) => approvalKindFromJSON(kind)) : [],
    commandDecisions: Array.isArray(row.command_decisions) ? row.command_decisions.map((decision) => CommandDecision.fromJSON(decision)) : [],
    dependencyDecisions: Array.isArray(row.dependency_decisions) ? row.dependency_decisions.map((decision) => DependencyDecision.fromJSON(decision)) : [],
    questions: Array.isArray(row.questions) ? row.questions.map((question) => ClarifyingQuestion.fromJSON(question)) : [],
    phases: TaskPhases.fromJSON(row.phases ?? {}),
    ...(row.spec === undefined || row.spec === null ? {} : { spec: TaskSpec.fromJSON(row.spec) }),
    ...(row.profile === undefined || row.profile === null ? {} : { profile: ProjectProfile.fromJSON(row.profile) }),
    ...(row.answer_deadline === undefined || row.answer_deadline === null ? {} : { answerDeadline: date(row.answer_deadline) }),
    approvalTimeoutMs: Number(row.approval_timeout_ms ?? 0),
    testCommand: Array.isArray(row.test_command) ? row.test_command.map(String) : [],
    setupCommand: row.setup_command ?? '',
    testEdits: testEditsFromJSON(row.test_edits ?? 'TEST_EDITS_UNSPECIFIED') as TestEdits,
    project: row.project ?? '',
    memory: memoryUseFromJSON(row.memory_use ?? 'MEMORY_USE_UNSPECIFIED'),
    team: row.team ?? DEFAULT_TEAM,
    submittedBy: row.submitted_by ?? '',
    ...(row.trace_context === undefined || row.trace_context === null ? {} : { traceContext: row.trace_context }),
    pendingGateId: row.pending_gate_id ?? '',
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
    ...(row.plan === null ? {} : { plan: Plan.fromJSON(row.plan) }),
    ...(row.unjudged_plan === null || row.unjudged_plan === undefined ? {} : { unjudgedPlan: { usage: Usage.fromJSON(row.unjudged_plan.usage) } }),
    ...(row.started_at === null ? {} : { startedAt: date(row.started_at) }),
    ...(row.completed_at === null ? {} : { completedAt: date(row.completed_at) }),
    version: Number(row.last_event_sequence),
  };
}

export interface GateRow {
  gate_id: string;
  task_id: string;
  iteration: number;
  kind: string;
  summary: string;
  detail: string;
  decision: string;
  approver: string;
  comment: string;
  requested_at: Date | string;
  decided_at: Date | string | null;
}

export function gateFromRow(row: GateRow): ApprovalGate {
  return {
    gateId: row.gate_id,
    taskId: row.task_id,
    iteration: row.iteration,
    kind: approvalKindFromJSON(row.kind),
    summary: row.summary,
    detail: row.detail,
    decision: approvalDecisionFromJSON(row.decision),
    approver: row.approver,
    comment: row.comment,
    requestedAt: date(row.requested_at),
    decidedAt: optionalDate(row.decided_at),
  };
}

export function iterationFromRow(row: IterationRow): IterationRecord {
  return {
    taskId: row.task_id,
    number: row.number,
    phase: phaseFromJSON(row.phase) as Phase,
    files: files(row.files),
    safetyFindings: Array.isArray(row.safety_findings) ? row.safety_findings.map((finding) => SafetyFinding.fromJSON(finding)) : [],
    hypothesis: row.hypothesis,
    retrievedLessonIds: row.retrieved_lesson_ids,
    reflectionLessons: Array.isArray(row.reflection_lessons) ? row.reflection_lessons.map((lesson) => Lesson.fromJSON(lesson)) : [],
    toolSteps: Array.isArray(row.tool_steps) ? row.tool_steps.map((step) => ToolStep.fromJSON(step)) : [],
    reviewFindings: findings(row.review_findings),
    auditFindings: findings(row.audit_findings),
    testDisputes: Array.isArray(row.test_disputes) ? row.test_disputes.map((dispute) => TestDispute.fromJSON(dispute)) : [],
    failureId: row.failure_id,
    output: row.output,
    usage: Usage.fromJSON(row.usage),
    startedAt: date(row.started_at),
    ...(row.plan === null ? {} : { plan: Plan.fromJSON(row.plan) }),
    ...(row.test_report === null ? {} : { testReport: TestReport.fromJSON(row.test_report) }),
    ...(row.dependency_install === null || row.dependency_install === undefined ? {} : { dependencyInstall: DependencyInstall.fromJSON(row.dependency_install) }),
    ...(row.error === null ? {} : { error: ErrorDetail.fromJSON(row.error) }),
    ...(row.reflection === null ? {} : { reflection: Reflection.fromJSON(row.reflection) }),
    ...(row.stored_lesson === null || row.stored_lesson === undefined ? {} : { storedLesson: StoredLesson.fromJSON(row.stored_lesson) }),
    ...(row.fingerprint === null ? {} : { fingerprint: row.fingerprint }),
    ...(row.completed_at === null ? {} : { completedAt: date(row.completed_at) }),
  };
}
