import type { ApprovalGate, Budget, ClarifyingQuestion, DependencyDecision, DependencyInstall, Phase, Plan, Reflection, ReviewFinding, SafetyFinding, SafetyVerdict, ScoredLesson, SourceFile, StopReason, TestDispute, TestReport, ToolStep, TaskSpec, Usage } from '@ratchet/contracts';

/**
 * Everything that can change a task's status, as data: what a phase found
 * out, what a person decided, and what the scheduler saw. `decide` maps
 * (status, input) to the next status through the transition table.
 */
export const InputKind = {
  START: 'start',
  REPROMPTED: 'reprompted',
  QUESTION_ASKED: 'question-asked',
  ANSWERED: 'answered',
  LESSONS_RETRIEVED: 'lessons-retrieved',
  /** The project's tests ran on the workspace as sent (see `needsBaseline`). */
  BASELINE_RAN: 'baseline-ran',
  PLANNED: 'planned',
  /** The dependency check's answer on the packages a stored plan declares (see `TaskRecord.unjudgedPlan`). */
  PACKAGES_JUDGED: 'packages-judged',
  CODED: 'coded',
  /** One tool call of the agentic coder, while CODING: recorded on the iteration, no status change. */
  TOOL_STEP: 'tool-step',
  /** The coder stopped at a command the policy asks a person about: a command gate. */
  COMMAND_ASKED: 'command-asked',
  REPLY_INVALID: 'reply-invalid',
  SAFETY_PASSED: 'safety-passed',
  SAFETY_BLOCKED: 'safety-blocked',
  /** The change imports packages the dependency policy asks a person about (the check's REQUIRE_APPROVAL): a SAFETY_OVERRIDE gate. */
  SAFETY_ASKED: 'safety-asked',
  REVIEWED: 'reviewed',
  AUDITED: 'audited',
  TESTS_WRITTEN: 'tests-written',
  TESTS_REJECTED: 'tests-rejected',
  TESTS_PASSED: 'tests-passed',
  TESTS_FAILED: 'tests-failed',
  REFLECTED: 'reflected',
  LEARNED: 'learned',
  APPROVED: 'approved',
  REJECTED: 'rejected',
  RESUMED: 'resumed',
  STOPPED: 'stopped',
  /**
   * A phase could not reach a service or the database (a retryable failure:
   * no responders, no free connection): it waits and runs again. Shown as an
   * event; the status stays.
   */
  PAUSED: 'paused',
  ERRORED: 'errored',
  CANCELLED: 'cancelled',
  HANDED_OVER: 'handed-over',
} as const;
export type InputKind = (typeof InputKind)[keyof typeof InputKind];

/** When the input happened; every timestamp `decide` writes comes from here, never from a clock. */
interface At {
  readonly at: Date;
}

/** A phase that ran: when it began and what its model calls used. */
interface PhaseRun extends At {
  readonly startedAt: Date;
  readonly usage: Usage;
}

/** What the sandbox said about a test run. */
export interface TestRun extends At {
  readonly startedAt: Date;
  readonly report?: TestReport;
  /** Capped stdout and stderr. */
  readonly output: string;
  readonly exitCode: number;
  readonly timedOut: boolean;
  readonly oomKilled: boolean;
  readonly jobId: string;
  readonly runnerId: string;
  /** The runner's error message, if the run itself failed. */
  readonly errorMessage: string;
  /** The install step of the task's dependencies, when it has some. */
  readonly install?: DependencyInstall;
  /** The code check's findings with Bandit's scan in the test job added; they replace the safety check's. Unset: no scan ran there. */
  readonly safetyFindings?: readonly SafetyFinding[];
}

export type TaskInput =
  | ({ readonly kind: typeof InputKind.START } & At)
  | ({ readonly kind: typeof InputKind.REPROMPTED; readonly spec: TaskSpec } & PhaseRun)
  | ({
      readonly kind: typeof InputKind.QUESTION_ASKED;
      /** New questions as the reprompter asked them: an id may be empty or taken (decide numbers those) and there may be more than the policy allows (decide keeps the first). */
      readonly questions: readonly ClarifyingQuestion[];
    } & PhaseRun)
  | ({
      readonly kind: typeof InputKind.ANSWERED;
      /** Answers by question id; an empty answer takes the question's assumption. */
      readonly answers: readonly { readonly questionId: string; readonly answer: string }[];
      /** The principal who answered, or `assumption` when the questions' time ran out. */
      readonly answeredBy: string;
    } & At)
  | ({ readonly kind: typeof InputKind.LESSONS_RETRIEVED; readonly startedAt: Date; readonly lessons: readonly ScoredLesson[] } & At)
  | ({
      readonly kind: typeof InputKind.BASELINE_RAN;
      readonly startedAt: Date;
      /** The run's report; unparsed when the run gave none (kept all the same: the baseline ran, and counts nothing). */
      readonly report: TestReport;
    } & At)
  | ({
      readonly kind: typeof InputKind.PLANNED;
      readonly plan: Plan;
      /** The planner's read-only lookups before it planned, shown as events (absent in inputs recorded before they existed). */
      readonly lookups?: readonly ToolStep[];
      /** The project's tests run on the original workspace, from inputs recorded when the plan ran them; BASELINE_RAN brings it now. */
      readonly baseline?: TestReport;
    } & PhaseRun)
  | ({
      readonly kind: typeof InputKind.PACKAGES_JUDGED;
      readonly startedAt: Date;
      /** The dependency policy's answer for each package the stored plan declares. */
      readonly dependencies: readonly DependencyDecision[];
      /** Id of the DEPENDENCY_INSTALL gate, should a package need a person's approval. */
      readonly gateId: string;
    } & At)
  | ({ readonly kind: typeof InputKind.TOOL_STEP; readonly step: ToolStep } & At)
  | ({ readonly kind: typeof InputKind.COMMAND_ASKED; readonly gateId: string; readonly commandLine: string; readonly reason: string; /** The change so far, to go on from. */ readonly files: readonly SourceFile[] } & PhaseRun)
  | ({ readonly kind: typeof InputKind.CODED; readonly files: readonly SourceFile[]; readonly summary: string; /** Tests the coder says contradict the goal. */ readonly disputes: readonly TestDispute[] } & PhaseRun)
  | ({
      readonly kind: typeof InputKind.REPLY_INVALID;
      readonly phase: Phase;
      readonly message: string;
      /** The reply stopped at the token limit. */
      readonly truncated: boolean;
      /** What the rejected replies and their repair round used. */
      readonly usage: Usage;
      readonly startedAt: Date;
    } & At)
  | ({
      readonly kind: typeof InputKind.SAFETY_PASSED;
      readonly startedAt: Date;
      readonly findings: readonly SafetyFinding[];
      /** Packages the code imports without the plan declaring them, which the policy allows: they are installed too. */
      readonly undeclared: readonly DependencyDecision[];
    } & At)
  | ({
      readonly kind: typeof InputKind.SAFETY_BLOCKED;
      readonly startedAt: Date;
      readonly verdict: SafetyVerdict;
      readonly findings: readonly SafetyFinding[];
      /** The phase that found it: the safety check, or testing (Bandit's scan in the test job). Unset: the safety check. */
      readonly phase?: Phase;
    } & At)
  | ({
      readonly kind: typeof InputKind.SAFETY_ASKED;
      readonly startedAt: Date;
      readonly findings: readonly SafetyFinding[];
      /** Undeclared imports the policy allows, installed too once the gate is approved. */
      readonly undeclared: readonly DependencyDecision[];
      /** The imported packages that wait for a person (verdict NEEDS_APPROVAL). */
      readonly waiting: readonly DependencyDecision[];
      readonly gateId: string;
    } & At)
  | ({ readonly kind: typeof InputKind.REVIEWED; readonly findings: readonly ReviewFinding[]; readonly summary: string } & PhaseRun)
  | ({ readonly kind: typeof InputKind.AUDITED; /** The auditor's findings and the scanners', combined. */ readonly findings: readonly ReviewFinding[]; readonly summary: string } & PhaseRun)
  | ({ readonly kind: typeof InputKind.TESTS_WRITTEN; readonly tests: readonly SourceFile[] } & PhaseRun)
  | ({
      readonly kind: typeof InputKind.TESTS_REJECTED;
      /** Blocked by the safety check (otherwise: they do not parse). */
      readonly blocked: boolean;
      readonly verdict: SafetyVerdict;
      readonly findings: readonly SafetyFinding[];
      /** The findings that say a file does not parse. */
      readonly unparseable: readonly SafetyFinding[];
    } & PhaseRun)
  | ({ readonly kind: typeof InputKind.TESTS_PASSED; readonly gateId: string } & TestRun)
  | ({ readonly kind: typeof InputKind.TESTS_FAILED } & TestRun)
  | ({
      readonly kind: typeof InputKind.REFLECTED;
      readonly reflection: Reflection;
      /** Lessons about similar failures found before reflecting. */
      readonly similarLessons: readonly ScoredLesson[];
      /** Memory's id for the failure record. */
      readonly failureId: string;
      /** The lesson memory stored or strengthened from the reflection, if any. */
      readonly storedLesson?: { readonly id: string; readonly title: string; readonly created: boolean };
    } & PhaseRun)
  | ({ readonly kind: typeof InputKind.LEARNED; readonly startedAt: Date; readonly updatedLessons: readonly { readonly id: string; readonly title: string }[] } & At)
  | ({ readonly kind: typeof InputKind.APPROVED; readonly gate: ApprovalGate } & At)
  | ({ readonly kind: typeof InputKind.REJECTED; readonly gate: ApprovalGate } & At)
  | ({ readonly kind: typeof InputKind.RESUMED; readonly budget: Budget; readonly hint: string } & At)
  | ({ readonly kind: typeof InputKind.STOPPED; readonly reason: StopReason; readonly detail: string } & At)
  | ({
      readonly kind: typeof InputKind.PAUSED;
      /** What did not answer: a service's name (`memory`), `database`, or `''` when not known. */
      readonly dependency: string;
      /** The failure's error code (`UNAVAILABLE`). */
      readonly code: string;
      readonly message: string;
      /** How long the phase has waited for it so far, ms. */
      readonly waitedMs: number;
      /** When the phase runs again. */
      readonly retryAt: Date;
      /** When the task stops waiting: the phase's wait limit, or the end of its wall-time budget if that comes first. */
      readonly until: Date;
    } & At)
  | ({ readonly kind: typeof InputKind.ERRORED; readonly code: string; readonly message: string; /** What the failed phase's model calls used, if any. */ readonly usage?: Usage } & At)
  | ({ readonly kind: typeof InputKind.CANCELLED; readonly reason: string } & At)
  | ({ readonly kind: typeof InputKind.HANDED_OVER } & At);

/** The input of one kind. */
export type InputOf<K extends InputKind> = Extract<TaskInput, { kind: K }>;
