import { durationFromMs, mergeFiles, isTerminal, phaseName, phaseOfStatus, statusName } from '@ratchet/agent';
import { blockingSafetyFindings, sumUsage } from '@ratchet/prompting';
import {
  ApprovalDecision,
  ApprovalKind,
  DependencyVerdict,
  LogLevel,
  Phase,
  StopReason,
  TaskStatus,
  type ApprovalGate,
  type DependencyDecision,
  type Usage,
  type ClarifyingQuestion,
  type TaskPhases,
  type ErrorDetail,
  type Lesson,
  type ScoredLesson,
  type TestDispute,
  type TestReport,
} from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { dependencyGate, gateDecided, importedPackagesGate, planDecisions, refusedEarlier, withUndeclared, withVerdict } from './dependencies';
import { event, phaseCompleted, type NewEvent } from './events';
import { InputKind, type InputOf, type TaskInput, type TestRun } from './inputs';
import { IterationErrorCode } from './iteration-errors';
import { assumptionAnswerer, type LoopPolicy } from './policy';
import { baselineFailures, baselineText, judgeAgainstBaseline } from './baseline';
import { failingTestsOf, failureText } from './progress';
import { emptyUsage, isOpenQuestion, pendingGate, type IterationRecord, type TaskRecord, type TaskState } from './records';
import { testsEditable } from './next-action';
import { afterReflection, elapsedMs } from './stop-conditions';
import { baselineSummary, blockingText, commandGateText, finalResultGateText, findingsSummary, packageLabel, packagesJudgedText, planSummary, safetySummary, spanText, testSummary, unavailableText, waitingFor } from './summaries';
import { allowedNext } from './task-state';

/** What one input does to a task: the records to write and the events to append, all in one transaction. */
export interface Decision {
  /** The task after the input; `version` is still the one it was read at. */
  readonly task: TaskRecord;
  /** Iterations this input changed or began, oldest first. */
  readonly iterations: readonly IterationRecord[];
  /** Events in order, each with its iteration (the task's current one unless it says otherwise). */
  readonly events: readonly NewEvent[];
  /** A gate this input raises (the task goes AWAITING_APPROVAL). */
  readonly gate?: ApprovalGate;
  /** A gate this input decides; written only if it is still pending. */
  readonly decidedGate?: ApprovalGate;
  /** False when nothing changes (a hand-over): there is nothing to write. */
  readonly changed: boolean;
  /**
   * Numbers of the `iterations` whose files are the ones already stored (the
   * same array): a tool step, a test result or a reflection leaves a
   * workspace-sized snapshot as it is, and the writer need not send it again.
   */
  readonly filesUnchanged?: ReadonlySet<number>;
}

/** The part of a decision a rule makes; `decide` adds the status change itself. */
interface Step {
  readonly to: TaskStatus;
  readonly reason: string;
  readonly task?: Partial<Omit<TaskRecord, 'id' | 'status' | 'statusReason' | 'version'>>;
  /** The task's current iteration after the rule (a new one, or the current one changed). */
  readonly iteration?: IterationRecord;
  /** Iterations finished by this input, written before `iteration`. */
  readonly finished?: readonly IterationRecord[];
  readonly events?: readonly NewEvent[];
  readonly stopReason?: StopReason;
  readonly gate?: ApprovalGate;
  readonly decidedGate?: ApprovalGate;
}

type Rule<K extends TaskInput['kind']> = (state: TaskState, input: InputOf<K>, policy: LoopPolicy) => Step;

/**
 * The loop's one transition function: the task's next status, records and
 * events for `input`, with no store, bus or clock. Every change of a task's
 * status goes through here, and only rows of the transition table
 * (`domain/task-state.ts`) are accepted.
 *
 * @throws AppError FAILED_PRECONDITION when the task's status does not take `input`.
 */
export function decide(state: TaskState, input: TaskInput, policy: LoopPolicy): Decision {
  const { task } = state;
  const allowed = allowedNext(task.status, input.kind);
  if (input.kind === InputKind.HANDED_OVER) return { task, iterations: [], events: [], changed: false };
  const step = (rules[input.kind] as Rule<typeof input.kind>)(state, input as never, policy);
  if (!allowed.includes(step.to)) {
    throw new AppError(ErrorCode.INTERNAL, `the rule for '${input.kind}' chose ${statusName(step.to)}, which the table does not allow from ${statusName(task.status)}`);
  }
  return finish(state, input, step);
}

/** Applies a rule's step: the status change, the derived iteration phase, and the closing events of a terminal status. */
function finish(state: TaskState, input: TaskInput, step: Step): Decision {
  const from = state.task.status;
  const at = input.at;
  const terminal = isTerminal(step.to) && !isTerminal(from);
  let task: TaskRecord = { ...state.task, ...step.task, status: step.to, statusReason: step.reason, updatedAt: at };
  const events = [...(step.events ?? [])];
  if (step.to !== from) {
    events.push(event(at, { $case: 'taskStatusChanged', taskStatusChanged: { fromStatus: from, toStatus: step.to, reason: step.reason } }, eventIteration(step)));
    const phase = phaseOfStatus(step.to);
    if (phase !== Phase.PHASE_UNSPECIFIED) events.push(event(at, { $case: 'phaseStarted', phaseStarted: { phase, attempt: 1 } }, eventIteration(step)));
  }
  if (terminal) {
    task = { ...task, stopReason: step.stopReason ?? StopReason.STOP_REASON_UNSPECIFIED, completedAt: at };
    // A task that ends without passing keeps its last attempt as its result, so the user gets the code (marked failing) rather than nothing.
    if (step.to !== TaskStatus.TASK_STATUS_SUCCEEDED) {
      const attempts = [...state.iterations.filter((item) => item.number !== step.iteration?.number), ...(step.finished ?? []), ...(step.iteration === undefined ? [] : [step.iteration])];
      const last = attempts.filter((item) => item.files.length > 0).sort((left, right) => left.number - right.number).at(-1);
      if (last !== undefined) task = { ...task, resultFiles: mergeFiles(last.files, task.generatedTests) };
    }
    events.push(
      event(at, {
        $case: 'taskCompleted',
        taskCompleted: {
          status: step.to,
          reason: task.stopReason,
          reasonDetail: step.reason,
          usage: task.usage,
          iterations: task.currentIteration,
          duration: durationFromMs(elapsedMs(task, at)),
        },
      }),
    );
  }
  const iterationPhase =
    step.gate?.kind === ApprovalKind.APPROVAL_KIND_DEPENDENCY_INSTALL ? Phase.PHASE_CODING : step.gate?.kind === ApprovalKind.APPROVAL_KIND_SAFETY_OVERRIDE ? Phase.PHASE_SAFETY_CHECK : phaseOfIteration(step.to);
  const current = step.iteration === undefined ? undefined : iterationPhase === undefined ? step.iteration : { ...step.iteration, phase: iterationPhase };
  const iterations = [...(step.finished ?? []), ...(current === undefined ? [] : [current])];
  const stored = new Map(state.iterations.map((iteration) => [iteration.number, iteration.files]));
  return {
    task,
    iterations,
    filesUnchanged: new Set(iterations.filter((iteration) => stored.get(iteration.number) === iteration.files).map((iteration) => iteration.number)),
    events: events.map((item) => (item.iteration === 0 ? { ...item, iteration: task.currentIteration } : item)),
    ...(step.gate === undefined ? {} : { gate: step.gate }),
    ...(step.decidedGate === undefined ? {} : { decidedGate: step.decidedGate }),
    changed: true,
  };
}

/** Approval events carry the gate's iteration; the rest are the task's current one (0). */
function eventIteration(step: Step): number {
  return step.decidedGate?.iteration ?? 0;
}

/**
 * The phase an iteration shows while the task is in `status`: the phase of
 * an iteration status, LEARNING while a passing result waits for approval,
 * and unchanged otherwise (planning belongs to the task, and a stopped
 * iteration keeps the phase it stopped in).
 */
function phaseOfIteration(status: TaskStatus): Phase | undefined {
  switch (status) {
    case TaskStatus.TASK_STATUS_CODING:
    case TaskStatus.TASK_STATUS_SAFETY_CHECK:
    case TaskStatus.TASK_STATUS_REVIEWING:
    case TaskStatus.TASK_STATUS_AUDITING:
    case TaskStatus.TASK_STATUS_TESTING:
    case TaskStatus.TASK_STATUS_REFLECTING:
    case TaskStatus.TASK_STATUS_LEARNING:
      return phaseOfStatus(status);
    case TaskStatus.TASK_STATUS_AWAITING_APPROVAL:
      return Phase.PHASE_LEARNING;
    default:
      return undefined;
  }
}

/** The task's current iteration. @throws AppError INTERNAL when it has none (a phase ran before planning). */
function currentIteration(state: TaskState): IterationRecord {
  const iteration = state.iterations.find((candidate) => candidate.number === state.task.currentIteration);
  if (iteration === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${state.task.id} has no iteration ${state.task.currentIteration}`);
  return iteration;
}

/**
 * Where a stored plan leads once its packages are judged (`checked`, the
 * dependency check's answers; none when it declares none): the task ends on
 * a refused package, waits for a person on one that needs approval, or
 * starts the plan's iteration (counting `usage`, the planner call's).
 * `gateId` is the check's, for the DEPENDENCY_INSTALL gate it may raise.
 */
function judgedPlan(state: TaskState, checked: readonly DependencyDecision[], gateId: string | undefined, at: Date, usage: Usage, events: readonly NewEvent[]): Step {
  const { task } = state;
  const previous = state.iterations.find((iteration) => iteration.number === task.currentIteration);
  const dependencyDecisions = planDecisions(task.dependencyDecisions, checked);
  // A package the policy (or a person, earlier) refused cannot be had: the task ends, saying which and why.
  const declared = new Set(checked.map((decision) => decision.dependency?.name));
  const denied = withVerdict(dependencyDecisions, DependencyVerdict.DEPENDENCY_VERDICT_DENIED).filter((decision) => declared.has(decision.dependency?.name));
  if (denied.length > 0) {
    return {
      to: TaskStatus.TASK_STATUS_FAILED,
      reason: `the plan needs ${denied.map((decision) => `${packageLabel(decision)}, which is refused (${decision.reason})`).join('; ')}`,
      stopReason: StopReason.STOP_REASON_SAFETY_BLOCKED,
      task: { usage: task.usage, plan: task.plan, dependencyDecisions, unjudgedPlan: undefined, ...(task.baselineReport === undefined ? {} : { baselineReport: task.baselineReport }) },
      events,
    };
  }
  const iteration = newIteration(task, previous, at, usage);
  const changes = { usage: task.usage, plan: task.plan, generatedTests: task.generatedTests, replanReason: '', currentIteration: iteration.number, dependencyDecisions, unjudgedPlan: undefined, ...(task.baselineReport === undefined ? {} : { baselineReport: task.baselineReport }) };
  const waiting = withVerdict(dependencyDecisions, DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL);
  if (waiting.length === 0) return { to: TaskStatus.TASK_STATUS_CODING, reason: '', task: changes, iteration, events };
  // Only a check's answer raises a gate (and brings its id); a plan with no packages has nothing waiting.
  if (gateId === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${task.id}: packages wait for approval, but no dependency check answered`);
  const gate = dependencyGate(task, iteration.number, waiting, gateId, at);
  return {
    to: TaskStatus.TASK_STATUS_AWAITING_APPROVAL,
    reason: `waiting for a person to approve installing ${waiting.map(packageLabel).join(', ')}`,
    task: { ...changes, pendingGateId: gate.gateId },
    iteration,
    gate,
    events: [...events, event(at, { $case: 'approvalRequested', approvalRequested: { gate } })],
  };
}

/** Iteration `task.currentIteration + 1`, begun at `at`. */
function newIteration(task: TaskRecord, previous: IterationRecord | undefined, at: Date, usage = emptyUsage()): IterationRecord {
  return {
    taskId: task.id,
    number: task.currentIteration + 1,
    phase: Phase.PHASE_CODING,
    ...(task.plan === undefined ? {} : { plan: task.plan }),
    files: previous?.files ?? [],
    safetyFindings: [],
    hypothesis: '',
    retrievedLessonIds: task.lessons.map((lesson) => lesson.id),
    reflectionLessons: [],
    testDisputes: [],
    toolSteps: [],
    reviewFindings: [],
    auditFindings: [],
    failureId: '',
    output: '',
    usage,
    startedAt: at,
  };
}

const lessonsOf = (scored: readonly ScoredLesson[]): Lesson[] => scored.flatMap((item) => (item.lesson === undefined ? [] : [item.lesson]));
const lessonRefs = (scored: readonly ScoredLesson[]) => scored.map((item) => ({ lessonId: item.lesson?.id ?? '', title: item.lesson?.title ?? '', score: item.score }));
const failure = (code: IterationErrorCode, message: string, detail = ''): ErrorDetail => ({ code, message, retryable: false, signature: '', detail });

/** The `detail` of a MODEL_REPLY_INVALID error whose reply stopped at the token limit. */
export const replyTruncated = 'truncated';

/** What the baseline run found, as a line of the task's events. */
function baselineEvent(report: TestReport, at: Date): NewEvent {
  return event(at, { $case: 'logLine', logLine: { level: LogLevel.LOG_LEVEL_INFO, message: baselineSummary(report), service: 'orchestrator', attributes: {} } });
}

/** The events of a finished test run, and the iteration with its report. */
function ranTests(state: TaskState, input: TestRun, passed = false): { iteration: IterationRecord; events: NewEvent[]; summary: string } {
  // Against a baseline with failures, the summary says what the run fixed, broke, and found failing before.
  const compared = baselineFailures(state.task.baselineReport).length === 0 ? '' : baselineText(judgeAgainstBaseline(state.task.baselineReport, input.report, false));
  // A project's own command that passed without a JUnit report passed by its exit code: say so, not "0/0".
  const counted = passed && input.report?.parsed !== true ? `passed (exit ${input.exitCode}; the command wrote no JUnit report to count tests)` : testSummary(input.report);
  const summary = compared === '' ? counted : `${counted}; ${compared}`;
  return {
    iteration: {
      ...currentIteration(state),
      ...(input.report === undefined ? {} : { testReport: input.report }),
      ...(input.install === undefined ? {} : { dependencyInstall: input.install }),
      ...(input.safetyFindings === undefined ? {} : { safetyFindings: input.safetyFindings }),
      output: input.output,
    },
    summary,
    events: [
      event(input.at, {
        $case: 'testRunCompleted',
        testRunCompleted: { report: input.report, exitCode: input.exitCode, timedOut: input.timedOut, oomKilled: input.oomKilled, jobId: input.jobId, runnerId: input.runnerId },
      }),
      // Bandit's scan ran in the test job: its outcome is the code check's, told where it happened.
      phaseCompleted(input.at, Phase.PHASE_TESTING, input.startedAt, emptyUsage(), input.safetyFindings === undefined ? summary : `${summary}; code check with Bandit: ${safetySummary(input.safetyFindings)}`),
    ],
  };
}

function iterationCompleted(iteration: IterationRecord, at: Date, passed: boolean, signature: string): NewEvent {
  return event(
    at,
    {
      $case: 'iterationCompleted',
      iterationCompleted: {
        testsPassed: passed,
        testsPassedCount: iteration.testReport?.passed ?? 0,
        testsTotalCount: iteration.testReport?.total ?? 0,
        errorSignature: signature,
        failure: passed ? '' : failureText(iteration.testReport, iteration.error?.message ?? ''),
        usage: iteration.usage,
        duration: durationFromMs((iteration.completedAt ?? at).getTime() - iteration.startedAt.getTime()),
      },
    },
    iteration.number,
  );
}

/** The gate before a passing result is accepted: what passed, and the files, for the approver. */
function finalResultGate(task: TaskRecord, iteration: IterationRecord, summary: string, gateId: string, at: Date): ApprovalGate {
  return pendingGate(task, iteration.number, ApprovalKind.APPROVAL_KIND_FINAL_RESULT, finalResultGateText(task, iteration.number, summary), gateId, at);
}

/** Where a change goes after the safety check: the optional phases the task runs, then the tests. */
function afterSafety(phases: TaskPhases): TaskStatus {
  if (phases.review) return TaskStatus.TASK_STATUS_REVIEWING;
  return phases.audit ? TaskStatus.TASK_STATUS_AUDITING : TaskStatus.TASK_STATUS_TESTING;
}

/**
 * The questions of one reprompter reply as the task keeps them: at most
 * what is left of `max` questions per task (the first ones), each with an id
 * no earlier question has; an empty or taken id becomes `q<n>`, n counting
 * every question the task was asked.
 */
export function newQuestions(earlier: readonly ClarifyingQuestion[], asked: readonly ClarifyingQuestion[], max: number): ClarifyingQuestion[] {
  const taken = new Set(earlier.map((question) => question.questionId));
  return asked.slice(0, Math.max(0, max - earlier.length)).map((question, index) => {
    const questionId = question.questionId === '' || taken.has(question.questionId) ? `q${earlier.length + index + 1}` : question.questionId;
    taken.add(questionId);
    return { ...question, questionId };
  });
}

/** One rule per input kind: what the input means in the status the table allows it in. */
const rules: { readonly [K in TaskInput['kind']]: Rule<K> } = {
  [InputKind.START]: (state, input) => ({
    to: state.task.phases.reprompt ? TaskStatus.TASK_STATUS_REPROMPTING : TaskStatus.TASK_STATUS_RETRIEVING,
    reason: '',
    task: { startedAt: input.at },
  }),

  [InputKind.REPROMPTED]: (state, input) => ({
    to: TaskStatus.TASK_STATUS_RETRIEVING,
    reason: '',
    task: { usage: sumUsage(state.task.usage, input.usage), spec: input.spec },
    events: [
      phaseCompleted(
        input.at,
        Phase.PHASE_REPROMPTING,
        input.startedAt,
        input.usage,
        `spec: ${input.spec.acceptanceCriteria.length} acceptance criteria, ${input.spec.assumptions.length} assumption(s)`,
      ),
    ],
  }),

  [InputKind.QUESTION_ASKED]: (state, input, policy) => {
    const asked = newQuestions(state.task.questions, input.questions, policy.questions.max);
    return {
      to: TaskStatus.TASK_STATUS_AWAITING_ANSWER,
      reason: waitingFor(asked, state.task.id),
      task: {
        usage: sumUsage(state.task.usage, input.usage),
        questions: [...state.task.questions, ...asked.map((question) => ({ ...question, answer: '', answeredBy: '', askedAt: input.at, answeredAt: undefined }))],
        answerDeadline: policy.questions.timeoutMs > 0 ? new Date(input.at.getTime() + policy.questions.timeoutMs) : undefined,
      },
      events: [
        event(input.at, { $case: 'questionsAsked', questionsAsked: { questions: asked.map((question) => ({ ...question, askedAt: input.at })) } }),
        phaseCompleted(input.at, Phase.PHASE_REPROMPTING, input.startedAt, input.usage, `asked ${asked.length} question(s)`),
      ],
    };
  },

  // Answers fill open questions; the reprompter runs again once none is open.
  [InputKind.ANSWERED]: (state, input) => {
    const answers = new Map(input.answers.map((answer) => [answer.questionId, answer.answer.trim()]));
    const questions = state.task.questions.map((question) => {
      const answer = answers.get(question.questionId);
      return answer === undefined || !isOpenQuestion(question) ? question : { ...question, answer, answeredBy: input.answeredBy, answeredAt: input.at };
    });
    const open = questions.filter(isOpenQuestion);
    if (open.length > 0) return { to: TaskStatus.TASK_STATUS_AWAITING_ANSWER, reason: waitingFor(open, state.task.id), task: { questions } };
    return { to: TaskStatus.TASK_STATUS_REPROMPTING, reason: input.answeredBy === assumptionAnswerer ? 'nobody answered in time: going on with the stated assumptions' : '', task: { questions, answerDeadline: undefined } };
  },

  [InputKind.LESSONS_RETRIEVED]: (_state, input) => {
    const lessons = lessonsOf(input.lessons);
    return {
      to: TaskStatus.TASK_STATUS_PLANNING,
      reason: '',
      task: { lessons },
      events: [
        event(input.at, { $case: 'lessonsRetrieved', lessonsRetrieved: { phase: Phase.PHASE_RETRIEVING, lessons: lessonRefs(input.lessons) } }),
        phaseCompleted(input.at, Phase.PHASE_RETRIEVING, input.startedAt, emptyUsage(), `${lessons.length} lesson(s) retrieved`),
      ],
    };
  },

  [InputKind.BASELINE_RAN]: (state, input) => ({
    to: TaskStatus.TASK_STATUS_PLANNING,
    reason: state.task.statusReason,
    task: { baselineReport: input.report },
    events: input.report.parsed ? [baselineEvent(input.report, input.at)] : [],
  }),

  // The plan is stored; packages it declares are judged next (JUDGE_PACKAGES), so a failed check never asks the planner again.
  [InputKind.PLANNED]: (state, input) => {
    // New plan, new tests: tests written for the old design may not fit it.
    const baseline = state.task.baselineReport === undefined && input.baseline !== undefined ? { baselineReport: input.baseline } : {};
    const task = { ...state.task, usage: sumUsage(state.task.usage, input.usage), plan: input.plan, generatedTests: [], replanReason: '', ...baseline };
    const planned = [
      ...(input.baseline === undefined || baseline.baselineReport === undefined ? [] : [baselineEvent(input.baseline, input.at)]),
      ...(input.lookups ?? []).map((step) => event(input.at, { $case: 'toolCalled', toolCalled: { step, phase: Phase.PHASE_PLANNING } })),
      phaseCompleted(input.at, Phase.PHASE_PLANNING, input.startedAt, input.usage, planSummary(task, testsEditable(task))),
    ];
    if (input.plan.dependencies.length > 0) {
      return { to: TaskStatus.TASK_STATUS_PLANNING, reason: '', task: { usage: task.usage, plan: task.plan, generatedTests: task.generatedTests, replanReason: '', unjudgedPlan: { usage: input.usage }, ...baseline }, events: planned };
    }
    // Nothing to judge: no package can be refused or wait for a person, so no gate.
    return judgedPlan({ ...state, task }, [], undefined, input.at, input.usage, planned);
  },

  [InputKind.PACKAGES_JUDGED]: (state, input) => {
    const usage = state.task.unjudgedPlan?.usage ?? emptyUsage();
    const judged = event(input.at, { $case: 'logLine', logLine: { level: LogLevel.LOG_LEVEL_INFO, message: packagesJudgedText(input.dependencies), service: 'orchestrator', attributes: {} } });
    return judgedPlan(state, input.dependencies, input.gateId, input.at, usage, [judged]);
  },

  // Progress within CODING: the step is kept on the iteration and shown, before the coder goes on.
  [InputKind.TOOL_STEP]: (state, input) => {
    const iteration = currentIteration(state);
    return {
      to: TaskStatus.TASK_STATUS_CODING,
      reason: state.task.statusReason,
      iteration: { ...iteration, toolSteps: [...iteration.toolSteps, input.step] },
      events: [event(input.at, { $case: 'toolCalled', toolCalled: { step: input.step, phase: Phase.PHASE_CODING } }, iteration.number)],
    };
  },

  // The coder stopped at a command the policy asks about: its change so far is kept, and a person decides.
  [InputKind.COMMAND_ASKED]: (state, input) => {
    const iteration = currentIteration(state);
    const gate = pendingGate(state.task, iteration.number, ApprovalKind.APPROVAL_KIND_COMMAND_EXECUTION, commandGateText(input.commandLine, input.reason), input.gateId, input.at);
    return {
      to: TaskStatus.TASK_STATUS_AWAITING_APPROVAL,
      reason: `waiting for a person to decide whether the coder may run \`${input.commandLine.slice(0, 200)}\``,
      task: { usage: sumUsage(state.task.usage, input.usage), pendingGateId: gate.gateId },
      iteration: { ...iteration, usage: sumUsage(iteration.usage, input.usage), files: input.files },
      gate,
      events: [phaseCompleted(input.at, Phase.PHASE_CODING, input.startedAt, input.usage, `stopped to ask a person: may it run \`${input.commandLine.slice(0, 200)}\`?`), event(input.at, { $case: 'approvalRequested', approvalRequested: { gate } })],
    };
  },

  [InputKind.CODED]: (state, input) => {
    const iteration = currentIteration(state);
    return {
      to: TaskStatus.TASK_STATUS_SAFETY_CHECK,
      reason: '',
      task: { usage: sumUsage(state.task.usage, input.usage) },
      iteration: { ...iteration, usage: sumUsage(iteration.usage, input.usage), files: input.files, testDisputes: input.disputes },
      events: [phaseCompleted(input.at, Phase.PHASE_CODING, input.startedAt, input.usage, input.summary)],
    };
  },

  // A reply-format failure: its tokens count, and it is recorded as such (never as a failure of the code).
  [InputKind.REPLY_INVALID]: (state, input) => {
    const error = failure(IterationErrorCode.MODEL_REPLY_INVALID, input.message, input.truncated ? replyTruncated : '');
    const iteration = currentIteration(state);
    return {
      to: TaskStatus.TASK_STATUS_REFLECTING,
      reason: `the ${phaseName(input.phase)} reply was ${input.truncated ? 'cut off at the length limit' : 'invalid'}`,
      task: { usage: sumUsage(state.task.usage, input.usage) },
      iteration: { ...iteration, usage: sumUsage(iteration.usage, input.usage), error },
      events: [phaseCompleted(input.at, input.phase, input.startedAt, input.usage, input.truncated ? 'model reply cut off at the length limit' : 'invalid model reply', error)],
    };
  },

  [InputKind.SAFETY_PASSED]: (state, input) => ({
    to: afterSafety(state.task.phases),
    reason: '',
    task: { dependencyDecisions: withUndeclared(state.task, input.undeclared) },
    iteration: { ...currentIteration(state), safetyFindings: input.findings },
    events: [phaseCompleted(input.at, Phase.PHASE_SAFETY_CHECK, input.startedAt, emptyUsage(), safetySummary(input.findings))],
  }),

  [InputKind.SAFETY_BLOCKED]: (state, input) => ({
    to: TaskStatus.TASK_STATUS_REFLECTING,
    reason: 'blocked by the safety check',
    iteration: {
      ...currentIteration(state),
      safetyFindings: input.findings,
      // The error names only what blocked: warnings and pre-existing findings are not the attempt's failure.
      error: failure(IterationErrorCode.SAFETY_BLOCKED, `the safety check blocked the code: ${blockingSafetyFindings(input.findings).map((finding) => `${finding.ruleId} at ${finding.path}:${finding.line}`).join(', ')}`),
    },
    events: [
      event(input.at, { $case: 'safetyBlocked', safetyBlocked: { verdict: input.verdict, findings: [...input.findings] } }),
      phaseCompleted(input.at, input.phase ?? Phase.PHASE_SAFETY_CHECK, input.startedAt, emptyUsage(), `blocked: ${safetySummary(input.findings)}`),
    ],
  }),

  // Packages the change imports that the policy asks a person about: a gate, unless a person already refused one of them in this task.
  [InputKind.SAFETY_ASKED]: (state, input) => {
    const iteration = currentIteration(state);
    const refusals = refusedEarlier(state.task.dependencyDecisions, input.waiting);
    if (refusals.length > 0) {
      const why = `the change imports ${refusals.map((decision) => `${packageLabel(decision)}, ${decision.reason}`).join('; ')} earlier in this task`;
      return {
        to: TaskStatus.TASK_STATUS_REFLECTING,
        reason: 'blocked by the safety check',
        iteration: { ...iteration, safetyFindings: input.findings, error: failure(IterationErrorCode.SAFETY_BLOCKED, `the safety check blocked the code: ${why}; do without ${refusals.length === 1 ? 'it' : 'them'}`) },
        events: [phaseCompleted(input.at, Phase.PHASE_SAFETY_CHECK, input.startedAt, emptyUsage(), `blocked: ${why}`)],
      };
    }
    const gate = importedPackagesGate(state.task, iteration.number, input.waiting, input.gateId, input.at);
    return {
      to: TaskStatus.TASK_STATUS_AWAITING_APPROVAL,
      reason: `waiting for a person to approve installing ${input.waiting.map(packageLabel).join(', ')}, which the change imports`,
      task: { dependencyDecisions: withUndeclared(state.task, [...input.undeclared, ...input.waiting]), pendingGateId: gate.gateId },
      iteration: { ...iteration, safetyFindings: input.findings },
      gate,
      events: [
        phaseCompleted(input.at, Phase.PHASE_SAFETY_CHECK, input.startedAt, emptyUsage(), `waiting for a person: ${safetySummary(input.findings, { asking: true })}`),
        event(input.at, { $case: 'approvalRequested', approvalRequested: { gate } }),
      ],
    };
  },

  // Blocking findings fail the attempt like a failing test: the reflector reads them, the coder fixes them.
  [InputKind.REVIEWED]: (state, input) => {
    const iteration = { ...currentIteration(state), usage: sumUsage(currentIteration(state).usage, input.usage), reviewFindings: input.findings };
    const blocking = blockingText(input.findings);
    const events = [phaseCompleted(input.at, Phase.PHASE_REVIEWING, input.startedAt, input.usage, findingsSummary(input.findings, input.summary))];
    const task = { usage: sumUsage(state.task.usage, input.usage) };
    if (blocking === '') return { to: state.task.phases.audit ? TaskStatus.TASK_STATUS_AUDITING : TaskStatus.TASK_STATUS_TESTING, reason: '', task, iteration, events };
    return { to: TaskStatus.TASK_STATUS_REFLECTING, reason: 'the review asked for changes', task, iteration: { ...iteration, error: failure(IterationErrorCode.REVIEW_REJECTED, `the review blocked the change: ${blocking}`) }, events };
  },

  [InputKind.AUDITED]: (state, input) => {
    const iteration = { ...currentIteration(state), usage: sumUsage(currentIteration(state).usage, input.usage), auditFindings: input.findings };
    const blocking = blockingText(input.findings);
    const events = [phaseCompleted(input.at, Phase.PHASE_AUDITING, input.startedAt, input.usage, findingsSummary(input.findings, input.summary))];
    const task = { usage: sumUsage(state.task.usage, input.usage) };
    if (blocking === '') return { to: TaskStatus.TASK_STATUS_TESTING, reason: '', task, iteration, events };
    return {
      to: TaskStatus.TASK_STATUS_REFLECTING,
      reason: 'the security audit found problems',
      task,
      iteration: { ...iteration, error: failure(IterationErrorCode.AUDIT_FINDINGS, `the security audit blocked the change: ${blocking}`) },
      events,
    };
  },

  [InputKind.TESTS_WRITTEN]: (state, input) => {
    const iteration = currentIteration(state);
    if (input.tests.length === 0) {
      const error = failure(IterationErrorCode.MODEL_REPLY_INVALID, 'the tester wrote no tests');
      return {
        to: TaskStatus.TASK_STATUS_REFLECTING,
        reason: 'the tester wrote no tests',
        task: { usage: sumUsage(state.task.usage, input.usage) },
        iteration: { ...iteration, usage: sumUsage(iteration.usage, input.usage), error },
        events: [phaseCompleted(input.at, Phase.PHASE_TESTING, input.startedAt, input.usage, error.message, error)],
      };
    }
    return {
      to: TaskStatus.TASK_STATUS_TESTING,
      reason: state.task.statusReason,
      task: { usage: sumUsage(state.task.usage, input.usage), generatedTests: input.tests },
      iteration: { ...iteration, usage: sumUsage(iteration.usage, input.usage) },
      events: [
        event(input.at, { $case: 'logLine', logLine: { level: LogLevel.LOG_LEVEL_INFO, message: `tester wrote ${input.tests.map((file) => file.path).join(', ')}`, service: 'tester', attributes: {} } }),
      ],
    };
  },

  // Tests that are blocked or do not even parse are the tester's fault, not the code's: they are dropped, so the next iteration writes new ones.
  [InputKind.TESTS_REJECTED]: (state, input) => {
    const iteration = currentIteration(state);
    const error = input.blocked
      ? failure(IterationErrorCode.TESTS_BLOCKED, 'the safety check blocked the generated tests; they will be rewritten')
      : failure(IterationErrorCode.TESTS_UNPARSEABLE, `the generated tests do not parse (${input.unparseable.map((found) => `${found.path}:${found.line}`).join(', ')}); they will be rewritten`);
    return {
      to: TaskStatus.TASK_STATUS_REFLECTING,
      reason: input.blocked ? 'generated tests blocked by the safety check' : 'generated tests do not parse',
      // Dropped, so the tester writes them again.
      task: { usage: sumUsage(state.task.usage, input.usage), generatedTests: [] },
      iteration: { ...iteration, usage: sumUsage(iteration.usage, input.usage), safetyFindings: input.findings, error },
      events: [
        ...(input.blocked ? [event(input.at, { $case: 'safetyBlocked', safetyBlocked: { verdict: input.verdict, findings: [...input.findings] } })] : []),
        phaseCompleted(input.at, Phase.PHASE_TESTING, input.startedAt, input.usage, error.message, error),
      ],
    };
  },

  [InputKind.TESTS_PASSED]: (state, input) => {
    const ran = ranTests(state, input, true);
    const iteration = { ...ran.iteration, completedAt: input.at };
    const resultFiles = mergeFiles(iteration.files, state.task.generatedTests);
    const events = [...ran.events, iterationCompleted(iteration, input.at, true, '')];
    if (!state.task.approvalKinds.includes(ApprovalKind.APPROVAL_KIND_FINAL_RESULT)) {
      return { to: TaskStatus.TASK_STATUS_LEARNING, reason: 'tests passed', task: { resultFiles }, iteration, events };
    }
    const gate = finalResultGate({ ...state.task, resultFiles }, iteration, ran.summary, input.gateId, input.at);
    return {
      to: TaskStatus.TASK_STATUS_AWAITING_APPROVAL,
      reason: 'tests passed; waiting for approval of the final result',
      task: { resultFiles, pendingGateId: gate.gateId },
      iteration,
      gate,
      events: [...events, event(input.at, { $case: 'approvalRequested', approvalRequested: { gate } })],
    };
  },

  [InputKind.TESTS_FAILED]: (state, input) => {
    const ran = ranTests(state, input);
    const installError = input.install?.error ?? '';
    if (installError !== '') {
      const why = `the install step failed, so the tests did not run: ${installError}`;
      return { to: TaskStatus.TASK_STATUS_REFLECTING, reason: why, iteration: { ...ran.iteration, error: failure(IterationErrorCode.DEPENDENCY_INSTALL_FAILED, why, input.install?.log ?? '') }, events: ran.events };
    }
    const why = input.timedOut ? 'the test run timed out' : input.oomKilled ? 'the test run ran out of memory' : ran.summary;
    return { to: TaskStatus.TASK_STATUS_REFLECTING, reason: why, iteration: { ...ran.iteration, error: failure(IterationErrorCode.TESTS_FAILED, why, input.errorMessage) }, events: ran.events };
  },

  [InputKind.REFLECTED]: (state, input, policy) => {
    const { reflection } = input;
    const before = currentIteration(state);
    const disputed = disputedTests(state, before, input);
    if (disputed.length > 0) return rewriteDisputedTests(state, before, input, disputed);
    const iteration: IterationRecord = {
      ...before,
      usage: sumUsage(before.usage, input.usage),
      reflection,
      hypothesis: reflection.hypothesis,
      fingerprint: { errorSignature: reflection.errorSignature, failingTests: failingTestsOf(before.testReport) },
      reflectionLessons: lessonsOf(input.similarLessons),
      failureId: input.failureId,
      ...(input.storedLesson === undefined ? {} : { storedLesson: storedLessonOf(input.storedLesson) }),
      ...(before.error === undefined ? {} : { error: { ...before.error, signature: reflection.errorSignature } }),
      completedAt: input.at,
    };
    const number = iteration.number;
    const events: NewEvent[] = [
      ...(input.similarLessons.length > 0 ? [event(input.at, { $case: 'lessonsRetrieved', lessonsRetrieved: { phase: Phase.PHASE_REFLECTING, lessons: lessonRefs(input.similarLessons) } }, number)] : []),
      ...(input.storedLesson === undefined ? [] : [event(input.at, { $case: 'lessonStored', lessonStored: { lessonId: input.storedLesson.id, title: input.storedLesson.title, created: input.storedLesson.created } }, number)]),
      { ...phaseCompleted(input.at, Phase.PHASE_REFLECTING, input.startedAt, input.usage, reflection.rootCause), iteration: number },
      iterationCompleted(iteration, input.at, false, reflection.errorSignature),
    ];
    const task = { ...state.task, usage: sumUsage(state.task.usage, input.usage) };
    const iterations = state.iterations.map((other) => (other.number === number ? iteration : other));
    const after = afterReflection({ task, iterations, policy, elapsedMs: elapsedMs(task, input.at) }, reflection);
    if (after.next === 'stop') return { to: TaskStatus.TASK_STATUS_FAILED, reason: after.stop.detail, stopReason: after.stop.reason, task: { usage: task.usage }, iteration, events };
    if (after.next === 'replan') {
      return { to: TaskStatus.TASK_STATUS_PLANNING, reason: after.reason, task: { usage: task.usage, replanCount: task.replanCount + 1, replanReason: after.reason }, iteration, events };
    }
    const next = newIteration(task, iteration, input.at);
    return { to: TaskStatus.TASK_STATUS_CODING, reason: reflection.fixDirection, task: { usage: task.usage, currentIteration: next.number }, finished: [iteration], iteration: next, events };
  },

  [InputKind.LEARNED]: (state, input) => {
    const last = state.iterations.at(-1);
    const report = last?.testReport;
    const current = state.task.currentIteration;
    return {
      to: TaskStatus.TASK_STATUS_SUCCEEDED,
      reason: report === undefined ? `iteration ${current}` : `${report.passed}/${report.total} tests in iteration ${current}`,
      stopReason: StopReason.STOP_REASON_TESTS_PASSED,
      events: [
        ...input.updatedLessons.map((lesson) => event(input.at, { $case: 'lessonStored', lessonStored: { lessonId: lesson.id, title: lesson.title, created: false } })),
        phaseCompleted(input.at, Phase.PHASE_LEARNING, input.startedAt, emptyUsage(), `success recorded; ${input.updatedLessons.length} lesson(s) updated`),
      ],
    };
  },

  [InputKind.APPROVED]: (state, input) => {
    const gate = decided(input.gate, ApprovalDecision.APPROVAL_DECISION_APPROVED);
    if (gate.kind === ApprovalKind.APPROVAL_KIND_COMMAND_EXECUTION) return commandDecided(state, gate, true, input.at);
    if (gate.kind === ApprovalKind.APPROVAL_KIND_DEPENDENCY_INSTALL) return dependenciesDecided(state, gate, true, input.at);
    if (gate.kind === ApprovalKind.APPROVAL_KIND_SAFETY_OVERRIDE) return importsDecided(state, gate, true, input.at);
    return {
      to: TaskStatus.TASK_STATUS_LEARNING,
      reason: `approved by ${gate.approver}`,
      task: { replanReason: '', pendingGateId: '' },
      decidedGate: gate,
      events: [event(input.at, { $case: 'approvalDecided', approvalDecided: { gate } }, gate.iteration)],
    };
  },

  [InputKind.REJECTED]: (state, input) => {
    const gate = decided(input.gate, ApprovalDecision.APPROVAL_DECISION_REJECTED);
    if (gate.kind === ApprovalKind.APPROVAL_KIND_COMMAND_EXECUTION) return commandDecided(state, gate, false, input.at);
    if (gate.kind === ApprovalKind.APPROVAL_KIND_DEPENDENCY_INSTALL) return dependenciesDecided(state, gate, false, input.at);
    if (gate.kind === ApprovalKind.APPROVAL_KIND_SAFETY_OVERRIDE) return importsDecided(state, gate, false, input.at);
    const reason = `the result was rejected by ${gate.approver}${gate.comment === '' ? '' : `: ${gate.comment}`}`;
    return {
      to: TaskStatus.TASK_STATUS_PLANNING,
      reason,
      task: { replanReason: reason, pendingGateId: '' },
      decidedGate: gate,
      events: [event(input.at, { $case: 'approvalDecided', approvalDecided: { gate } }, gate.iteration)],
    };
  },

  [InputKind.RESUMED]: (state, input) => {
    const reason = input.hint === '' ? 'resumed by the user' : `resumed by the user: ${input.hint}`;
    return {
      to: TaskStatus.TASK_STATUS_PLANNING,
      reason,
      // A resume plans again: a plan left waiting for its packages' check is not judged.
      task: { replanReason: reason, budget: input.budget, resumeCount: state.task.resumeCount + 1, stopReason: StopReason.STOP_REASON_UNSPECIFIED, completedAt: undefined, unjudgedPlan: undefined },
    };
  },

  [InputKind.STOPPED]: (_state, input) => ({ to: TaskStatus.TASK_STATUS_FAILED, reason: input.detail, stopReason: input.reason }),

  // A phase waiting out a missing service or database: nothing changes but the record that it waits, and until when.
  [InputKind.PAUSED]: (state, input) => {
    const retryInMs = input.retryAt.getTime() - input.at.getTime();
    const leftMs = input.until.getTime() - input.at.getTime();
    return {
      to: state.task.status,
      reason: state.task.statusReason,
      events: [
        event(input.at, {
          $case: 'logLine',
          logLine: {
            level: LogLevel.LOG_LEVEL_WARN,
            message: `${unavailableText(input.dependency, input.waitedMs)}: ${input.message}; ${statusName(state.task.status)} waits and tries again in ${spanText(retryInMs)} (gives up in ${spanText(leftMs)})`,
            service: 'orchestrator',
            attributes: {
              dependency: input.dependency,
              code: input.code,
              waited_ms: String(input.waitedMs),
              retry_in_ms: String(retryInMs),
              until: input.until.toISOString(),
            },
          },
        }),
      ],
    };
  },

  [InputKind.ERRORED]: (state, input) => ({
    to: TaskStatus.TASK_STATUS_FAILED,
    reason: `${statusName(state.task.status)} failed: ${input.code}: ${input.message}`,
    stopReason: StopReason.STOP_REASON_ERROR,
    ...(input.usage === undefined ? {} : { task: { usage: sumUsage(state.task.usage, input.usage) } }),
  }),

  [InputKind.CANCELLED]: (_state, input) => ({ to: TaskStatus.TASK_STATUS_CANCELLED, reason: input.reason, stopReason: StopReason.STOP_REASON_CANCELLED }),

  [InputKind.HANDED_OVER]: (state) => ({ to: state.task.status, reason: state.task.statusReason }),
};

/**
 * The generated tests the reflection says contradict the goal, that may be
 * rewritten now: never an acceptance test, and once per iteration (a second
 * dispute in the same iteration is treated as a code failure).
 */
function disputedTests(state: TaskState, iteration: IterationRecord, input: InputOf<typeof InputKind.REFLECTED>): TestDispute[] {
  if ((iteration.reflection?.disputedTests.length ?? 0) > 0) return [];
  const generated = new Set(state.task.generatedTests.map((file) => file.path));
  const acceptance = new Set(state.task.acceptanceTests.map((file) => file.path));
  return input.reflection.disputedTests.filter((dispute) => generated.has(dispute.path) && !acceptance.has(dispute.path));
}

/**
 * A failed run whose test was wrong, not the code: the tests go back to the
 * tester with the reasons, in the same iteration, and run again against the
 * same code. No re-plan, no new iteration, no no-progress count.
 */
function rewriteDisputedTests(state: TaskState, before: IterationRecord, input: InputOf<typeof InputKind.REFLECTED>, disputed: readonly TestDispute[]): Step {
  const reflection = { ...input.reflection, disputedTests: [...disputed] };
  const which = disputed.map((dispute) => `${dispute.path}${dispute.testName ? `::${dispute.testName}` : ''} (${dispute.reason})`).join('; ');
  // The failed run's error was the test's, not the code's: the iteration goes on without it.
  const iteration: IterationRecord = { ...withoutError(before), usage: sumUsage(before.usage, input.usage), reflection, hypothesis: reflection.hypothesis, reflectionLessons: lessonsOf(input.similarLessons), failureId: input.failureId, ...(input.storedLesson === undefined ? {} : { storedLesson: storedLessonOf(input.storedLesson) }) };
  const number = iteration.number;
  return {
    to: TaskStatus.TASK_STATUS_TESTING,
    reason: `rewriting disputed test(s): ${which}`,
    task: { usage: sumUsage(state.task.usage, input.usage), generatedTests: [] },
    iteration,
    events: [
      ...(input.storedLesson === undefined ? [] : [event(input.at, { $case: 'lessonStored', lessonStored: { lessonId: input.storedLesson.id, title: input.storedLesson.title, created: input.storedLesson.created } }, number)]),
      { ...phaseCompleted(input.at, Phase.PHASE_REFLECTING, input.startedAt, input.usage, `the test is wrong, not the code: ${which}`), iteration: number },
    ],
  };
}

function storedLessonOf(lesson: { readonly id: string; readonly title: string; readonly created: boolean }) {
  return { lessonId: lesson.id, title: lesson.title, created: lesson.created };
}

function withoutError(iteration: IterationRecord): IterationRecord {
  const copy = { ...iteration };
  delete (copy as { error?: unknown }).error;
  return copy;
}

/** A command gate decided: coding goes on from the kept change, and the coder is told the answer. */
function commandDecided(state: TaskState, gate: ApprovalGate, approved: boolean, at: Date): Step {
  return {
    to: TaskStatus.TASK_STATUS_CODING,
    reason: `${approved ? 'approved' : 'refused'} by ${gate.approver}: \`${gate.detail.slice(0, 200)}\``,
    task: { pendingGateId: '', commandDecisions: [...state.task.commandDecisions, { commandLine: gate.detail, approved, comment: gate.comment }] },
    decidedGate: gate,
    events: [event(at, { $case: 'approvalDecided', approvalDecided: { gate } }, gate.iteration)],
  };
}

/**
 * A DEPENDENCY_INSTALL gate decided: approved, coding starts with the
 * packages allowed; refused, the planner plans again without them (a plan
 * that still needs one ends the task).
 */
function dependenciesDecided(state: TaskState, gate: ApprovalGate, approved: boolean, at: Date): Step {
  const dependencyDecisions = gateDecided(state.task.dependencyDecisions, gate, approved);
  const events = [event(at, { $case: 'approvalDecided', approvalDecided: { gate } }, gate.iteration)];
  if (approved) return { to: TaskStatus.TASK_STATUS_CODING, reason: `packages approved by ${gate.approver}`, task: { pendingGateId: '', dependencyDecisions }, decidedGate: gate, events };
  const refused = withVerdict(dependencyDecisions, DependencyVerdict.DEPENDENCY_VERDICT_DENIED).map(packageLabel);
  const reason = `${refused.join(', ')} ${refused.length === 1 ? 'was' : 'were'} refused by ${gate.approver || 'nobody in time'}${gate.comment === '' ? '' : `: ${gate.comment}`}; plan without ${refused.length === 1 ? 'it' : 'them'}`;
  return { to: TaskStatus.TASK_STATUS_PLANNING, reason, task: { pendingGateId: '', dependencyDecisions, replanReason: reason }, decidedGate: gate, events };
}

/**
 * A SAFETY_OVERRIDE gate on packages the change imports, decided: approved,
 * they are installed and the change goes on to the phases after the safety
 * check; refused, the attempt fails as blocked and the reflector and the
 * coder learn to do without them.
 */
function importsDecided(state: TaskState, gate: ApprovalGate, approved: boolean, at: Date): Step {
  const waiting = withVerdict(state.task.dependencyDecisions, DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL).map(packageLabel);
  const dependencyDecisions = gateDecided(state.task.dependencyDecisions, gate, approved);
  const events = [event(at, { $case: 'approvalDecided', approvalDecided: { gate } }, gate.iteration)];
  if (approved) return { to: afterSafety(state.task.phases), reason: `packages approved by ${gate.approver}`, task: { pendingGateId: '', dependencyDecisions }, decidedGate: gate, events };
  const them = waiting.length === 1 ? 'it' : 'them';
  const why = `${waiting.join(', ')} ${waiting.length === 1 ? 'was' : 'were'} refused by ${gate.approver || 'nobody in time'}${gate.comment === '' ? '' : `: ${gate.comment}`}`;
  return {
    to: TaskStatus.TASK_STATUS_REFLECTING,
    reason: why,
    task: { pendingGateId: '', dependencyDecisions },
    iteration: { ...currentIteration(state), error: failure(IterationErrorCode.SAFETY_BLOCKED, `the safety check blocked the code: the change imports packages a person must allow; ${why}; do without ${them}`) },
    decidedGate: gate,
    events,
  };
}

/** A gate with its decision; the approver and comment come with the input. */
function decided(gate: ApprovalGate, decision: ApprovalDecision): ApprovalGate {
  if (gate.decision !== ApprovalDecision.APPROVAL_DECISION_PENDING && gate.decision !== decision) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `gate ${gate.gateId} carries the decision ${ApprovalDecision[gate.decision]}, not ${ApprovalDecision[decision]}`);
  }
  return { ...gate, decision };
}
