// The JSON the gateway sends: the contract's messages as their generated
// `toJSON` writes them. Fields at their default value are left out, so every
// field is optional; enums are their names (TASK_STATUS_SUCCEEDED), 64-bit
// counts are numbers, times ISO strings, durations {seconds, nanos}.

export interface Usage {
  readonly promptTokens?: number;
  readonly completionTokens?: number;
  readonly costUsd?: number;
  readonly modelCalls?: number;
}

export interface Duration {
  readonly seconds?: number;
  readonly nanos?: number;
}

export interface SourceFile {
  readonly path?: string;
  readonly content?: string;
}

export interface ApprovalGate {
  readonly gateId?: string;
  readonly taskId?: string;
  readonly iteration?: number;
  readonly kind?: string;
  readonly summary?: string;
  readonly detail?: string;
  readonly decision?: string;
  readonly approver?: string;
  readonly comment?: string;
  readonly requestedAt?: string;
  readonly decidedAt?: string;
}

export interface ClarifyingQuestion {
  readonly questionId?: string;
  readonly question?: string;
  readonly why?: string;
  readonly options?: readonly string[];
  readonly assumption?: string;
  readonly answer?: string;
  readonly answeredBy?: string;
  readonly askedAt?: string;
  readonly answeredAt?: string;
}

export interface ProjectProfile {
  readonly name?: string;
  readonly description?: string;
  readonly language?: string;
}

export interface TaskSpec {
  readonly summary?: string;
  readonly behaviour?: string;
  readonly inputs?: string;
  readonly outputs?: string;
  readonly interface?: readonly string[];
  readonly edgeCases?: readonly string[];
  readonly acceptanceCriteria?: readonly string[];
  readonly assumptions?: readonly string[];
}

export interface Budget {
  readonly maxIterations?: number;
  readonly maxTokens?: number;
  readonly maxCostUsd?: number;
}

export interface Dependency {
  readonly name?: string;
  readonly versionSpec?: string;
}

export interface DependencyDecision {
  readonly dependency?: Dependency;
  readonly verdict?: string;
  readonly reason?: string;
  readonly installSpec?: string;
}

export interface Task {
  readonly id?: string;
  readonly goal?: string;
  readonly language?: string;
  readonly status?: string;
  readonly statusReason?: string;
  readonly stopReason?: string;
  readonly currentIteration?: number;
  readonly completedIterations?: number;
  readonly replanCount?: number;
  readonly phase?: string;
  readonly budget?: Budget;
  readonly usage?: Usage;
  readonly pendingGateId?: string;
  readonly createdAt?: string;
  readonly updatedAt?: string;
  readonly startedAt?: string;
  readonly completedAt?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly workspace?: readonly SourceFile[];
  readonly acceptanceTests?: readonly SourceFile[];
  readonly resultFiles?: readonly SourceFile[];
  readonly lessons?: readonly Lesson[];
  readonly resumeCount?: number;
  readonly project?: string;
  readonly team?: string;
  readonly submittedBy?: string;
  readonly dependencyDecisions?: readonly DependencyDecision[];
  readonly spec?: TaskSpec;
  readonly questions?: readonly ClarifyingQuestion[];
  readonly profile?: ProjectProfile;
  readonly phases?: { readonly reprompt?: boolean; readonly questions?: boolean; readonly review?: boolean; readonly audit?: boolean };
  readonly traceId?: string;
}

export interface TestCase {
  readonly name?: string;
  readonly suite?: string;
  readonly file?: string;
  readonly status?: string;
  readonly duration?: Duration;
  readonly failureMessage?: string;
  readonly failureDetail?: string;
}

export interface TestReport {
  readonly framework?: string;
  readonly total?: number;
  readonly passed?: number;
  readonly failed?: number;
  readonly errored?: number;
  readonly skipped?: number;
  readonly duration?: Duration;
  readonly cases?: readonly TestCase[];
  readonly parsed?: boolean;
  readonly parseError?: string;
}

export interface Reflection {
  readonly rootCause?: string;
  readonly hypothesis?: string;
  readonly fixDirection?: string;
  readonly candidateLesson?: { readonly title?: string; readonly body?: string };
  readonly errorSignature?: string;
  readonly confidence?: number;
  readonly replanRecommended?: boolean;
}

export interface ReviewFinding {
  readonly severity?: string;
  readonly path?: string;
  readonly line?: number;
  readonly category?: string;
  readonly cwe?: string;
  readonly message?: string;
  readonly suggestion?: string;
  readonly blocking?: boolean;
  readonly source?: string;
}

export interface SafetyFinding {
  readonly ruleId?: string;
  readonly path?: string;
  readonly line?: number;
  readonly message?: string;
  readonly severity?: string;
}

export interface ToolStep {
  readonly number?: number;
  readonly tool?: string;
  readonly arguments?: string;
  readonly result?: string;
  readonly failed?: boolean;
  readonly decision?: string;
  readonly duration?: Duration;
  readonly thought?: string;
}

export interface Plan {
  readonly summary?: string;
  readonly steps?: readonly { readonly number?: number; readonly description?: string }[];
  readonly testStrategy?: string;
}

export interface Iteration {
  readonly taskId?: string;
  readonly number?: number;
  readonly phase?: string;
  readonly plan?: Plan;
  readonly files?: readonly SourceFile[];
  readonly testReport?: TestReport;
  readonly error?: { readonly code?: string; readonly message?: string };
  readonly safetyFindings?: readonly SafetyFinding[];
  readonly reflection?: Reflection;
  readonly hypothesis?: string;
  readonly usage?: Usage;
  readonly duration?: Duration;
  readonly startedAt?: string;
  readonly completedAt?: string;
  readonly reflectionLessons?: readonly Lesson[];
  readonly storedLesson?: { readonly lessonId?: string; readonly title?: string; readonly created?: boolean };
  readonly toolSteps?: readonly ToolStep[];
  readonly reviewFindings?: readonly ReviewFinding[];
  readonly auditFindings?: readonly ReviewFinding[];
}

/** GET /api/tasks/:id: the full view, and the task's links. */
export interface TaskDetail {
  readonly task?: Task;
  readonly iterations?: readonly Iteration[];
  readonly approvals?: readonly ApprovalGate[];
  readonly links?: { readonly trace?: string };
}

export interface TaskPage {
  readonly tasks?: readonly Task[];
  readonly nextPageToken?: string;
}

export interface TaskEvent {
  readonly taskId?: string;
  readonly sequence?: number;
  readonly time?: string;
  readonly iteration?: number;
  readonly taskSubmitted?: { readonly task?: Task };
  readonly taskStatusChanged?: { readonly fromStatus?: string; readonly toStatus?: string; readonly reason?: string };
  readonly phaseStarted?: { readonly phase?: string; readonly attempt?: number };
  readonly phaseCompleted?: { readonly phase?: string; readonly duration?: Duration; readonly usage?: Usage; readonly summary?: string; readonly error?: { readonly code?: string; readonly message?: string } };
  readonly iterationCompleted?: { readonly testsPassed?: boolean; readonly testsPassedCount?: number; readonly testsTotalCount?: number; readonly usage?: Usage; readonly duration?: Duration; readonly failure?: string };
  readonly testRunCompleted?: { readonly report?: TestReport; readonly exitCode?: number; readonly timedOut?: boolean; readonly oomKilled?: boolean };
  readonly safetyBlocked?: { readonly findings?: readonly SafetyFinding[] };
  readonly approvalRequested?: { readonly gate?: ApprovalGate };
  readonly approvalDecided?: { readonly gate?: ApprovalGate };
  readonly lessonStored?: { readonly lessonId?: string; readonly title?: string; readonly created?: boolean };
  readonly lessonsRetrieved?: { readonly lessons?: readonly { readonly lessonId?: string; readonly title?: string; readonly score?: number }[]; readonly phase?: string };
  readonly taskCompleted?: { readonly status?: string; readonly reason?: string; readonly reasonDetail?: string; readonly usage?: Usage; readonly iterations?: number; readonly duration?: Duration };
  readonly logLine?: { readonly level?: string; readonly message?: string; readonly service?: string };
  readonly toolCalled?: { readonly step?: ToolStep; readonly phase?: string };
  readonly questionsAsked?: { readonly questions?: readonly ClarifyingQuestion[] };
}

export interface LessonEvidence {
  readonly taskId?: string;
  readonly iteration?: number;
  readonly failureSummary?: string;
  readonly fixSummary?: string;
  readonly recordedAt?: string;
}

export interface LessonStats {
  readonly timesRetrieved?: number;
  readonly timesHelped?: number;
  readonly timesNotHelped?: number;
  readonly lastRetrievedAt?: string;
  readonly timesApplied?: number;
  readonly appliedSucceeded?: number;
  readonly appliedMeanIterations?: number;
  readonly comparableTasks?: number;
  readonly comparableSucceeded?: number;
  readonly comparableMeanIterations?: number;
  readonly lastHelpedAt?: string;
}

export interface Lesson {
  readonly id?: string;
  readonly title?: string;
  readonly body?: string;
  readonly errorSignature?: string;
  readonly tags?: readonly string[];
  readonly language?: string;
  readonly evidence?: readonly LessonEvidence[];
  readonly stats?: LessonStats;
  readonly createdAt?: string;
  readonly updatedAt?: string;
  readonly kind?: string;
  readonly status?: string;
  readonly scope?: string;
  readonly embedder?: string;
  readonly weight?: number;
  readonly standing?: readonly string[];
}

export interface LessonPage {
  readonly lessons?: readonly Lesson[];
  readonly nextPageToken?: string;
}

/** Every failed request's body. */
export interface ErrorBody {
  readonly error?: { readonly code?: string; readonly message?: string };
}
