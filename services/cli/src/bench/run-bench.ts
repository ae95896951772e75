import { createHash } from 'node:crypto';
import path from 'node:path';
import { isTerminal, languageToProto, statusName } from '@ratchet/agent';
import { ApprovalDecision, MemoryUse as ProtoMemoryUse, PhaseSwitch, SandboxDriver, TaskStatus, TaskView, TestEdits, type Iteration, type SubmitTaskRequest, type Task, type TaskEvent } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { RoleModels } from '@ratchet/llm';
import { userTestsOnlyLabel } from '@ratchet/orchestrator';
import { createDriver, sandboxRunnerOptionsOf } from '@ratchet/sandbox-runner';
import { reportPath } from '@ratchet/tester';
import { openApi, serverTarget, type ConnectOptions, type TaskApi } from '../api';
import { configDirectory, dataDirectory, loadCliConfig, type CliConfig } from '../cli-config';
import { consoleOutput, type Output } from '../commands';
import { defaultWorkspaceSettings } from '../workspace/settings';
import { runHiddenTests, type HiddenOutcome, type RunJob } from './hidden-tests';
import { oracleModels, parseOracle } from './oracle';
import { MemoryMode, MemoryUse, planPasses, type Pass } from './passes';
import { loadPythonSyntax } from './python-syntax';
import { buildReport, renderMarkdown, renderTable, type BenchReport, type InputError } from './report';
import { hiddenText, resultKey, taskResult, tokensOf, type TaskResult } from './result';
import { RunStore } from './run-store';
import { loadSuite, type Suite } from './suite';
import type { BenchTask } from './task';

/** `ratchet bench` switches, as commander hands them over. */
export interface BenchOptions extends ConnectOptions {
  readonly limit?: string;
  readonly concurrency?: string;
  readonly maxIterations?: string;
  readonly memory?: string;
  readonly repeat?: string;
  readonly out?: string;
  readonly json?: boolean;
  readonly compareMemory?: boolean;
  /** Git clones of the projects tasks with a `source` come from; default $RATCHET_BENCH_SOURCES. */
  readonly sources?: string;
  /** `fix` or `none`: a scripted oracle instead of the configured model (embedded only). */
  readonly oracle?: string;
  /** Runs no task: checks that every task's hidden tests fail on the snapshot and pass with its upstream fix. */
  readonly verify?: boolean;
  /** Replaces the configured models (embedded mode, in-process callers). */
  readonly models?: RoleModels;
}

/** Exit codes of `ratchet bench` besides errors (1, and 78 for bad config). */
export const BenchExit = {
  /** The run completed, whatever its pass rate. */
  COMPLETED: 0,
  /** sysexits EX_DATAERR: the run completed, but some tasks of the suite could not run (see the report). */
  INPUT_ERRORS: 65,
  /** Stopped by Ctrl-C (or SIGTERM); finished results are kept. */
  INTERRUPTED: 130,
} as const;

export interface BenchOutcome {
  readonly report: BenchReport;
  readonly reportFile: string;
  readonly exitCode: number;
}

/** Labels every bench task carries, to find them in `ratchet history` and on a dashboard. */
export const benchLabels = { SUITE: 'ratchet.dev/bench-suite', TASK: 'ratchet.dev/bench-task', PASS: 'ratchet.dev/bench-pass' } as const;

/** Submissions of one (pass, repeat, task) before giving up, when each ends cancelled by something other than this run. */
const maxCancelledWhileFollowed = 3;
/** Request ids tried for one (pass, repeat, task): earlier runs that were stopped leave one cancelled task each. */
const maxSubmissions = 1_000;

const protoMemoryUse: Readonly<Record<MemoryUse, ProtoMemoryUse>> = {
  default: ProtoMemoryUse.MEMORY_USE_UNSPECIFIED,
  'project-only': ProtoMemoryUse.MEMORY_USE_PROJECT_ONLY,
  off: ProtoMemoryUse.MEMORY_USE_OFF,
};

function wholeNumber(value: string | undefined, option: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < min || number > max) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${option} ${value}: use a whole number from ${min} to ${max}`);
  return number;
}

function parseMemoryMode(value: string | undefined): MemoryMode {
  const mode = Object.values(MemoryMode).find((known) => known === (value ?? MemoryMode.FRESH).trim().toLowerCase());
  if (mode === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--memory ${value}: use fresh (starts empty), shared (your lessons) or off`);
  return mode;
}

/** Checked switches. */
interface Settings {
  readonly limit?: number;
  readonly concurrency: number;
  readonly repeat: number;
  readonly maxIterations: number | null;
  readonly memory: MemoryMode;
  readonly compareMemory: boolean;
  readonly remote: boolean;
}

function settingsOf(options: BenchOptions): Settings {
  const limit = wholeNumber(options.limit, '--limit', 1, 1_000_000);
  const concurrency = wholeNumber(options.concurrency, '--concurrency', 1, 64) ?? 1;
  const repeat = wholeNumber(options.repeat, '--repeat', 1, 100) ?? 1;
  const maxIterations = wholeNumber(options.maxIterations, '--max-iterations', 1, 100) ?? null;
  const memory = parseMemoryMode(options.memory);
  const compareMemory = options.compareMemory === true;
  if (compareMemory && options.memory !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, '--compare-memory runs its own passes (memory off, then cold and warm over one empty memory); leave out --memory');
  const remote = serverTarget(options) !== undefined;
  if (options.dataDir !== undefined && remote) throw new AppError(ErrorCode.INVALID_ARGUMENT, '--data-dir is for embedded mode; a server keeps its own history and lessons');
  if (options.dataDir !== undefined && (compareMemory || memory !== MemoryMode.SHARED)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, '--data-dir goes with --memory shared: fresh and off memories, and --compare-memory, keep their data in the run directory (--out)');
  }
  return { ...(limit === undefined ? {} : { limit }), concurrency, repeat, maxIterations, memory, compareMemory, remote };
}

/**
 * `ratchet bench SUITE`: runs every task of a suite (a HumanEval/MBPP-style
 * JSONL file, or a directory of workspace tasks) with the configured model,
 * embedded or on `--server`, and reports pass@1, iterations, model calls,
 * tokens and cost by role, time and lessons; with --compare-memory, memory
 * off against a cold and a warm pass. Results go to the run directory as
 * each task ends, so a rerun of the same command goes on where it stopped.
 *
 * @returns the report and the exit code: 0 when the run completed, 65 when
 *   some tasks had input errors (the others ran), 130 when interrupted.
 * @throws AppError INVALID_ARGUMENT for bad switches or a malformed suite
 *   (every bad line or folder named), FAILED_PRECONDITION when the run
 *   directory holds results of another suite version or budget, and
 *   whatever opening Ratchet throws (CONFIG_INVALID without a model).
 */
export async function runBench(suitePath: string, options: BenchOptions, output: Output = consoleOutput): Promise<BenchOutcome> {
  const settings = settingsOf(options);
  // Embedded mode checks its config before any work; a server has its own. Workspace limits are this client's either way.
  const config = settings.remote ? undefined : loadCliConfig(configDirectory());
  const sources = options.sources ?? (process.env['RATCHET_BENCH_SOURCES'] || undefined);
  const suite = await loadSuite(suitePath, { workspaceSettings: config?.workspace ?? defaultWorkspaceSettings, pythonSyntax: loadPythonSyntax, ...(sources === undefined ? {} : { sources: path.resolve(sources) }) });
  for (const note of suite.notes) output.err(note);
  if (options.verify === true) return verifySuite(suite, config ?? loadCliConfig(configDirectory()), output);
  const oracle = parseOracle(options.oracle);
  if (oracle !== undefined && settings.remote) throw new AppError(ErrorCode.INVALID_ARGUMENT, '--oracle runs embedded (a scripted model in this process); leave out --server');
  const selected = settings.limit === undefined ? suite.tasks : suite.tasks.slice(0, settings.limit);
  const inputErrors: InputError[] = selected.flatMap((task) => (task.inputError === undefined ? [] : [{ task: task.id, error: task.inputError }]));
  const runnable = selected.filter((task) => task.inputError === undefined);
  const runDir = path.resolve(options.out ?? path.join('.ratchet-bench', suite.name));
  const store = await RunStore.open(runDir, { suiteName: suite.name, source: suite.source, suiteHash: suite.hash, maxIterations: settings.maxIterations });
  try {
    for (const note of store.notes) output.err(note);
    const passes = planPasses({ suiteName: suite.name, runId: store.info.runId, runDir, memory: settings.memory, compareMemory: settings.compareMemory, repeat: settings.repeat, remote: settings.remote });
    const work = passes.map((pass) => ({ pass, tasks: runnable.filter((task) => !store.has(resultKey({ pass: pass.name, repeat: pass.repeat, task: task.id }))) }));
    const left = work.reduce((sum, entry) => sum + entry.tasks.length, 0);
    const total = passes.length * runnable.length;
    output.err(`suite ${suite.name} (${suite.source}): ${suite.tasks.length} task(s), ${selected.length} selected${inputErrors.length > 0 ? `, ${inputErrors.length} with input errors` : ''}; run directory ${runDir}`);
    output.err(
      left === 0
        ? `nothing left to run: all ${total} task run(s) have results; this is their report`
        : `${left} of ${total} task run(s) to do${total - left > 0 ? ` (${total - left} finished earlier, kept)` : ''}; passes: ${[...new Set(passes.map((pass) => pass.name))].join(', ')}${settings.repeat > 1 ? `, ${settings.repeat} repeats` : ''}`,
    );
    const models = oracle === undefined ? options.models : oracleModels(runnable, oracle);
    const runner = new PassRunner(suite, settings, config, { ...options, ...(models === undefined ? {} : { models }) }, store, output, inputErrors);
    const interrupted = left > 0 ? await runner.run(work) : false;
    const report = buildReport({
      suite: { name: suite.name, source: suite.source, hash: suite.hash, tasks: suite.tasks.length, selected: selected.length },
      run: { dir: runDir, runId: store.info.runId, createdAt: store.info.createdAt },
      passes,
      tasks: runnable.map((task) => task.id),
      results: store.all(),
      inputErrors,
      compareMemory: settings.compareMemory,
      lookCloser: lookCloser(passes, settings, options, config),
    });
    const reportFile = await store.writeReport(renderMarkdown(report));
    if (options.json) {
      const ids = new Set(runnable.map((task) => task.id));
      const results = store.all().filter((result) => ids.has(result.task) && passes.some((pass) => pass.name === result.pass && pass.repeat === result.repeat));
      output.out(JSON.stringify({ ...report, reportFile, results }));
    } else {
      for (const line of renderTable(report)) output.out(line);
    }
    output.err(`report: ${reportFile}`);
    if (interrupted) output.err('stopped before the end; run the same command again to go on (finished tasks are kept)');
    const exitCode = interrupted ? BenchExit.INTERRUPTED : inputErrors.length > 0 ? BenchExit.INPUT_ERRORS : BenchExit.COMPLETED;
    return { report, reportFile, exitCode };
  } finally {
    await store.close();
  }
}

/** `ratchet show` commands that reach the tasks of each pass. */
function lookCloser(passes: readonly Pass[], settings: Settings, options: BenchOptions, config: CliConfig | undefined): string[] {
  if (settings.remote) return [`ratchet show TASK_ID --server ${serverTarget(options)?.address ?? ''}`];
  const userData = options.dataDir ?? (config === undefined ? undefined : dataDirectory(config));
  const where = new Map<string, string[]>();
  for (const pass of passes) {
    const dir = pass.dataDir ?? userData ?? '';
    where.set(dir, [...new Set([...(where.get(dir) ?? []), pass.name])]);
  }
  return [...where].map(([dir, names]) => `ratchet show TASK_ID --data-dir ${dir}   (${names.join(', ')})`);
}

/** What following one task to its end gave. */
interface Followed {
  readonly task: Task;
  readonly iterations: readonly Iteration[];
  readonly events: readonly TaskEvent[];
}

/** Runs the passes in order, the tasks of a pass `concurrency` at a time. */
class PassRunner {
  private readonly stop = new AbortController();
  /** The local sandbox the hidden tests run in, opened for the first task that has them. */
  private hiddenSandbox: { readonly run: RunJob; close(): Promise<void> } | undefined;
  private modelNames: readonly string[] = [];
  private done = 0;
  private total = 0;

  constructor(
    private readonly suite: Suite,
    private readonly settings: Settings,
    private readonly config: CliConfig | undefined,
    private readonly options: BenchOptions,
    private readonly store: RunStore,
    private readonly output: Output,
    private readonly inputErrors: InputError[],
  ) {}

  /** @returns whether the run was interrupted. */
  async run(work: readonly { readonly pass: Pass; readonly tasks: readonly BenchTask[] }[]): Promise<boolean> {
    this.total = work.reduce((sum, entry) => sum + entry.tasks.length, 0);
    const interrupt = () => {
      process.once('SIGINT', () => process.exit(BenchExit.INTERRUPTED));
      this.output.err(
        this.settings.remote
          ? 'interrupted: the tasks in flight go on at the server, and the next run picks them up'
          : 'interrupted: cancelling the tasks in flight (Ctrl-C again to quit at once); finished results are kept',
      );
      this.stop.abort();
    };
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    let api: TaskApi | undefined;
    let apiData: string | undefined;
    try {
      for (const { pass, tasks } of work) {
        if (this.stop.signal.aborted) break;
        if (tasks.length === 0) continue;
        // One embedded Ratchet per data directory: cold and warm share one, so warm sees what cold learnt.
        if (api === undefined || (!this.settings.remote && apiData !== (pass.dataDir ?? ''))) {
          await api?.close();
          api = undefined;
          api = await this.open(pass);
          apiData = pass.dataDir ?? '';
        }
        const opened = api;
        this.output.err(`== pass ${pass.name}${this.settings.repeat > 1 ? ` (repeat ${pass.repeat})` : ''}: ${tasks.length} task(s), ${opened.where}`);
        await this.pool(tasks, (task) => this.runTask(opened, pass, task));
      }
    } finally {
      process.removeListener('SIGINT', interrupt);
      process.removeListener('SIGTERM', interrupt);
      await api?.close();
      await this.hiddenSandbox?.close();
    }
    return this.stop.signal.aborted;
  }

  private async open(pass: Pass): Promise<TaskApi> {
    // Embedded: let the orchestrator run as many tasks at once as asked for; its default (orchestrator.maxConcurrentTasks) may be lower.
    const variable = 'RATCHET_ORCHESTRATOR_MAX_CONCURRENT_TASKS';
    const saved = process.env[variable];
    const raise = !this.settings.remote && (saved === undefined || saved === '') && this.settings.concurrency > (this.config?.orchestrator.maxConcurrentTasks ?? 0);
    if (raise) process.env[variable] = String(this.settings.concurrency);
    try {
      const api = await openApi({
        ...this.options,
        drive: true,
        ...(pass.dataDir === undefined ? {} : { dataDir: pass.dataDir }),
        ...(this.options.models === undefined ? {} : { models: this.options.models }),
      });
      if (api.modelNames !== undefined && this.modelNames.length === 0) {
        this.modelNames = api.modelNames;
        const scripted = api.modelNames.some((name) => name.startsWith('scripted:'));
        this.output.err(`model: ${api.modelNames.join(', ')}${scripted ? ' (a SCRIPTED model replaying recorded turns; no model endpoint is called)' : ''}`);
      }
      return api;
    } finally {
      if (raise) {
        if (saved === undefined) delete process.env[variable];
        else process.env[variable] = saved;
      }
    }
  }

  /** Runs `work` over `tasks`, `concurrency` at a time; the first error stops the others (their tasks are cancelled) and is rethrown. */
  private async pool(tasks: readonly BenchTask[], work: (task: BenchTask) => Promise<void>): Promise<void> {
    let next = 0;
    let failure: { error: unknown } | undefined;
    const worker = async () => {
      while (!this.stop.signal.aborted && failure === undefined) {
        const task = tasks[next];
        if (task === undefined) return;
        next += 1;
        try {
          await work(task);
        } catch (error) {
          failure ??= { error };
          this.stop.abort();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.settings.concurrency, tasks.length) }, worker));
    if (failure !== undefined) throw failure.error;
  }

  private async runTask(api: TaskApi, pass: Pass, task: BenchTask): Promise<void> {
    const started = Date.now();
    let followed: Followed | undefined;
    try {
      followed = await this.submitAndFollow(api, pass, task);
    } catch (error) {
      const appError = AppError.from(error);
      // The orchestrator refused this task (a goal too long, a bad path): the task's fault, not the run's.
      if (appError.code !== ErrorCode.INVALID_ARGUMENT) throw appError;
      this.inputErrors.push({ task: task.id, error: `refused: ${appError.message}` });
      this.output.err(`[${pass.name}] ${task.id}: refused: ${appError.message}`);
      return;
    }
    if (followed === undefined) return;
    const hidden = await this.runHidden(task, followed.task);
    const result = taskResult({
      pass: pass.name,
      repeat: pass.repeat,
      suiteTaskId: task.id,
      task: followed.task,
      iterations: followed.iterations,
      events: followed.events,
      clientWallMs: Date.now() - started,
      models: this.modelNames,
      finishedAt: new Date(),
      ...(hidden === undefined ? {} : { hidden }),
    });
    await this.store.append(result);
    this.done += 1;
    this.output.err(`[${pass.name}${this.settings.repeat > 1 ? ` ${pass.repeat}` : ''}] ${this.done}/${this.total} ${task.id}: ${progressText(result)} (task ${result.taskId})`);
  }

  /** The task's hidden tests run on its result, in this machine's sandbox; undefined when it has none. */
  private async runHidden(task: BenchTask, ended: Task): Promise<HiddenOutcome | undefined> {
    if (task.hidden === undefined) return undefined;
    this.hiddenSandbox ??= localSandbox(this.config ?? loadCliConfig(configDirectory()));
    // A task that changed nothing (or ended before its first attempt) leaves the project as it was: that is what is judged.
    const files = ended.resultFiles.length > 0 ? ended.resultFiles : task.workspace;
    return runHiddenTests(task.hidden, { files, visibleTests: task.acceptanceTests, dataFiles: task.dataFiles ?? [], setupCommand: task.setupCommand ?? '' }, this.hiddenSandbox.run, `bench-hidden-${ended.id}`);
  }

  private request(pass: Pass, task: BenchTask): SubmitTaskRequest {
    const maxIterations = this.settings.maxIterations ?? task.maxIterations ?? 0;
    return {
      goal: task.goal,
      language: languageToProto(task.language),
      budget: { maxIterations, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined },
      workspace: [...task.workspace],
      dataFiles: [...(task.dataFiles ?? [])],
      acceptanceTests: [...task.acceptanceTests],
      approvalPolicy: undefined,
      labels: {
        [benchLabels.SUITE]: this.suite.name,
        [benchLabels.TASK]: task.id,
        [benchLabels.PASS]: `${pass.name}/${pass.repeat}`,
        // The suite's tests are the tests: none are generated beside them, as for a workspace with its own.
        ...(task.acceptanceTests.length > 0 ? { [userTestsOnlyLabel]: 'user' } : {}),
      },
      requestId: '',
      testCommand: [...task.testCommand],
      setupCommand: task.setupCommand ?? '',
      // The suite's tests judge the task: the model never edits them, whatever the goal says.
      testEdits: TestEdits.TEST_EDITS_PROTECTED,
      project: pass.project,
      memory: protoMemoryUse[pass.memory],
      // A benchmark measures the loop as configured (its optional phases too), but nobody is there to answer questions: the reprompter states assumptions.
      profile: '',
      reprompt: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
      questions: PhaseSwitch.PHASE_SWITCH_OFF,
      review: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
      audit: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
    };
  }

  /**
   * Submits the task under a request id made of the run, pass, repeat and
   * task, so a rerun finds what an earlier run submitted instead of paying
   * for it twice: on a server, a task that went on while no bench watched
   * is followed to its end. A task an earlier run left cancelled, or
   * (embedded) one it left half done or done but unrecorded, is not reused:
   * the next request id submits it afresh, so every result is one
   * uninterrupted run.
   *
   * @returns undefined when this run was interrupted before the task ended.
   */
  private async submitAndFollow(api: TaskApi, pass: Pass, task: BenchTask): Promise<Followed | undefined> {
    const base = `bench/${this.store.info.runId}/${pass.name}/${pass.repeat}/${createHash('sha256').update(task.id).digest('hex').slice(0, 16)}`;
    const request = this.request(pass, task);
    let cancelledWhileFollowed = 0;
    for (let attempt = 0; attempt < maxSubmissions; attempt += 1) {
      if (this.stop.signal.aborted) return undefined;
      const submittedAt = Date.now();
      const submitted = await api.submitTask({ ...request, requestId: attempt === 0 ? base : `${base}/${attempt}` });
      const earlier = (submitted.createdAt?.getTime() ?? submittedAt) < submittedAt;
      if (earlier && submitted.status === TaskStatus.TASK_STATUS_CANCELLED) continue;
      if (earlier && !this.settings.remote) {
        // Nothing drives it in this process; stop it so it does not sit in the history as running.
        if (!isTerminal(submitted.status)) void api.cancelTask(submitted.id, 'left behind by an interrupted ratchet bench').catch(() => undefined);
        continue;
      }
      const followed = await this.follow(api, submitted);
      if (followed === undefined) return undefined;
      if (followed.task.status !== TaskStatus.TASK_STATUS_CANCELLED) return followed;
      if (this.stop.signal.aborted) return undefined;
      cancelledWhileFollowed += 1;
      this.output.err(`[${pass.name}] ${task.id}: task ${submitted.id} was cancelled (${followed.task.statusReason}); submitting it again`);
      if (cancelledWhileFollowed >= maxCancelledWhileFollowed) {
        throw new AppError(ErrorCode.ABORTED, `task ${task.id} was cancelled ${cancelledWhileFollowed} times while it ran (last: ${followed.task.statusReason}); is someone cancelling bench tasks?`);
      }
    }
    throw new AppError(ErrorCode.INTERNAL, `task ${task.id}: ${maxSubmissions} submissions found earlier tasks; start a new run with --out ANOTHER_DIR`);
  }

  /**
   * Follows a task's events to its end and reads it in full. On interrupt:
   * embedded, the task is cancelled (and followed until it records that);
   * on a server, the bench detaches and the task goes on.
   */
  private async follow(api: TaskApi, task: Task): Promise<Followed | undefined> {
    const detach = new AbortController();
    const onStop = () => {
      if (this.settings.remote) detach.abort();
      else if (!isTerminal(task.status)) void api.cancelTask(task.id, 'ratchet bench was interrupted').catch(() => undefined);
    };
    if (this.stop.signal.aborted) onStop();
    else this.stop.signal.addEventListener('abort', onStop, { once: true });
    const events: TaskEvent[] = [];
    try {
      for await (const event of api.watchTask(task.id, detach.signal)) {
        events.push(event);
        // Nobody answers a gate in a bench run this process drives: it would wait forever. It is refused, as a run without a terminal refuses it.
        const gate = event.payload?.$case === 'approvalRequested' ? event.payload.approvalRequested.gate : undefined;
        if (!this.settings.remote && gate !== undefined && gate.decision === ApprovalDecision.APPROVAL_DECISION_PENDING) {
          await api.approve({ taskId: gate.taskId, gateId: gate.gateId, decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: '', comment: benchGateComment });
        }
      }
    } catch (error) {
      if (!detach.signal.aborted) throw error;
    } finally {
      this.stop.signal.removeEventListener('abort', onStop);
    }
    if (detach.signal.aborted) return undefined;
    const full = await api.getTask(task.id, TaskView.TASK_VIEW_FULL);
    if (full.task === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${task.id} vanished`);
    if (!isTerminal(full.task.status)) throw new AppError(ErrorCode.INTERNAL, `the events of task ${task.id} ended while it is ${statusName(full.task.status)}`);
    return { task: full.task, iterations: full.iterations, events };
  }
}

/** Why an embedded bench run refuses every approval gate a task raises. */
export const benchGateComment = 'refused: ratchet bench answers no approval gate (it measures the agent unattended); allow what the task needs in config/dependencies.yaml (packages) or under commands: in config/safety.yaml';

/**
 * `ratchet bench SUITE --verify`: no model, no loop. For every task with
 * hidden tests and an upstream fix, the hidden tests run on the snapshot
 * (every fail_to_pass must fail, every pass_to_pass pass) and on the
 * snapshot with the fix (all must pass). Exit 0 when every task is sound.
 */
async function verifySuite(suite: Suite, config: CliConfig, output: Output): Promise<BenchOutcome> {
  const sandbox = localSandbox(config);
  const lines: string[] = [];
  let sound = 0;
  const checked = suite.tasks.filter((task) => task.hidden !== undefined || task.inputError !== undefined);
  try {
    for (const task of checked) {
      const verdict = await verifyTask(task, sandbox.run);
      if (verdict === 'sound') sound += 1;
      lines.push(`${task.id}: ${verdict}`);
      output.err(`${task.id}: ${verdict}`);
    }
  } finally {
    await sandbox.close();
  }
  output.out(`verified ${sound}/${checked.length} task(s) of ${suite.name}: hidden tests fail on the snapshot and pass with the upstream fix`);
  const report = buildReport({ suite: { name: suite.name, source: suite.source, hash: suite.hash, tasks: suite.tasks.length, selected: checked.length }, run: { dir: '', runId: '', createdAt: '' }, passes: [], tasks: [], results: [], inputErrors: [], compareMemory: false, lookCloser: [] });
  return { report, reportFile: '', exitCode: sound === checked.length && checked.length > 0 ? BenchExit.COMPLETED : 1 };
}

async function verifyTask(task: BenchTask, run: RunJob): Promise<string> {
  if (task.inputError !== undefined) return `input error: ${task.inputError}`;
  const hidden = task.hidden!;
  if (task.oracle === undefined) return 'no upstream fix to verify against (only tasks with a source have one)';
  const base = { visibleTests: task.acceptanceTests, dataFiles: task.dataFiles ?? [], setupCommand: task.setupCommand ?? '' };
  const before = await runHiddenTests(hidden, { ...base, files: task.workspace }, run, `bench-verify-${process.pid}-before`);
  const fixedFiles = new Map([...task.workspace, ...task.acceptanceTests, ...task.oracle].map((file) => [file.path, file]));
  const after = await runHiddenTests(hidden, { ...base, files: [...fixedFiles.values()] }, run, `bench-verify-${process.pid}-after`);
  const problems = [
    before.error === undefined ? '' : `snapshot: ${before.error}`,
    before.failToPass.passed > 0 ? `${before.failToPass.passed} fail_to_pass test(s) already pass on the snapshot` : '',
    before.error === undefined && before.passToPass.passed < before.passToPass.total ? `pass_to_pass failing on the snapshot: ${before.notPassing.filter((id) => hidden.passToPass.includes(id)).join(', ')}` : '',
    after.resolved ? '' : `with the fix: ${after.error ?? `not passing: ${after.notPassing.join(', ')}`}`,
  ].filter((problem) => problem !== '');
  return problems.length === 0 ? 'sound' : `NOT sound: ${problems.join('; ')}`;
}

/**
 * The configured sandbox on this machine, for the hidden tests: they are
 * the bench's judge, not part of the task, so they run where the bench runs
 * (embedded or not) and never reach a model.
 */
function localSandbox(config: CliConfig): { run: RunJob; close(): Promise<void> } {
  const driver = createDriver(sandboxRunnerOptionsOf({ ...config.sandbox, warmPool: 0 }, `bench-${process.pid}`));
  return {
    run: ({ language, files, dataFiles, argv, jobId, setupCommand }) =>
      driver.run({
        jobId,
        taskId: jobId,
        iteration: 1,
        language: languageToProto(language),
        files,
        dataFiles,
        commands: [{ name: 'hidden tests', argv, workingDirectory: '', timeout: undefined }],
        env: {},
        limits: undefined,
        driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
        image: '',
        testReportPath: reportPath,
        protectedPaths: [],
        dependencies: [],
        setupCommand,
        enqueuedAt: new Date(),
        deadline: undefined,
      }),
    close: () => driver.close(),
  };
}

function progressText(result: TaskResult): string {
  const loop = result.passed ? (result.passedFirst ? 'passed first time' : `passed in ${result.iterations} iterations`) : `FAILED (${result.stopReason}) after ${result.iterations} iteration(s)`;
  const outcome = result.hidden === undefined ? loop : `${loop}; hidden tests: ${hiddenText(result.hidden)}`;
  return `${outcome}, ${result.usage.modelCalls} model call(s), ${tokensOf(result.usage).toLocaleString('en-US')} tokens, ${(result.wallMs / 1000).toFixed(1)}s${result.lessonsApplied.length > 0 ? `, applied ${result.lessonsApplied.length} lesson(s)` : ''}`;
}
