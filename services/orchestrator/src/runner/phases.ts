import { randomUUID } from 'node:crypto';
import type { CallOptions, ServiceClient } from '@ratchet/bus';
import {
  BanditRun,
  DependencyVerdict,
  Phase,
  SafetyVerdict,
  Severity,
  type ProjectProfile,
  type ReplyFailure,
  type ReviewFinding,
  type CheckCodeRequest,
  type SafetyFinding,
  type SandboxCommand,
  type Usage,
  type CoderServiceDefinition,
  type Lesson,
  type MemoryServiceDefinition,
  type PlannerServiceDefinition,
  type ReflectorServiceDefinition,
  type SafetyServiceDefinition,
  type SourceFile,
  type TesterServiceDefinition,
  type TestReport,
  type ToolStep,
  CoderMode,
  MemoryUse,
  TestEdits,
} from '@ratchet/contracts';
import { failureSignature, memoryScopeOf, mergeFiles } from '@ratchet/agent';
import { AppError, ErrorCode } from '@ratchet/errors';
import { effectiveBudget, remainingTokens, type EffectiveBudget } from '../domain/budget';
import { approvedPackages, installList } from '../domain/dependencies';
import { IterationErrorCode } from '../domain/iteration-errors';
import { InputKind, type TaskInput } from '../domain/inputs';
import { Effect, testsEditable } from '../domain/next-action';
import { baselineFailures, judgeAgainstBaseline } from '../domain/baseline';
import { failingTestsOf, failureEvidence } from '../domain/progress';
import type { IterationRecord, TaskState } from '../domain/records';

/** The services the loop calls, over the bus. */
export interface AgentClients {
  readonly planner: ServiceClient<typeof PlannerServiceDefinition>;
  readonly coder: ServiceClient<typeof CoderServiceDefinition>;
  readonly tester: ServiceClient<typeof TesterServiceDefinition>;
  readonly reflector: ServiceClient<typeof ReflectorServiceDefinition>;
  readonly safety: ServiceClient<typeof SafetyServiceDefinition>;
  readonly memory: ServiceClient<typeof MemoryServiceDefinition>;
  /** Where the agentic coder's tool steps arrive while it works; without it, agent mode is not offered. */
  readonly progress?: ProgressListener;
}

/** A bus subject the coder sends each tool step to while a coding phase runs. */
export interface ProgressListener {
  /**
   * Listens on a new subject for `taskId`'s steps; each is handed to
   * `onStep`, and answered once it resolves (the coder waits for that).
   */
  listen(taskId: string, onStep: (step: ToolStep) => Promise<void>): Promise<{ readonly subject: string; close(): Promise<void> }>;
}

/** Deadlines and retrieval settings of the phases' calls. */
export interface PhaseSettings {
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
  /** Clarifying questions the reprompter may ask a task, over all rounds. */
  readonly maxQuestions: number;
  /** Deadline of one agentic coding phase (workspace tasks), ms. */
  readonly agentPhaseTimeoutMs: number;
  /** Run commands the command policy asks a person about (embedded `--yes`). */
  readonly approveAskedCommands: boolean;
  /** Raise a gate for such commands (a server, where a person can answer); otherwise they are refused. */
  readonly commandGates: boolean;
}

/** Where the task's current phase stands: when its status was stored (or the task loaded, after a restart). */
export interface PhaseContext {
  /**
   * When the phase began: its start as reported (PhaseCompleted's duration),
   * so a phase run again after waiting for a service counts the wait.
   */
  readonly enteredAt: Date;
  /** Stores an input that does not end the phase (a tool step) through `decide`, before the phase goes on. */
  readonly progress: (input: TaskInput) => Promise<void>;
}

/**
 * A call to another service failed in a way worth waiting out (nobody
 * serves it, it is overloaded): the same code, message and retryability,
 * with the service's name for the task's events and failure reason.
 */
export class DependencyError extends AppError {
  constructor(
    /** The service (`memory`), or `database`. */
    readonly dependency: string,
    cause: AppError,
  ) {
    super(cause.code, cause.message, { cause, retryable: cause.isRetryable });
  }
}

/** Runs one effect for a task and returns what it found, as an input for `decide`. It writes nothing. */
export type PhaseRunner = (state: TaskState, signal: AbortSignal, phase: PhaseContext) => Promise<TaskInput>;

/** Test output kept per iteration for the reflector and `ratchet show`, in characters. */
const maxOutputChars = 8_000;
/** The safety rule id of a file that does not parse (see services/safety). */
const parseErrorRule = 'parse-error';

/**
 * The phase runners: each builds its request from the task as stored, calls
 * the services, and turns the answer into an input. A model reply that
 * stayed invalid after its repair round is an input too (a failed attempt);
 * any other failure is thrown, for the effect runner to pause or record.
 */
export function phaseRunners(agents: AgentClients, settings: PhaseSettings, now: () => Date): Readonly<Partial<Record<Effect, PhaseRunner>>> {
  const clients = withServiceNames(agents);
  const model = (signal: AbortSignal): CallOptions => ({ timeoutMs: settings.modelCallTimeoutMs, signal });
  const service = (signal: AbortSignal): CallOptions => ({ timeoutMs: settings.serviceCallTimeoutMs, signal });
  const tokensLeft = (state: TaskState) => remainingTokens(effectiveBudget(state.task.budget, settings.defaultBudget), state.task.usage) ?? 0;
  const testsOf = (state: TaskState): SourceFile[] => [...state.task.acceptanceTests, ...state.task.generatedTests];
  /** The tests the model may not edit: all of them, or only the generated ones when the goal may change the user's. */
  const protectedTestsOf = (state: TaskState): SourceFile[] => (testsEditable(state.task) ? [...state.task.generatedTests] : testsOf(state));
  const replyInvalid = (error: unknown, phase: Phase, startedAt: Date): TaskInput => {
    const appError = AppError.from(error);
    if (appError.code !== ErrorCode.INVALID_ARGUMENT) throw appError;
    return { kind: InputKind.REPLY_INVALID, at: now(), startedAt, phase, message: appError.message, truncated: false, usage: usageOf(undefined) };
  };
  /** A role that could not use its model's reply: a failed attempt, its tokens counted. */
  const replyFailed = (failure: ReplyFailure, usage: Usage | undefined, phase: Phase, startedAt: Date): TaskInput => ({
    kind: InputKind.REPLY_INVALID,
    at: now(),
    startedAt,
    phase,
    message: failure.message,
    truncated: failure.truncated,
    usage: usageOf(usage),
  });
  /** A planner or reflector reply that could not be used ends the task, its tokens counted. */
  const roleFailed = (role: string, failure: ReplyFailure, usage: Usage | undefined): TaskInput => ({
    kind: InputKind.ERRORED,
    at: now(),
    code: IterationErrorCode.MODEL_REPLY_INVALID,
    message: `the ${role}'s reply could not be used: ${failure.message}`,
    usage: usageOf(usage),
  });

  /**
   * The code check of the attempt's change. Bandit's scan of the changed
   * Python files is deferred to the test job (a sandbox that starts anyway)
   * unless an audit comes first, which reads the scanners' findings.
   */
  const codeCheckOf = (state: TaskState, iteration: IterationRecord, banditRun: BanditRun): CheckCodeRequest => {
    // In a workspace task only what the coder changed is new code; the user's own files are theirs.
    const changed = changedFiles(state.task, iteration);
    // Judge the change, not the project: the changed files' originals are the baseline, and what they already had never blocks.
    const baseFiles = originalsOf(state.task, changed);
    return { taskId: state.task.id, iteration: iteration.number, language: state.task.language, files: changed, baseFiles, banditRun, banditGateOutput: Buffer.alloc(0) };
  };
  const banditInTests = (state: TaskState) => !state.task.phases.audit;

  /** Runs the task's tests (acceptance and generated) on `files`: the attempt's, or the original workspace's for the baseline. */
  const runTestsOn = (state: TaskState, files: readonly SourceFile[], iteration: number, signal: AbortSignal, gate?: SandboxCommand) => {
    const tests = testsOf(state);
    // Tests the goal may change run as the coder left them; protected ones as given, whatever the coder wrote.
    const all = testsEditable(state.task) ? mergeFiles(state.task.acceptanceTests, files, state.task.generatedTests) : mergeFiles(files, tests);
    return clients.tester.runTests(
      {
        taskId: state.task.id,
        iteration,
        language: state.task.language,
        files: all,
        testPaths: tests.map((file) => file.path),
        limits: undefined,
        dependencies: installList(state.task),
        testCommand: [...state.task.testCommand],
        dataFiles: [...state.task.dataFiles],
        setupCommand: state.task.setupCommand,
        ...(gate === undefined ? {} : { gate }),
      },
      { timeoutMs: settings.testRunTimeoutMs, signal },
    );
  };
  /**
   * The baseline: the tests on the workspace as sent, after the workspace's
   * setup. A run that could not report is kept unparsed, which is no
   * baseline (every failure then counts, as before); a setup that failed is
   * `setupFailed`, with its reason and the end of its output.
   */
  const runBaseline = async (state: TaskState, signal: AbortSignal): Promise<{ report: TestReport; setupFailed?: string }> => {
    const run = await runTestsOn(state, state.task.workspace, 0, signal);
    const setup = run.result?.setup;
    const report = run.report?.parsed === true ? run.report : unparsedReport(run.report?.parseError || 'the baseline run wrote no test report');
    if (setup !== undefined && setup.error !== '') return { report, setupFailed: setupFailureText(setup.error, setup.log) };
    return { report };
  };

  return {
    [Effect.REPROMPT]: async (state, signal, phase) => {
      const { task } = state;
      const startedAt = phase.enteredAt;
      // The questions a task may be asked are counted over all rounds; with none left (or questions off) the spec states its assumptions.
      const maxQuestions = task.phases.questions ? Math.max(0, settings.maxQuestions - task.questions.length) : 0;
      const response = await clients.planner.reprompt(
        {
          taskId: task.id,
          goal: task.goal,
          language: task.language,
          profile: task.profile,
          workspace: [...task.workspace],
          acceptanceTests: [...task.acceptanceTests],
          answered: [...task.questions],
          maxQuestions,
          maxTokens: tokensLeft(state),
        },
        model(signal),
      );
      if (response.replyFailure !== undefined) return roleFailed('reprompter', response.replyFailure, response.usage);
      const usage = usageOf(response.usage);
      // Numbering and capping the questions is decide's: the same reply always becomes the same questions.
      if (response.questions.length > 0 && maxQuestions > 0) return { kind: InputKind.QUESTION_ASKED, at: now(), startedAt, usage, questions: response.questions };
      if (response.spec === undefined) throw new AppError(ErrorCode.INTERNAL, 'the reprompter answered without a spec');
      return { kind: InputKind.REPROMPTED, at: now(), startedAt, usage, spec: response.spec };
    },

    [Effect.REVIEW]: async (state, signal, phase) => {
      const { task } = state;
      const iteration = current(state);
      const startedAt = phase.enteredAt;
      const change = changeOf(task, iteration);
      const response = await clients.reflector.review(
        { taskId: task.id, iteration: iteration.number, goal: task.goal, language: task.language, spec: task.spec, plan: task.plan, ...change, maxTokens: tokensLeft(state) },
        model(signal),
      );
      // A review is advice: one whose reply could not be used is recorded as such, and the change goes on to the tests.
      if (response.replyFailure !== undefined) {
        const unused = { severity: Severity.SEVERITY_INFO, path: '', line: 0, category: 'review', cwe: '', message: `the reviewer's reply could not be used: ${response.replyFailure.message}`, suggestion: '', blocking: false, source: 'reviewer' };
        return { kind: InputKind.REVIEWED, at: now(), startedAt, usage: usageOf(response.usage), findings: [unused], summary: 'review not used' };
      }
      return { kind: InputKind.REVIEWED, at: now(), startedAt, usage: usageOf(response.usage), findings: response.findings, summary: response.summary };
    },

    [Effect.AUDIT]: async (state, signal, phase) => {
      const { task } = state;
      const iteration = current(state);
      const startedAt = phase.enteredAt;
      const response = await clients.reflector.audit(
        { taskId: task.id, iteration: iteration.number, goal: task.goal, language: task.language, ...changeOf(task, iteration), scannerFindings: changeFindings(iteration), maxTokens: tokensLeft(state) },
        model(signal),
      );
      // An audit never lets unaudited code through: a reply it could not use fails the attempt.
      if (response.replyFailure !== undefined) return replyFailed(response.replyFailure, response.usage, Phase.PHASE_AUDITING, startedAt);
      return { kind: InputKind.AUDITED, at: now(), startedAt, usage: usageOf(response.usage), findings: response.findings, summary: response.summary };
    },

    [Effect.RETRIEVE]: async ({ task }, signal, phase) => {
      const startedAt = phase.enteredAt;
      // A task with memory off is measured without lessons: it neither reads nor adds any.
      if (task.memory === MemoryUse.MEMORY_USE_OFF) return { kind: InputKind.LESSONS_RETRIEVED, at: now(), startedAt, lessons: [] };
      // Memory counts what it returns as retrieved: a repeat of this phase on the same state counts nothing twice.
      const response = await clients.memory.retrieveLessons(
        { taskId: task.id, query: task.goal, ...lessonQuery(task, settings), idempotencyKey: effectKey(task.id, task.currentIteration, 'retrieve') },
        service(signal),
      );
      return { kind: InputKind.LESSONS_RETRIEVED, at: now(), startedAt, lessons: response.lessons };
    },

    // The project's tests on the original workspace, once per task, before the planner's model call: what fails before any
    // change is pre-existing, never the attempt's failure; a setup that fails ends the task here, with nothing spent.
    [Effect.BASELINE]: async (state, signal, phase) => {
      const baseline = await runBaseline(state, signal);
      if (baseline.setupFailed !== undefined) return { kind: InputKind.ERRORED, at: now(), code: IterationErrorCode.SETUP_FAILED, message: baseline.setupFailed };
      return { kind: InputKind.BASELINE_RAN, at: now(), startedAt: phase.enteredAt, report: baseline.report };
    },

    [Effect.PLAN]: async (state, signal, phase) => {
      const { task } = state;
      const startedAt = phase.enteredAt;
      const previous = iterationOf(state, task.currentIteration);
      const response = await clients.planner.createPlan(
        {
          taskId: task.id,
          iteration: task.currentIteration + 1,
          goal: task.goal,
          language: task.language,
          workspace: [...task.workspace],
          acceptanceTests: [...task.acceptanceTests],
          // A re-plan sees the lessons the reflector was shown for the failure, as the next coder does.
          lessons: uniqueLessons([...task.lessons, ...(previous?.reflectionLessons ?? [])]),
          previousPlan: task.plan,
          reflection: previous?.reflection,
          replanReason: task.replanReason,
          // A re-plan names what failed; when the attempt recorded no error of its own (a refused package, say), the reason for re-planning is the failure.
          previousFailure: previous === undefined || task.replanReason === '' ? '' : failureEvidence(previous.testReport, previous.error?.message || task.replanReason, previous.output),
          maxTokens: tokensLeft(state),
          // Whether the goal asks to change a workspace's own tests is judged once, on the first plan: a re-plan after failures must not unlock them.
          judgeTestEdits: task.plan === undefined && task.testEdits === TestEdits.TEST_EDITS_UNSPECIFIED && task.workspace.length > 0 && task.acceptanceTests.length > 0,
          spec: task.spec,
          profile: task.profile,
        },
        model(signal),
      );
      if (response.replyFailure !== undefined) return roleFailed('planner', response.replyFailure, response.usage);
      if (response.plan === undefined) throw new AppError(ErrorCode.INTERNAL, 'the planner answered without a plan');
      const plan = task.plan === undefined ? response.plan : { ...response.plan, changesTests: task.plan.changesTests, changesTestsReason: task.plan.changesTestsReason };
      return { kind: InputKind.PLANNED, at: now(), startedAt, usage: usageOf(response.usage), plan, lookups: response.lookups };
    },

    // The packages the stored plan declares are judged before any code is written: a person approves them now, or the task ends on a denied one.
    [Effect.JUDGE_PACKAGES]: async ({ task }, signal, phase) => {
      const dependencies = task.plan?.dependencies ?? [];
      const checked = await clients.safety.checkDependencies({ taskId: task.id, language: task.language, dependencies, files: [], approved: approvedPackages(task), baseFiles: [] }, service(signal));
      return { kind: InputKind.PACKAGES_JUDGED, at: now(), startedAt: phase.enteredAt, dependencies: checked.decisions, gateId: randomUUID() };
    },

    [Effect.CODE]: async (state, signal, phase) => {
      const { task } = state;
      const iteration = current(state);
      const previous = iterationOf(state, task.currentIteration - 1);
      const startedAt = phase.enteredAt;
      // A workspace task is worked on through tools over a sandbox session; a greenfield one as the coder is configured.
      const agent = task.workspace.length > 0 && clients.progress !== undefined;
      // Tests the goal may change are files to work on like the others; the rest stay protected.
      const editable = testsEditable(task);
      const protectedTests = protectedTestsOf(state);
      // Greenfield goals may use the agent too (coder.mode: agent), so its steps have somewhere to go either way.
      const listening = await clients.progress?.listen(task.id, (step) => phase.progress({ kind: InputKind.TOOL_STEP, at: now(), step }));
      try {
        const response = await clients.coder.writeCode(
          {
            taskId: task.id,
            iteration: iteration.number,
            goal: task.goal,
            language: task.language,
            plan: task.plan,
            // The iteration starts from the previous one's files (or the change kept at a command gate); the first from the workspace, or the profile's starting files.
            files: iteration.files.length > 0 ? [...iteration.files] : task.workspace.length === 0 ? startingFiles(task.profile) : editable ? mergeFiles(task.workspace, task.acceptanceTests) : [...task.workspace],
            acceptanceTests: protectedTests,
            reflection: previous?.reflection,
            previousTestReport: previous?.testReport,
            safetyFindings: changeFindings(previous),
            lessons: uniqueLessons([...task.lessons, ...(previous?.reflectionLessons ?? [])]),
            maxTokens: tokensLeft(state),
            mode: agent ? CoderMode.CODER_MODE_AGENT : CoderMode.CODER_MODE_UNSPECIFIED,
            testCommand: [...task.testCommand],
            maxModelCalls: 0,
            protectedPaths: protectedTests.map((file) => file.path),
            progressSubject: listening?.subject ?? '',
            approveAskedCommands: settings.approveAskedCommands,
            commandGates: settings.commandGates,
            commandDecisions: [...task.commandDecisions],
            spec: task.spec,
            profile: task.profile,
            // What the review or the audit of the previous attempt blocked on: this attempt fixes it.
            reviewFindings: blockingFindings(previous),
            dataFiles: [...task.dataFiles],
            preExistingFailures: baselineFailures(task.baselineReport),
            earlierChanges: previous === undefined || task.workspace.length === 0 ? [] : changedPaths(task, previous),
            setupCommand: task.setupCommand,
            existingProject: task.workspace.length > 0,
          },
          agent ? { timeoutMs: settings.agentPhaseTimeoutMs, signal } : model(signal),
        );
        if (response.replyFailure !== undefined) return replyFailed(response.replyFailure, response.usage, Phase.PHASE_CODING, startedAt);
        if (response.pendingCommand !== undefined) {
          const { commandLine, reason } = response.pendingCommand;
          return { kind: InputKind.COMMAND_ASKED, at: now(), startedAt, usage: usageOf(response.usage), gateId: randomUUID(), commandLine, reason, files: response.files };
        }
        return { kind: InputKind.CODED, at: now(), startedAt, usage: usageOf(response.usage), files: response.files, summary: response.summary, disputes: response.disputedTests };
      } catch (error) {
        return replyInvalid(error, Phase.PHASE_CODING, startedAt);
      } finally {
        await listening?.close();
      }
    },

    [Effect.CHECK_SAFETY]: async (state, signal, phase) => {
      const iteration = current(state);
      const startedAt = phase.enteredAt;
      const check = codeCheckOf(state, iteration, banditInTests(state) ? BanditRun.BANDIT_RUN_DEFERRED : BanditRun.BANDIT_RUN_UNSPECIFIED);
      const { files: changed, baseFiles } = check;
      // The gate it may answer with is asked for again when the tests run: this check only has to pass.
      const response = await clients.safety.checkCode(check, service(signal));
      // Imports of packages the plan did not declare: the new code is read, and the other files' paths say which modules are the project's own.
      const imports = await clients.safety.checkDependencies(
        { taskId: state.task.id, language: state.task.language, dependencies: installList(state.task), files: withPathsOf(changed, iteration.files), approved: approvedPackages(state.task), baseFiles },
        service(signal),
      );
      const findings = [...response.findings, ...imports.findings];
      const undeclared = imports.decisions.filter((decision) => !decision.declared && decision.verdict === DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED);
      // Only packages are asked about: the code check's findings either block or do not.
      const waiting = imports.decisions.filter((decision) => decision.verdict === DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL);
      const codeBlocked = response.verdict === SafetyVerdict.SAFETY_VERDICT_BLOCK || response.verdict === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL;
      const importsAsk = imports.verdict === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL && waiting.length > 0;
      if (codeBlocked || imports.verdict === SafetyVerdict.SAFETY_VERDICT_BLOCK || (imports.verdict === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL && !importsAsk)) {
        return { kind: InputKind.SAFETY_BLOCKED, at: now(), startedAt, verdict: SafetyVerdict.SAFETY_VERDICT_BLOCK, findings };
      }
      if (importsAsk) return { kind: InputKind.SAFETY_ASKED, at: now(), startedAt, findings, undeclared, waiting, gateId: randomUUID() };
      return { kind: InputKind.SAFETY_PASSED, at: now(), startedAt, findings, undeclared };
    },

    [Effect.WRITE_TESTS]: async (state, signal, phase) => {
      const { task } = state;
      const iteration = current(state);
      const startedAt = phase.enteredAt;
      let written;
      try {
        written = await clients.tester.writeTests(
          {
            taskId: task.id,
            iteration: iteration.number,
            goal: task.goal,
            language: task.language,
            plan: task.plan,
            files: [...iteration.files],
            existingTests: [],
            acceptanceTests: [...task.acceptanceTests],
            lessons: [...task.lessons],
            maxTokens: tokensLeft(state),
            // After a dispute, the tester learns which of its tests were wrong and why.
            disputes: [...(iteration.reflection?.disputedTests ?? [])],
            spec: task.spec,
            profile: task.profile,
          },
          model(signal),
        );
      } catch (error) {
        return replyInvalid(error, Phase.PHASE_TESTING, startedAt);
      }
      if (written.replyFailure !== undefined) return replyFailed(written.replyFailure, written.usage, Phase.PHASE_TESTING, startedAt);
      // Stored as written; the code check comes before they run (RUN_TESTS), so a check that must wait never asks the model again.
      return { kind: InputKind.TESTS_WRITTEN, at: now(), startedAt, usage: usageOf(written.usage), tests: written.tests };
    },

    [Effect.RUN_TESTS]: async (state, signal, phase) => {
      const iteration = current(state);
      // The TESTING phase began before the tests were written, when there were some to write.
      const startedAt = phase.enteredAt;
      // Model-written tests run in the sandbox too, so they pass the same check as the code (a file's Bandit report is kept: once per version).
      const generated = state.task.generatedTests;
      if (generated.length > 0) {
        const verdict = await clients.safety.checkCode(
          { taskId: state.task.id, iteration: iteration.number, language: state.task.language, files: [...generated], baseFiles: [], banditRun: BanditRun.BANDIT_RUN_UNSPECIFIED, banditGateOutput: Buffer.alloc(0) },
          service(signal),
        );
        const unparseable = verdict.findings.filter((found) => found.ruleId === parseErrorRule);
        const blocked = verdict.verdict === SafetyVerdict.SAFETY_VERDICT_BLOCK;
        if (blocked || unparseable.length > 0) return { kind: InputKind.TESTS_REJECTED, at: now(), startedAt, usage: usageOf(undefined), blocked, verdict: verdict.verdict, findings: verdict.findings, unparseable };
      }
      // Bandit's scan of the change, deferred by the safety check, runs first in the same sandbox; a finding that would block stops the tests.
      const deferred = banditInTests(state) ? codeCheckOf(state, iteration, BanditRun.BANDIT_RUN_DEFERRED) : undefined;
      const gate = deferred === undefined ? undefined : (await clients.safety.checkCode(deferred, service(signal))).banditGate;
      let run = await runTestsOn(state, iteration.files, iteration.number, signal, gate);
      let safetyFindings: SafetyFinding[] | undefined;
      if (deferred !== undefined && gate !== undefined) {
        // The gate's report goes to the code check, which judges it as if it had run Bandit itself.
        const checked = await clients.safety.checkCode({ ...deferred, banditRun: BanditRun.BANDIT_RUN_REPORTED, banditGateOutput: run.gateOutput }, service(signal));
        safetyFindings = withNewFindings(iteration.safetyFindings, checked.findings);
        if (checked.verdict === SafetyVerdict.SAFETY_VERDICT_BLOCK || checked.verdict === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL) {
          return { kind: InputKind.SAFETY_BLOCKED, at: now(), startedAt, verdict: SafetyVerdict.SAFETY_VERDICT_BLOCK, findings: safetyFindings, phase: Phase.PHASE_TESTING };
        }
        // The gate stops the tests only for what the check blocks; should the two disagree, the tests run again without it.
        const gateStopped = run.gateResult !== undefined && run.gateResult.exitCode !== 0 && (run.result?.commandResults.length ?? 0) === 0;
        if (gateStopped) run = await runTestsOn(state, iteration.files, iteration.number, signal);
      }
      const result = run.result;
      const ran = {
        at: now(),
        startedAt,
        ...(run.report === undefined ? {} : { report: run.report }),
        output: outputOf(result?.stdout, result?.stderr),
        exitCode: result?.exitCode ?? -1,
        timedOut: result?.timedOut ?? false,
        oomKilled: result?.oomKilled ?? false,
        jobId: result?.jobId ?? '',
        runnerId: result?.runnerId ?? '',
        errorMessage: result?.error?.message ?? '',
        ...(result?.install === undefined ? {} : { install: result.install }),
        ...(safetyFindings === undefined ? {} : { safetyFindings }),
      };
      // Judged against the baseline: failures that were there before the change do not fail a change that fixes what the goal is about.
      const passed = judgeAgainstBaseline(state.task.baselineReport, run.report, run.passed).passed;
      return passed ? { kind: InputKind.TESTS_PASSED, gateId: randomUUID(), ...ran } : { kind: InputKind.TESTS_FAILED, ...ran };
    },

    [Effect.REFLECT]: async (state, signal, phase) => {
      const { task } = state;
      const iteration = current(state);
      const startedAt = phase.enteredAt;
      // A reply the role could not use says nothing about the code: the reflector advises on it, but memory learns nothing from it.
      const replyFailure = iteration.error?.code === IterationErrorCode.MODEL_REPLY_INVALID;
      const failureText = [iteration.error?.message ?? '', ...failingTestsOf(iteration.testReport)].join('\n');
      const memoryOff = task.memory === MemoryUse.MEMORY_USE_OFF;
      // The signature the reflector files its lesson under: the same failure seen before finds that lesson exactly.
      const errorSignature = failureSignature(iteration.testReport, iteration.error, changeFindings(iteration));
      const similar =
        replyFailure || memoryOff
          ? { lessons: [] }
          : await clients.memory.retrieveLessons(
              { taskId: task.id, query: `${task.goal}\n${failureText}`, ...lessonQuery(task, settings, errorSignature), idempotencyKey: effectKey(task.id, iteration.number, 'reflect-lessons') },
              service(signal),
            );
      // A workspace task's reflector sees what the coder changed and the tests, not the whole repository.
      const code = changedFiles(task, iteration);
      const response = await clients.reflector.reflect(
        {
          taskId: task.id,
          iteration: iteration.number,
          goal: task.goal,
          language: task.language,
          plan: task.plan,
          files: mergeFiles(code, testsOf(state)),
          testReport: iteration.testReport,
          error: iteration.error,
          safetyFindings: changeFindings(iteration),
          stderrExcerpt: iteration.output,
          previousReflections: state.iterations.flatMap((other) => (other.number < iteration.number && other.reflection !== undefined ? [other.reflection] : [])),
          lessons: similar.lessons.flatMap((scored) => (scored.lesson === undefined ? [] : [scored.lesson])),
          maxTokens: tokensLeft(state),
          testDisputes: [...iteration.testDisputes],
          reviewFindings: blockingFindings(iteration),
        },
        model(signal),
      );
      if (response.replyFailure !== undefined) return roleFailed('reflector', response.replyFailure, response.usage);
      const reflection = response.reflection;
      if (reflection === undefined) throw new AppError(ErrorCode.INTERNAL, 'the reflector answered without a reflection');
      if (replyFailure || memoryOff) return { kind: InputKind.REFLECTED, at: now(), startedAt, usage: usageOf(response.usage), reflection, similarLessons: [...similar.lessons], failureId: '' };
      const recorded = await clients.memory.recordFailure(
        {
          taskId: task.id,
          iteration: iteration.number,
          goal: task.goal,
          language: task.language,
          error: iteration.error === undefined ? undefined : { ...iteration.error, signature: reflection.errorSignature },
          failureSummary: `${reflection.rootCause} ${reflection.hypothesis}`.trim(),
          candidateLesson: reflection.candidateLesson,
          retrievedLessonIds: task.lessons.map((lesson) => lesson.id),
          scope: memoryScopeOf(task.team, task.project),
          // What the plan and the reflections so far (this one included) said they applied: it did not prevent this failure.
          appliedLessonIds: appliedLessons(task, [...state.iterations.filter((other) => other.number !== iteration.number), { ...iteration, reflection }]),
          // This phase run again (its result lost to a failed save, another replica taking over) records nothing twice.
          idempotencyKey: effectKey(task.id, iteration.number, 'reflect'),
        },
        service(signal),
      );
      return {
        kind: InputKind.REFLECTED,
        at: now(),
        startedAt,
        usage: usageOf(response.usage),
        reflection,
        similarLessons: similar.lessons,
        failureId: recorded.failureId,
        ...(recorded.lesson === undefined ? {} : { storedLesson: { id: recorded.lesson.id, title: recorded.lesson.title, created: recorded.lessonCreated } }),
      };
    },

    [Effect.LEARN]: async ({ task, iterations }, signal, phase) => {
      const startedAt = phase.enteredAt;
      if (task.memory === MemoryUse.MEMORY_USE_OFF) return { kind: InputKind.LEARNED, at: now(), startedAt, updatedLessons: [] };
      const last = iterations.at(-1);
      const helped = appliedLessons(task, iterations);
      // What worked in the loop's own words: the reflections' fixes, or the plan (the goal's text would make every similar goal match it).
      const fixes = iterations
        .slice(0, -1)
        .map((iteration) => iteration.reflection?.fixDirection ?? '')
        .filter((text) => text !== '')
        .join(' Then: ');
      const approach = task.plan?.summary ?? 'The plan';
      const fixSummary = iterations.length <= 1 ? `${approach} (passed on the first attempt)` : `${fixes || approach} (fixed after ${iterations.length} iterations)`;
      const response = await clients.memory.recordSuccess(
        {
          taskId: task.id,
          iteration: last?.number ?? task.currentIteration,
          goal: task.goal,
          language: task.language,
          fixSummary,
          helpedLessonIds: [...helped],
          resolvedFailureIds: iterations.map((iteration) => iteration.failureId).filter((id) => id !== ''),
          iterationsTaken: iterations.length,
          scope: memoryScopeOf(task.team, task.project),
          idempotencyKey: effectKey(task.id, last?.number ?? task.currentIteration, 'learn'),
        },
        service(signal),
      );
      return { kind: InputKind.LEARNED, at: now(), startedAt, updatedLessons: response.updatedLessons.map((lesson) => ({ id: lesson.id, title: lesson.title })) };
    },
  };
}

/**
 * The key of an effect that writes elsewhere: the same for every run of
 * one phase of one iteration, so the receiver can tell a repeat from a new
 * call. Iteration numbers go on across a resume, so a key is never reused.
 */
export function effectKey(taskId: string, iteration: number, phase: string): string {
  return `${taskId}:${iteration}:${phase}`;
}

/**
 * The clients with each one's failures worth waiting out turned into
 * DependencyErrors naming its service (`createClient` makes plain objects of
 * methods); the progress listener is left as it is.
 */
function withServiceNames(clients: AgentClients): AgentClients {
  const named = <C extends object>(service: string, client: C): C =>
    Object.fromEntries(
      Object.entries(client).map(([method, call]) => [
        method,
        (...args: unknown[]) =>
          (call as (...args: unknown[]) => Promise<unknown>)(...args).catch((error: unknown) => {
            const appError = AppError.from(error);
            throw appError.isRetryable && !(appError instanceof DependencyError) ? new DependencyError(service, appError) : appError;
          }),
      ]),
    ) as C;
  return {
    planner: named('planner', clients.planner),
    coder: named('coder', clients.coder),
    tester: named('tester', clients.tester),
    reflector: named('reflector', clients.reflector),
    safety: named('safety', clients.safety),
    memory: named('memory', clients.memory),
    ...(clients.progress === undefined ? {} : { progress: clients.progress }),
  };
}

/** How a task searches memory: its project's scope and the global one (or its project's only), its language, the configured limits, and the failure's signature while reflecting. */
function lessonQuery(task: TaskState['task'], settings: PhaseSettings, errorSignature = '') {
  return {
    language: task.language,
    errorSignature,
    tags: [],
    limit: settings.lessonLimit,
    minScore: settings.lessonMinScore,
    scope: memoryScopeOf(task.team, task.project),
    scopeOnly: task.memory === MemoryUse.MEMORY_USE_PROJECT_ONLY,
  };
}

/** Lessons the task's plan or its reflections said they applied. */
function appliedLessons(task: TaskState['task'], iterations: readonly IterationRecord[]): string[] {
  return [...new Set([...(task.plan?.appliedLessonIds ?? []), ...iterations.flatMap((iteration) => iteration.reflection?.relevantLessonIds ?? [])])];
}

/** The iteration's files that are not the workspace's own as it was sent: all of them for a greenfield task. */
function changedFiles(task: TaskState['task'], iteration: IterationRecord): SourceFile[] {
  if (task.workspace.length === 0) return [...iteration.files];
  const original = new Map([...task.workspace, ...task.acceptanceTests].map((file) => [file.path, file.content]));
  return iteration.files.filter((file) => original.get(file.path) !== file.content);
}

/** The paths `iteration` changed, added or deleted in the workspace as sent. */
function changedPaths(task: TaskState['task'], iteration: IterationRecord): string[] {
  const now = new Set(iteration.files.map((file) => file.path));
  const deleted = iteration.files.length === 0 ? [] : task.workspace.filter((file) => !now.has(file.path)).map((file) => file.path);
  return [...changedFiles(task, iteration).map((file) => file.path), ...deleted].sort();
}

/** The original versions of `changed` files that the workspace (or its tests) had: the baseline a change is judged against. */
function originalsOf(task: TaskState['task'], changed: readonly SourceFile[]): SourceFile[] {
  const original = new Map([...task.workspace, ...task.acceptanceTests].map((file) => [file.path, file]));
  return changed.flatMap((file) => original.get(file.path) ?? []);
}

/** The safety findings of `iteration` that its change introduced: pre-existing ones are the project's, never the model's to fix. */
function changeFindings(iteration: IterationRecord | undefined): SafetyFinding[] {
  return (iteration?.safetyFindings ?? []).filter((found) => !found.preExisting);
}

/**
 * What a reviewer reads: the files the coder changed, each with the version
 * it started from (a diff). A workspace task starts from the workspace; a
 * greenfield task from its profile's starting files, so those it kept as
 * given are not shown as new code of this change; without a profile its
 * files are all new.
 */
function changeOf(task: TaskState['task'], iteration: IterationRecord): { baseFiles: SourceFile[]; files: SourceFile[] } {
  const base = task.workspace.length === 0 ? startingFiles(task.profile) : [...task.workspace, ...task.acceptanceTests];
  const original = new Map(base.map((file) => [file.path, file.content]));
  const files = iteration.files.filter((file) => original.get(file.path) !== file.content);
  const paths = new Set(files.map((file) => file.path));
  return { baseFiles: base.filter((file) => paths.has(file.path)), files };
}

/** The review and audit findings that blocked `iteration`, for the reflector and the next attempt's coder. */
/** A report that says why there is none: counts zero, `parsed` false. */
function unparsedReport(parseError: string): TestReport {
  return { framework: '', total: 0, passed: 0, failed: 0, errored: 0, skipped: 0, cases: [], parsed: false, parseError };
}

/** `earlier` (the safety check's, its dependency findings among them) and what `later` found besides. */
function withNewFindings(earlier: readonly SafetyFinding[], later: readonly SafetyFinding[]): SafetyFinding[] {
  const keyOf = (finding: SafetyFinding) => `${finding.ruleId}\0${finding.path}\0${finding.line}\0${finding.message}`;
  const known = new Set(earlier.map(keyOf));
  return [...earlier, ...later.filter((finding) => !known.has(keyOf(finding)))];
}

function blockingFindings(iteration: IterationRecord | undefined): ReviewFinding[] {
  return [...(iteration?.reviewFindings ?? []), ...(iteration?.auditFindings ?? [])].filter((found) => found.blocking);
}

/** The files a profile starts a greenfield task with: its layout files that have content. */
function startingFiles(profile: ProjectProfile | undefined): SourceFile[] {
  return (profile?.layout ?? []).filter((file) => file.content !== '').map((file) => ({ path: file.path, content: file.content }));
}

/**
 * `changed` with their content, and the project's other top-level Python
 * modules as empty files (`pkg/__init__.py`, `mod.py`; under `src/` too):
 * nothing to read, but `import pkg` is then the project's own, not a
 * package to install. One per module, so a workspace of thousands of files
 * sends a handful. JavaScript imports its own files by relative path.
 */
function withPathsOf(changed: readonly SourceFile[], all: readonly SourceFile[]): SourceFile[] {
  const sent = new Set(changed.map((file) => file.path));
  const modules = new Set<string>();
  for (const file of all) {
    if (sent.has(file.path) || !file.path.endsWith('.py')) continue;
    const segments = file.path.split('/');
    const base = segments[0] === 'src' && segments.length > 1 ? 1 : 0;
    const stub = segments.length > base + 1 ? `${segments.slice(0, base + 1).join('/')}/__init__.py` : file.path;
    if (!sent.has(stub)) modules.add(stub);
  }
  return [...changed, ...[...modules].map((path) => ({ path, content: '' }))];
}

function iterationOf(state: TaskState, number: number): IterationRecord | undefined {
  return number > 0 ? state.iterations.find((iteration) => iteration.number === number) : undefined;
}

function current(state: TaskState): IterationRecord {
  const iteration = iterationOf(state, state.task.currentIteration);
  if (iteration === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${state.task.id} has no iteration ${state.task.currentIteration}`);
  return iteration;
}

const usageOf = (usage: { promptTokens: number; completionTokens: number; costUsd: number; modelCalls: number } | undefined) => usage ?? { promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 };

function uniqueLessons(lessons: readonly Lesson[]): Lesson[] {
  const seen = new Set<string>();
  return lessons.filter((lesson) => !seen.has(lesson.id) && seen.add(lesson.id));
}

function outputOf(stdout: Buffer | undefined, stderr: Buffer | undefined): string {
  const text = [stdout?.toString('utf8') ?? '', stderr?.toString('utf8') ?? ''].filter((part) => part !== '').join('\n--- stderr ---\n');
  return text.length > maxOutputChars ? `${text.slice(0, maxOutputChars / 2)}\n...\n${text.slice(-maxOutputChars / 2)}` : text;
}

/** How much of a failed setup's output a task's error keeps: its end. */
const setupLogChars = 3_000;

/** A failed setup as the task's error: why, then the end of its output. */
function setupFailureText(error: string, log: string): string {
  const output = log.trim();
  if (output === '') return error;
  return `${error}\nIts output ended with:\n${output.length > setupLogChars ? `...${output.slice(-setupLogChars)}` : output}`;
}
