// The JSON the gateway sends: the contract's messages as the services'
// generated `toJSON` writes them. The types are generated from the same protos
// (buf.gen.yaml's second ts-proto run, into ./gen; never edited by hand):
// fields at their default value are left out, so every field is optional;
// enums are their names (TASK_STATUS_SUCCEEDED), 64-bit counts are numbers,
// times ISO strings, durations {seconds, nanos}, a oneof one optional key per
// case. services/web/test/browser-types.spec.ts checks this against the real
// `toJSON`.
import type { Duration as DurationMessage } from './gen/google/protobuf/duration';
import type { Budget as BudgetMessage, Dependency as DependencyMessage, SourceFile as SourceFileMessage, Usage as UsageMessage } from './gen/ratchet/v1/common';
import type { TaskEvent as TaskEventMessage } from './gen/ratchet/v1/events';
import type {
  Lesson as LessonMessage,
  LessonEvidence as LessonEvidenceMessage,
  LessonOutcomeStats as LessonOutcomeStatsMessage,
  ListLessonsResponse,
} from './gen/ratchet/v1/memory';
import type { GetTaskResponse, ListTasksResponse } from './gen/ratchet/v1/orchestrator';
import type { DependencyDecision as DependencyDecisionMessage, SafetyFinding as SafetyFindingMessage } from './gen/ratchet/v1/safety';
import type { TestCase as TestCaseMessage, TestReport as TestReportMessage } from './gen/ratchet/v1/sandbox';
import type {
  ApprovalGate as ApprovalGateMessage,
  ClarifyingQuestion as ClarifyingQuestionMessage,
  Iteration as IterationMessage,
  Plan as PlanMessage,
  ProjectProfile as ProjectProfileMessage,
  Reflection as ReflectionMessage,
  ReviewFinding as ReviewFindingMessage,
  Task as TaskMessage,
  TaskSpec as TaskSpecMessage,
  ToolStep as ToolStepMessage,
} from './gen/ratchet/v1/task';

/**
 * A generated message type as JSON. The one difference ts-proto cannot
 * generate: `bytes` fields are Uint8Array in its types but base64 strings in
 * the JSON `toJSON` writes.
 */
export type Json<T> = T extends Uint8Array
  ? string
  : T extends readonly (infer Item)[]
    ? readonly Json<Item>[]
    : T extends object
      ? { readonly [Key in keyof T]: Json<T[Key]> }
      : T;

export type Usage = Json<UsageMessage>;
export type Duration = Json<DurationMessage>;
export type SourceFile = Json<SourceFileMessage>;
export type ApprovalGate = Json<ApprovalGateMessage>;
export type ClarifyingQuestion = Json<ClarifyingQuestionMessage>;
export type ProjectProfile = Json<ProjectProfileMessage>;
export type TaskSpec = Json<TaskSpecMessage>;
export type Budget = Json<BudgetMessage>;
export type Dependency = Json<DependencyMessage>;
export type DependencyDecision = Json<DependencyDecisionMessage>;
export type Task = Json<TaskMessage>;
export type TestCase = Json<TestCaseMessage>;
export type TestReport = Json<TestReportMessage>;
export type Reflection = Json<ReflectionMessage>;
export type ReviewFinding = Json<ReviewFindingMessage>;
export type SafetyFinding = Json<SafetyFindingMessage>;
export type ToolStep = Json<ToolStepMessage>;
export type Plan = Json<PlanMessage>;
export type Iteration = Json<IterationMessage>;
export type TaskEvent = Json<TaskEventMessage>;
export type LessonEvidence = Json<LessonEvidenceMessage>;
export type LessonStats = Json<LessonOutcomeStatsMessage>;
export type Lesson = Json<LessonMessage>;

/** GET /api/tasks: one page of tasks. */
export type TaskPage = Json<ListTasksResponse>;

/** GET /api/lessons: one page of lessons. */
export type LessonPage = Json<ListLessonsResponse>;

/** GET /api/tasks/:id: the full view, and the links the gateway adds (not part of the contract). */
export type TaskDetail = Json<GetTaskResponse> & { readonly links?: { readonly trace?: string } };

/** Every failed request's body (the gateway's own, not a contract message). */
export interface ErrorBody {
  readonly error?: { readonly code?: string; readonly message?: string };
}
