import { randomUUID } from 'node:crypto';
import { sumUsage } from '@ratchet/agent';
import type { CallOptions, ServiceClient } from '@ratchet/bus';
import {
  ApprovalDecision,
  ApprovalKind,
  type ApprovalGate,
  LogLevel,
  Phase,
  SafetyVerdict,
  StopReason,
  TaskStatus,
  type CoderServiceDefinition,
  type ErrorDetail,
  type Lesson,
  type MemoryServiceDefinition,
  type PlannerServiceDefinition,
  type ReflectorServiceDefinition,
  type SafetyServiceDefinition,
  type SourceFile,
  type TaskEvent,
  type TesterServiceDefinition,
  type Usage,
} from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { withSpan } from '@ratchet/telemetry';
import { type EffectiveBudget, effectiveBudget, exhaustedBudget, remainingTokens, type BudgetVerdict } from './domain/budget';
import { phaseName, phaseOfStatus } from './domain/phase';
import { failingTestsOf, judgeProgress, ProgressVerdict } from './domain/progress';
import { emptyUsage, type IterationRecord, type TaskRecord } from './domain/records';
import { assertTransition, isTerminal, statusName } from './domain/task-state';
import type { NewEvent, TaskStore } from './adapters/task-store';

/** The services the loop calls, over the bus. */
export interface AgentClients {
  readonly planner: ServiceClient<typeof PlannerServiceDefinition>;
  readonly coder: ServiceClient<typeof CoderServiceDefinition>;
  readonly tester: ServiceClient<typeof TesterServiceDefinition>;
  readonly reflector: ServiceClient<typeof ReflectorServiceDefinition>;
  readonly safety: ServiceClient<typeof SafetyServiceDefinition>;
  readonly memory: ServiceClient<typeof MemoryServiceDefinition>;
}

export interface DriverSettings {
  readonly defaultBudget: EffectiveBudget;
  /** Deadline of one model-backed call (plan, code, tests, reflection), ms. */
  readonly modelCallTimeoutMs: number;
  /** Deadline of one sandboxed test run, ms. */
  readonly testRunTimeoutMs: number;
  /** Deadline of memory and safety calls, ms. */
  readonly serviceCallTimeoutMs: number;
  /** Lessons retrieved before planning and while reflecting. */
  readonly lessonLimit: number;
  /** Lessons scoring below this are not offered. */
  readonly lessonMinScore: number;
  /** Re-plans allowed before no progress ends the task. */
  readonly maxReplans: number;
  /**
   * Times in a row a phase that failed with a retryable error (a service or
   * the database briefly gone) is run again after a backoff (0.5 s doubling
   * to 15 s) before the failure ends the task. Default 0: fail at once, as
   * embedded mode wants when Docker is down.
   */
  readonly maxPauses?: number;
}

/** Publishes stored events to live readers (the bus's task event stream). */
export type EventPublisher = (events: readonly TaskEvent[]) => Promise<void>;

/**
 * Abort reason that stops a driver without recording anything: the task is
 * handed to another orchestrator (shutdown, lost lease) and goes on there.
 */
export const handOver: unique symbol = Symbol('hand over');

/** First and longest pause after a retryable failure, ms. */
const pauseBaseMs = 500;
const pauseMaxMs = 15_000;

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Test output kept per iteration for the reflector and `ratchet show`, in characters. */
const maxOutputChars = 8_000;
/** The safety rule id of a file that does not parse (see services/safety). */
const parseErrorRule = 'parse-error';
/** Label that turns off generated tests: only the user's acceptance tests run. */
export const userTestsOnlyLabel = 'ratchet.dev/tests';

/**
 * Drives tasks through the loop of ARCHITECTURE.md. Each `step` runs the
 * phase the task's status names and persists the transition (task row,
 * iteration, events) before the next phase starts, so the stored status is
 * always the phase to run next.
 */
export class TaskDriver {
  constructor(
    private readonly store: TaskStore,
    private readonly clients: AgentClients,
    private readonly publish: EventPublisher,
    private readonly settings: DriverSettings,
    private readonly now: () => Date = () => new Date(),
    /** Told when a task pauses, so operators see an outage in the logs. */
    private readonly logger?: { warn(details: object, message: string): void },
  ) {}

  /**
   * Runs the task until it ends. An aborted `signal` cancels it (its reason,
   * if a string, is recorded), except with the reason `handOver`, which stops
   * driving and leaves the task as stored for another driver. A retryable
   * failure (a service or the database briefly gone) pauses the task: the
   * stored state is reloaded after a backoff and the phase runs again.
   * Errors that end the task are recorded on it.
   *
   * @throws AppError ABORTED when another orchestrator took the task over
   *   (its lease was lost); CANCELLED when handed over while the database
   *   was unreachable.
   */
  async drive(taskId: string, signal: AbortSignal): Promise<TaskRecord> {
    let task = await this.reload(taskId, signal);
    let pauses = 0;
    while (!isTerminal(task.status)) {
      if (signal.aborted) return signal.reason === handOver ? task : this.finish(task, TaskStatus.TASK_STATUS_CANCELLED, StopReason.STOP_REASON_CANCELLED, cancelReason(signal));
      // A task waiting on a human is left as stored; Approve moves it on and a driver starts again.
      if (task.status === TaskStatus.TASK_STATUS_AWAITING_APPROVAL) return task;
      try {
        const before = task.usage;
        task = await withSpan(`phase ${phaseName(phaseOfStatus(task.status))}`, { attributes: { 'ratchet.task_id': task.id, 'ratchet.iteration': task.currentIteration } }, async (span) => {
          const next = await this.step(task, signal);
          span.setAttribute('ratchet.tokens', next.usage.promptTokens + next.usage.completionTokens - before.promptTokens - before.completionTokens);
          span.setAttribute('ratchet.cost_usd', next.usage.costUsd - before.costUsd);
          return next;
        });
        pauses = 0;
      } catch (error) {
        if (signal.aborted && signal.reason === handOver) return task;
        const appError = AppError.from(error);
        if (appError.code === ErrorCode.ABORTED) throw appError;
        if (signal.aborted) return this.finish(await this.reload(taskId, signal), TaskStatus.TASK_STATUS_CANCELLED, StopReason.STOP_REASON_CANCELLED, cancelReason(signal));
        if (appError.isRetryable && pauses < (this.settings.maxPauses ?? 0)) {
          // What the failed phase did was not stored, so it runs again from the stored state.
          pauses += 1;
          const waitMs = Math.min(pauseMaxMs, pauseBaseMs * 2 ** Math.min(pauses - 1, 6));
          this.logger?.warn({ taskId, status: statusName(task.status), code: appError.code, err: appError.message, pause: pauses, retryInMs: waitMs }, 'task paused');
          await sleepUnlessAborted(waitMs, signal);
          task = await this.reload(taskId, signal);
          continue;
        }
        task = await this.finish(await this.reload(taskId, signal), TaskStatus.TASK_STATUS_FAILED, StopReason.STOP_REASON_ERROR, `${statusName(task.status)} failed: ${appError.code}: ${appError.message}`);
      }
    }
    return task;
  }

  /** The task as stored; waits out a database outage (retryable errors) until `signal` aborts. */
  private async reload(taskId: string, signal: AbortSignal): Promise<TaskRecord> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.store.get(taskId);
      } catch (error) {
        const appError = AppError.from(error);
        if (!appError.isRetryable || signal.aborted) throw signal.aborted && appError.isRetryable ? new AppError(ErrorCode.CANCELLED, `task ${taskId} was handed over while the database was unreachable`, { cause: error }) : appError;
        await sleepUnlessAborted(Math.min(pauseMaxMs, pauseBaseMs * 2 ** Math.min(attempt, 6)), signal);
      }
    }
  }

  private async step(task: TaskRecord, signal: AbortSignal): Promise<TaskRecord> {
    switch (task.status) {
      case TaskStatus.TASK_STATUS_QUEUED:
        task.startedAt = this.now();
        return this.move(task, TaskStatus.TASK_STATUS_RETRIEVING, '', undefined, []);
      case TaskStatus.TASK_STATUS_RETRIEVING:
        return this.retrieve(task, signal);
      case TaskStatus.TASK_STATUS_PLANNING:
        return this.plan(task, signal);
      case TaskStatus.TASK_STATUS_CODING:
        return this.code(task, signal);
      case TaskStatus.TASK_STATUS_SAFETY_CHECK:
        return this.checkSafety(task, signal);
      case TaskStatus.TASK_STATUS_TESTING:
        return this.test(task, signal);
      case TaskStatus.TASK_STATUS_REFLECTING:
        return this.reflect(task, signal);
      case TaskStatus.TASK_STATUS_LEARNING:
        return this.learn(task, signal);
      default:
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} is ${statusName(task.status)}, which this orchestrator does not drive yet`);
    }
  }

  private async retrieve(task: TaskRecord, signal: AbortSignal): Promise<TaskRecord> {
    const started = this.now();
    const response = await this.clients.memory.retrieveLessons(
      { taskId: task.id, query: task.goal, language: task.language, errorSignature: '', tags: [], limit: this.settings.lessonLimit, minScore: this.settings.lessonMinScore },
      this.callOptions(this.settings.serviceCallTimeoutMs, signal),
    );
    task.lessons = response.lessons.flatMap((scored) => (scored.lesson === undefined ? [] : [scored.lesson]));
    const events: NewEvent[] = [
      this.event({
        $case: 'lessonsRetrieved',
        lessonsRetrieved: { phase: Phase.PHASE_RETRIEVING, lessons: response.lessons.map((scored) => ({ lessonId: scored.lesson?.id ?? '', title: scored.lesson?.title ?? '', score: scored.score })) },
      }),
      this.phaseCompleted(Phase.PHASE_RETRIEVING, started, emptyUsage(), `${task.lessons.length} lesson(s) retrieved`),
    ];
    return this.move(task, TaskStatus.TASK_STATUS_PLANNING, '', undefined, events);
  }

  private async plan(task: TaskRecord, signal: AbortSignal): Promise<TaskRecord> {
    const budget = this.budgetOf(task);
    const stop = this.checkBudget(task, budget, true);
    if (stop !== undefined) return this.finish(task, TaskStatus.TASK_STATUS_FAILED, stop.reason, stop.detail);
    const started = this.now();
    const previous = task.currentIteration > 0 ? await this.iteration(task, task.currentIteration) : undefined;
    const response = await this.clients.planner.createPlan(
      {
        taskId: task.id,
        iteration: task.currentIteration + 1,
        goal: task.goal,
        language: task.language,
        workspace: [...task.workspace],
        acceptanceTests: [...task.acceptanceTests],
        lessons: task.lessons,
        previousPlan: task.plan,
        reflection: previous?.reflection,
        replanReason: task.replanReason,
        maxTokens: remainingTokens(budget, task.usage) ?? 0,
      },
      this.callOptions(this.settings.modelCallTimeoutMs, signal),
    );
    if (response.plan === undefined) throw new AppError(ErrorCode.INTERNAL, 'the planner answered without a plan');
    const usage = response.usage ?? emptyUsage();
    task.usage = sumUsage(task.usage, usage);
    task.plan = response.plan;
    // New plan, new tests: tests written for the old design may not fit it.
    task.generatedTests = [];
    task.replanReason = '';
    const iteration = this.newIteration(task, previous, usage);
    return this.move(task, TaskStatus.TASK_STATUS_CODING, '', iteration, [this.phaseCompleted(Phase.PHASE_PLANNING, started, usage, response.plan.summary)]);
  }

  private async code(task: TaskRecord, signal: AbortSignal): Promise<TaskRecord> {
    const budget = this.budgetOf(task);
    const stop = this.checkBudget(task, budget, false);
    if (stop !== undefined) return this.finish(task, TaskStatus.TASK_STATUS_FAILED, stop.reason, stop.detail);
    const iteration = await this.iteration(task, task.currentIteration);
    const previous = task.currentIteration > 1 ? await this.iteration(task, task.currentIteration - 1) : undefined;
    const started = this.now();
    const lessons = uniqueLessons([...task.lessons, ...(previous?.reflectionLessons ?? [])]);
    let response;
    try {
      response = await this.clients.coder.writeCode(
        {
          taskId: task.id,
          iteration: iteration.number,
          goal: task.goal,
          language: task.language,
          plan: task.plan,
          files: previous !== undefined && previous.files.length > 0 ? previous.files : [...task.workspace],
          acceptanceTests: this.testsOf(task),
          reflection: previous?.reflection,
          previousTestReport: previous?.testReport,
          safetyFindings: previous?.safetyFindings ?? [],
          lessons,
          maxTokens: remainingTokens(budget, task.usage) ?? 0,
        },
        this.callOptions(this.settings.modelCallTimeoutMs, signal),
      );
    } catch (error) {
      return this.modelReplyFailed(task, iteration, Phase.PHASE_CODING, started, error);
    }
    const usage = response.usage ?? emptyUsage();
    task.usage = sumUsage(task.usage, usage);
    iteration.usage = sumUsage(iteration.usage, usage);
    iteration.files = response.files;
    iteration.phase = Phase.PHASE_SAFETY_CHECK;
    return this.move(task, TaskStatus.TASK_STATUS_SAFETY_CHECK, '', iteration, [this.phaseCompleted(Phase.PHASE_CODING, started, usage, response.summary)]);
  }

  private async checkSafety(task: TaskRecord, signal: AbortSignal): Promise<TaskRecord> {
    const iteration = await this.iteration(task, task.currentIteration);
    const started = this.now();
    const response = await this.clients.safety.checkCode(
      { taskId: task.id, iteration: iteration.number, language: task.language, files: iteration.files },
      this.callOptions(this.settings.serviceCallTimeoutMs, signal),
    );
    iteration.safetyFindings = response.findings;
    if (response.verdict === SafetyVerdict.SAFETY_VERDICT_BLOCK) {
      iteration.error = { code: 'SAFETY_BLOCKED', message: `the safety check blocked the code: ${response.findings.map((finding) => `${finding.ruleId} at ${finding.path}:${finding.line}`).join(', ')}`, retryable: false, signature: '', detail: '' };
      iteration.phase = Phase.PHASE_REFLECTING;
      return this.move(task, TaskStatus.TASK_STATUS_REFLECTING, 'blocked by the safety check', iteration, [
        this.event({ $case: 'safetyBlocked', safetyBlocked: { verdict: response.verdict, findings: response.findings } }),
        this.phaseCompleted(Phase.PHASE_SAFETY_CHECK, started, emptyUsage(), `blocked: ${response.findings.length} finding(s)`),
      ]);
    }
    iteration.phase = Phase.PHASE_TESTING;
    return this.move(task, TaskStatus.TASK_STATUS_TESTING, '', iteration, [this.phaseCompleted(Phase.PHASE_SAFETY_CHECK, started, emptyUsage(), `${response.findings.length} finding(s), not blocking`)]);
  }

  private async test(task: TaskRecord, signal: AbortSignal): Promise<TaskRecord> {
    const iteration = await this.iteration(task, task.currentIteration);
    const started = this.now();
    const events: NewEvent[] = [];
    if (task.generatedTests.length === 0 && task.labels[userTestsOnlyLabel] !== 'user') {
      const budget = this.budgetOf(task);
      const stop = this.checkBudget(task, budget, false);
      if (stop !== undefined) return this.finish(task, TaskStatus.TASK_STATUS_FAILED, stop.reason, stop.detail);
      let written;
      try {
        written = await this.clients.tester.writeTests(
          {
            taskId: task.id,
            iteration: iteration.number,
            goal: task.goal,
            language: task.language,
            plan: task.plan,
            files: iteration.files,
            existingTests: [],
            acceptanceTests: [...task.acceptanceTests],
            lessons: task.lessons,
            maxTokens: remainingTokens(budget, task.usage) ?? 0,
          },
          this.callOptions(this.settings.modelCallTimeoutMs, signal),
        );
      } catch (error) {
        return this.modelReplyFailed(task, iteration, Phase.PHASE_TESTING, started, error);
      }
      const usage = written.usage ?? emptyUsage();
      task.usage = sumUsage(task.usage, usage);
      iteration.usage = sumUsage(iteration.usage, usage);
      // Model-written tests run in the sandbox too, so they pass the same check as the code.
      const verdict = await this.clients.safety.checkCode(
        { taskId: task.id, iteration: iteration.number, language: task.language, files: written.tests },
        this.callOptions(this.settings.serviceCallTimeoutMs, signal),
      );
      // Tests that are blocked or do not even parse are the tester's fault, not
      // the code's: they are dropped, so the next iteration writes new ones.
      const unparseable = verdict.findings.filter((found) => found.ruleId === parseErrorRule);
      if (verdict.verdict === SafetyVerdict.SAFETY_VERDICT_BLOCK || unparseable.length > 0) {
        const blocked = verdict.verdict === SafetyVerdict.SAFETY_VERDICT_BLOCK;
        iteration.safetyFindings = verdict.findings;
        iteration.error = {
          code: blocked ? 'TESTS_BLOCKED' : 'TESTS_UNPARSEABLE',
          message: blocked
            ? 'the safety check blocked the generated tests; they will be rewritten'
            : `the generated tests do not parse (${unparseable.map((found) => `${found.path}:${found.line}`).join(', ')}); they will be rewritten`,
          retryable: false,
          signature: '',
          detail: '',
        };
        iteration.phase = Phase.PHASE_REFLECTING;
        return this.move(task, TaskStatus.TASK_STATUS_REFLECTING, blocked ? 'generated tests blocked by the safety check' : 'generated tests do not parse', iteration, [
          ...(blocked ? [this.event({ $case: 'safetyBlocked', safetyBlocked: { verdict: verdict.verdict, findings: verdict.findings } })] : []),
          this.phaseCompleted(Phase.PHASE_TESTING, started, usage, iteration.error.message, iteration.error),
        ]);
      }
      task.generatedTests = written.tests;
      task.updatedAt = this.now();
      // Stored before the run, so an orchestrator that dies while the sandbox runs does not ask the tester's model again.
      const stored = await this.store.save({
        task,
        iterations: [],
        iteration,
        events: [this.event({ $case: 'logLine', logLine: { level: LogLevel.LOG_LEVEL_INFO, message: `tester wrote ${written.tests.map((file) => file.path).join(', ')}`, service: 'tester', attributes: {} } })],
      });
      await this.publish(stored);
    }
    const tests = this.testsOf(task);
    if (tests.length === 0) {
      return this.finish(task, TaskStatus.TASK_STATUS_FAILED, StopReason.STOP_REASON_ERROR, 'there are no tests to run: supply acceptance tests or allow generated tests');
    }
    const run = await this.clients.tester.runTests(
      {
        taskId: task.id,
        iteration: iteration.number,
        language: task.language,
        files: mergeFiles(iteration.files, tests),
        testPaths: tests.map((file) => file.path),
        limits: undefined,
        dependencies: [],
      },
      this.callOptions(this.settings.testRunTimeoutMs, signal),
    );
    iteration.testReport = run.report;
    iteration.output = outputOf(run.result?.stdout, run.result?.stderr);
    events.push(
      this.event({
        $case: 'testRunCompleted',
        testRunCompleted: { report: run.report, exitCode: run.result?.exitCode ?? -1, timedOut: run.result?.timedOut ?? false, oomKilled: run.result?.oomKilled ?? false, jobId: run.result?.jobId ?? '', runnerId: run.result?.runnerId ?? '' },
      }),
    );
    const summary = run.report === undefined || !run.report.parsed ? `no test report (${run.report?.parseError ?? 'none'})` : `${run.report.passed}/${run.report.total} tests passed`;
    events.push(this.phaseCompleted(Phase.PHASE_TESTING, started, emptyUsage(), summary));
    if (run.passed) {
      iteration.phase = Phase.PHASE_LEARNING;
      iteration.completedAt = this.now();
      task.resultFiles = mergeFiles(iteration.files, task.generatedTests);
      events.push(this.iterationCompleted(iteration, true, ''));
      if (task.approvalKinds.includes(ApprovalKind.APPROVAL_KIND_FINAL_RESULT)) {
        const gate = this.finalResultGate(task, iteration, summary);
        events.push(this.event({ $case: 'approvalRequested', approvalRequested: { gate } }));
        return this.move(task, TaskStatus.TASK_STATUS_AWAITING_APPROVAL, 'tests passed; waiting for approval of the final result', iteration, events, [], gate);
      }
      return this.move(task, TaskStatus.TASK_STATUS_LEARNING, 'tests passed', iteration, events);
    }
    const why = run.result?.timedOut ? 'the test run timed out' : run.result?.oomKilled ? 'the test run ran out of memory' : summary;
    iteration.error = { code: 'TESTS_FAILED', message: why, retryable: false, signature: '', detail: run.result?.error?.message ?? '' };
    iteration.phase = Phase.PHASE_REFLECTING;
    return this.move(task, TaskStatus.TASK_STATUS_REFLECTING, why, iteration, events);
  }

  private async reflect(task: TaskRecord, signal: AbortSignal): Promise<TaskRecord> {
    const budget = this.budgetOf(task);
    const stop = this.checkBudget(task, budget, false);
    if (stop !== undefined) return this.finish(task, TaskStatus.TASK_STATUS_FAILED, stop.reason, stop.detail);
    const iteration = await this.iteration(task, task.currentIteration);
    const started = this.now();
    const history = await this.store.iterations(task.id);
    const failureText = [iteration.error?.message ?? '', ...failingTestsOf(iteration.testReport)].join('\n');
    const similar = await this.clients.memory.retrieveLessons(
      { taskId: task.id, query: `${task.goal}\n${failureText}`, language: task.language, errorSignature: '', tags: [], limit: this.settings.lessonLimit, minScore: this.settings.lessonMinScore },
      this.callOptions(this.settings.serviceCallTimeoutMs, signal),
    );
    iteration.reflectionLessons = similar.lessons.flatMap((scored) => (scored.lesson === undefined ? [] : [scored.lesson]));
    const response = await this.clients.reflector.reflect(
      {
        taskId: task.id,
        iteration: iteration.number,
        goal: task.goal,
        language: task.language,
        plan: task.plan,
        files: mergeFiles(iteration.files, this.testsOf(task)),
        testReport: iteration.testReport,
        error: iteration.error,
        safetyFindings: iteration.safetyFindings,
        stderrExcerpt: iteration.output,
        previousReflections: history.flatMap((other) => (other.number < iteration.number && other.reflection !== undefined ? [other.reflection] : [])),
        lessons: iteration.reflectionLessons,
        maxTokens: remainingTokens(budget, task.usage) ?? 0,
      },
      this.callOptions(this.settings.modelCallTimeoutMs, signal),
    );
    const reflection = response.reflection;
    if (reflection === undefined) throw new AppError(ErrorCode.INTERNAL, 'the reflector answered without a reflection');
    const usage = response.usage ?? emptyUsage();
    task.usage = sumUsage(task.usage, usage);
    iteration.usage = sumUsage(iteration.usage, usage);
    iteration.reflection = reflection;
    iteration.hypothesis = reflection.hypothesis;
    iteration.fingerprint = { errorSignature: reflection.errorSignature, failingTests: failingTestsOf(iteration.testReport) };
    if (iteration.error !== undefined) iteration.error = { ...iteration.error, signature: reflection.errorSignature };
    const events: NewEvent[] = [];
    if (similar.lessons.length > 0) {
      events.push(
        this.event({
          $case: 'lessonsRetrieved',
          lessonsRetrieved: { phase: Phase.PHASE_REFLECTING, lessons: similar.lessons.map((scored) => ({ lessonId: scored.lesson?.id ?? '', title: scored.lesson?.title ?? '', score: scored.score })) },
        }),
      );
    }
    const recorded = await this.clients.memory.recordFailure(
      {
        taskId: task.id,
        iteration: iteration.number,
        goal: task.goal,
        language: task.language,
        error: iteration.error,
        failureSummary: `${reflection.rootCause} ${reflection.hypothesis}`.trim(),
        candidateLesson: reflection.candidateLesson,
        retrievedLessonIds: task.lessons.map((lesson) => lesson.id),
      },
      this.callOptions(this.settings.serviceCallTimeoutMs, signal),
    );
    iteration.failureId = recorded.failureId;
    if (recorded.lesson !== undefined) {
      events.push(this.event({ $case: 'lessonStored', lessonStored: { lessonId: recorded.lesson.id, title: recorded.lesson.title, created: recorded.lessonCreated } }));
    }
    events.push(this.phaseCompleted(Phase.PHASE_REFLECTING, started, usage, reflection.rootCause));
    iteration.completedAt = this.now();
    events.push(this.iterationCompleted(iteration, false, reflection.errorSignature));

    // Everything above happened in this iteration, though the next one may start below.
    for (const event of events) event.iteration ||= iteration.number;
    const fingerprints = [...history.filter((other) => other.number < iteration.number), iteration].flatMap((other) => (other.fingerprint === undefined ? [] : [other.fingerprint]));
    const progress = judgeProgress(fingerprints);
    if (progress.verdict === ProgressVerdict.STOP) {
      return this.finish(task, TaskStatus.TASK_STATUS_FAILED, StopReason.STOP_REASON_NO_PROGRESS, `the same failure ${progress.repeats} times in a row: ${reflection.errorSignature}`, iteration, events);
    }
    const outOfIterations = exhaustedBudget(budget, this.consumption(task), true);
    if (outOfIterations !== undefined) return this.finish(task, TaskStatus.TASK_STATUS_FAILED, outOfIterations.reason, outOfIterations.detail, iteration, events);
    const replan =
      progress.verdict === ProgressVerdict.REPLAN
        ? `the same failure twice in a row (${reflection.errorSignature})`
        : reflection.replanRecommended && task.replanCount < this.settings.maxReplans
          ? `the reflector recommends a new plan: ${reflection.rootCause}`
          : '';
    if (replan !== '') {
      if (task.replanCount >= this.settings.maxReplans) {
        return this.finish(task, TaskStatus.TASK_STATUS_FAILED, StopReason.STOP_REASON_NO_PROGRESS, `no progress after ${task.replanCount} re-plan(s): ${replan}`, iteration, events);
      }
      task.replanCount += 1;
      task.replanReason = replan;
      return this.move(task, TaskStatus.TASK_STATUS_PLANNING, replan, iteration, events);
    }
    const next = this.newIteration(task, iteration, emptyUsage());
    return this.move(task, TaskStatus.TASK_STATUS_CODING, reflection.fixDirection, next, events, [iteration]);
  }

  private async learn(task: TaskRecord, signal: AbortSignal): Promise<TaskRecord> {
    const started = this.now();
    const history = await this.store.iterations(task.id);
    const last = history[history.length - 1];
    const helped = new Set<string>([...(task.plan?.appliedLessonIds ?? []), ...history.flatMap((iteration) => iteration.reflection?.relevantLessonIds ?? [])]);
    const fixSummary =
      history.length <= 1
        ? `passed on the first attempt: ${task.plan?.summary ?? task.goal}`
        : `fixed after ${history.length} iterations: ${history
            .slice(0, -1)
            .map((iteration) => iteration.reflection?.fixDirection ?? '')
            .filter((text) => text !== '')
            .join(' Then: ')}`;
    const response = await this.clients.memory.recordSuccess(
      {
        taskId: task.id,
        iteration: last?.number ?? task.currentIteration,
        goal: task.goal,
        language: task.language,
        fixSummary,
        helpedLessonIds: [...helped],
        resolvedFailureIds: history.map((iteration) => iteration.failureId).filter((id) => id !== ''),
        iterationsTaken: history.length,
      },
      this.callOptions(this.settings.serviceCallTimeoutMs, signal),
    );
    const events: NewEvent[] = response.updatedLessons.map((lesson) => this.event({ $case: 'lessonStored', lessonStored: { lessonId: lesson.id, title: lesson.title, created: false } }));
    events.push(this.phaseCompleted(Phase.PHASE_LEARNING, started, emptyUsage(), `success recorded; ${response.updatedLessons.length} lesson(s) updated`));
    const report = last?.testReport;
    const detail = report === undefined ? `iteration ${task.currentIteration}` : `${report.passed}/${report.total} tests in iteration ${task.currentIteration}`;
    return this.finish(task, TaskStatus.TASK_STATUS_SUCCEEDED, StopReason.STOP_REASON_TESTS_PASSED, detail, undefined, events);
  }

  /**
   * A model reply that stayed invalid after its repair round is a failed
   * attempt, not a failed task: it goes to the reflector like a test failure.
   * Anything else (unreachable model, bad key) ends the task.
   */
  private async modelReplyFailed(task: TaskRecord, iteration: IterationRecord, phase: Phase, started: Date, error: unknown): Promise<TaskRecord> {
    const appError = AppError.from(error);
    if (appError.code !== ErrorCode.INVALID_ARGUMENT) throw appError;
    iteration.error = { code: 'MODEL_REPLY_INVALID', message: appError.message, retryable: false, signature: '', detail: '' };
    iteration.phase = Phase.PHASE_REFLECTING;
    return this.move(task, TaskStatus.TASK_STATUS_REFLECTING, `the ${phaseName(phase)} reply was invalid`, iteration, [
      this.phaseCompleted(phase, started, emptyUsage(), 'invalid model reply', iteration.error),
    ]);
  }

  /** Starts iteration `task.currentIteration + 1`, checking the iteration budget first (the caller did). */
  private newIteration(task: TaskRecord, previous: IterationRecord | undefined, usage: Usage): IterationRecord {
    task.currentIteration += 1;
    return {
      taskId: task.id,
      number: task.currentIteration,
      phase: Phase.PHASE_CODING,
      ...(task.plan === undefined ? {} : { plan: task.plan }),
      files: previous?.files ?? [],
      safetyFindings: [],
      hypothesis: '',
      retrievedLessonIds: task.lessons.map((lesson) => lesson.id),
      reflectionLessons: [],
      failureId: '',
      output: '',
      usage,
      startedAt: this.now(),
    };
  }

  /** The gate before a passing result is accepted: what passed, and the files, for the approver. */
  private finalResultGate(task: TaskRecord, iteration: IterationRecord, summary: string): ApprovalGate {
    const files = task.resultFiles.map((file) => `- \`${file.path}\` (${Buffer.byteLength(file.content, 'utf8')} bytes)`).join('\n');
    return {
      gateId: randomUUID(),
      taskId: task.id,
      iteration: iteration.number,
      kind: ApprovalKind.APPROVAL_KIND_FINAL_RESULT,
      summary: `Iteration ${iteration.number} passed its tests (${summary}). Approve to accept the result; reject with a comment to have it reworked.`,
      detail: `Goal: ${task.goal}\n\nPlan: ${task.plan?.summary ?? ''}\n\nFiles:\n${files}`,
      decision: ApprovalDecision.APPROVAL_DECISION_PENDING,
      approver: '',
      comment: '',
      requestedAt: this.now(),
      decidedAt: undefined,
    };
  }

  private async move(
    task: TaskRecord,
    to: TaskStatus,
    reason: string,
    iteration: IterationRecord | undefined,
    events: NewEvent[],
    finished: IterationRecord[] = [],
    gate?: ApprovalGate,
  ): Promise<TaskRecord> {
    assertTransition(task.status, to);
    const from = task.status;
    task.status = to;
    task.statusReason = reason;
    task.updatedAt = this.now();
    const all = [...events, this.event({ $case: 'taskStatusChanged', taskStatusChanged: { fromStatus: from, toStatus: to, reason } })];
    const phase = phaseOfStatus(to);
    if (phase !== Phase.PHASE_UNSPECIFIED) all.push(this.event({ $case: 'phaseStarted', phaseStarted: { phase, attempt: 1 } }));
    const stored = await this.store.save({ task, iterations: finished, ...(iteration === undefined ? {} : { iteration }), events: all, ...(gate === undefined ? {} : { gate }) });
    if (gate !== undefined) task.pendingGateId = gate.gateId;
    await this.publish(stored);
    return task;
  }

  private async finish(task: TaskRecord, status: TaskStatus, reason: StopReason, detail: string, iteration?: IterationRecord, events: NewEvent[] = []): Promise<TaskRecord> {
    if (isTerminal(task.status)) return task;
    const from = task.status;
    const now = this.now();
    task.status = status;
    task.stopReason = reason;
    task.statusReason = detail;
    task.updatedAt = now;
    task.completedAt = now;
    const durationMs = now.getTime() - (task.startedAt ?? task.createdAt).getTime();
    const all: NewEvent[] = [
      ...events,
      this.event({ $case: 'taskStatusChanged', taskStatusChanged: { fromStatus: from, toStatus: status, reason: detail } }),
      this.event({
        $case: 'taskCompleted',
        taskCompleted: { status, reason, reasonDetail: detail, usage: task.usage, iterations: task.currentIteration, duration: { seconds: Math.floor(durationMs / 1000), nanos: (durationMs % 1000) * 1e6 } },
      }),
    ];
    const stored = await this.store.save({ task, ...(iteration === undefined ? {} : { iteration }), events: all });
    await this.publish(stored);
    return task;
  }

  private iteration(task: TaskRecord, number: number): Promise<IterationRecord> {
    return this.store.iteration(task.id, number);
  }

  private testsOf(task: TaskRecord): SourceFile[] {
    return [...task.acceptanceTests, ...task.generatedTests];
  }

  private budgetOf(task: TaskRecord): EffectiveBudget {
    return effectiveBudget(task.budget, this.settings.defaultBudget);
  }

  private consumption(task: TaskRecord) {
    return { usage: task.usage, iterations: task.currentIteration, elapsedMs: this.now().getTime() - (task.startedAt ?? task.createdAt).getTime() };
  }

  private checkBudget(task: TaskRecord, budget: EffectiveBudget, startingIteration: boolean): BudgetVerdict | undefined {
    return exhaustedBudget(budget, this.consumption(task), startingIteration);
  }

  private callOptions(timeoutMs: number, signal: AbortSignal): CallOptions {
    return { timeoutMs, signal };
  }

  private event(payload: NonNullable<TaskEvent['payload']>): NewEvent {
    return { time: this.now(), iteration: 0, payload };
  }

  private phaseCompleted(phase: Phase, started: Date, usage: Usage, summary: string, error?: ErrorDetail): NewEvent {
    const durationMs = this.now().getTime() - started.getTime();
    return this.event({
      $case: 'phaseCompleted',
      phaseCompleted: { phase, duration: { seconds: Math.floor(durationMs / 1000), nanos: (durationMs % 1000) * 1e6 }, usage, summary, error },
    });
  }

  private iterationCompleted(iteration: IterationRecord, passed: boolean, signature: string): NewEvent {
    const durationMs = (iteration.completedAt ?? this.now()).getTime() - iteration.startedAt.getTime();
    return this.event({
      $case: 'iterationCompleted',
      iterationCompleted: {
        testsPassed: passed,
        testsPassedCount: iteration.testReport?.passed ?? 0,
        testsTotalCount: iteration.testReport?.total ?? 0,
        errorSignature: signature,
        usage: iteration.usage,
        duration: { seconds: Math.floor(durationMs / 1000), nanos: (durationMs % 1000) * 1e6 },
      },
    });
  }
}

/** Later files replace earlier ones with the same path; result in path order. */
function mergeFiles(...groups: readonly (readonly SourceFile[])[]): SourceFile[] {
  const byPath = new Map<string, SourceFile>();
  for (const group of groups) for (const file of group) byPath.set(file.path, file);
  return [...byPath.values()].sort((left, right) => left.path.localeCompare(right.path));
}

function uniqueLessons(lessons: readonly Lesson[]): Lesson[] {
  const seen = new Set<string>();
  return lessons.filter((lesson) => !seen.has(lesson.id) && seen.add(lesson.id));
}

function outputOf(stdout: Buffer | undefined, stderr: Buffer | undefined): string {
  const text = [stdout?.toString('utf8') ?? '', stderr?.toString('utf8') ?? ''].filter((part) => part !== '').join('\n--- stderr ---\n');
  return text.length > maxOutputChars ? `${text.slice(0, maxOutputChars / 2)}\n...\n${text.slice(-maxOutputChars / 2)}` : text;
}

function cancelReason(signal: AbortSignal): string {
  return typeof signal.reason === 'string' ? signal.reason : 'cancelled';
}
