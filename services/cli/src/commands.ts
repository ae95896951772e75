import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { ApprovalDecision, ApprovalKind, DependencyVerdict, PhaseSwitch, SafetyVerdict, TaskStatus, type ApprovalGate, type ClarifyingQuestion, ProjectProfile, type DependencyDecision, type DependencyInstall, TaskView, TestCaseStatus, TestEdits, MemoryUse, type Iteration, type SafetyFinding, type SourceFile, type Task } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { setSpanAttributes } from '@ratchet/telemetry';
import type { RoleModels } from '@ratchet/llm';
import { checkLabels, userTestsOnlyLabel } from '@ratchet/orchestrator/settings';
import { isTerminal, testCommandLine, languageFromProto, languageToProto, mergeFiles, msOf, parseLanguageName, statusName, stopReasonName, testConvention, toIterationView } from '@ratchet/agent';
import { isBlockingFinding } from '@ratchet/prompting/format';
import { openApi, serverTarget, type ConnectOptions, type TaskApi, type WatchInterruption } from './api';
import { answerTask, questionAnswerer, terminalAsker, type AnswerOptions, type Ask } from './questions';
import { configDirectory, dataDirectory, loadCliConfig } from './cli-config';
import { checkOutputDirectory, failingMarker, readDirectoryFiles, writeFiles, type OutputDirectoryState } from './files';
import { approvalKindName, eventJson, findingText, formatUsage, oneLine, questionText, renderEvent, renderToolStep, specLines } from './render';
import { applyPatchToDirectory } from './workspace/apply';
import { collectWorkspace, type CollectedWorkspace } from './workspace/collect';
import { commitPatchToBranch } from './workspace/git';
import { workspaceProjectKey } from './workspace/project';
import { projectFileName, readProjectFile } from './workspace/project-file';
import { makePatch } from './workspace/patch';
import { terminalSafe } from './terminal-text';
import { defaultWorkspaceSettings } from './workspace/settings';

/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

/**
 * `sink` with every line made inert for a terminal first (`terminalSafe`):
 * the one boundary all printing crosses, since most of what the CLI prints
 * comes from elsewhere (goals, model summaries, plans, lessons, the
 * server's errors, file paths, a sandbox's output) and may carry escape
 * sequences. The CLI writes no escape sequences of its own; colour, if it
 * ever comes, is added by the sink after this, never inside a line.
 */
export function terminalOutput(sink: Output): Output {
  return { out: (line) => sink.out(terminalSafe(line)), err: (line) => sink.err(terminalSafe(line)) };
}

/** The process's stdout and stderr, each line terminal-safe. */
export const consoleOutput: Output = terminalOutput({
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});

export interface RunOptions extends ConnectOptions {
  readonly lang: string;
  readonly tests?: string;
  /** Where the result goes; default `ratchet-output`, or for a workspace task `<data-dir>/tasks/<id>`. */
  readonly out?: string;
  readonly force?: boolean;
  readonly maxIterations?: string;
  readonly json?: boolean;
  /** Wait for a person to approve the passing result before the task succeeds (`ratchet approve`). */
  readonly requireApproval?: boolean;
  /** Labels added to the task, e.g. from the demo. */
  readonly labels?: Readonly<Record<string, string>>;
  /** `--label KEY=VALUE`, each as typed; added to `labels`. */
  readonly label?: readonly string[];
  /** Replaces the configured models (embedded mode). */
  readonly models?: RoleModels;
  /** An existing project to work on: its files are sent, and the result is a patch of it. */
  readonly workspace?: string;
  /** With --workspace: apply the patch to the directory (refused when it changed since the task started). */
  readonly apply?: boolean;
  /** With --workspace in a git repository: commit the patch to this new branch, leaving the working tree alone. */
  readonly branch?: string;
  /** Embedded: run the commands the command policy asks a person about, without asking. */
  readonly yes?: boolean;
  /** Embedded: install the packages the dependency policy asks a person about, without asking. */
  readonly allowDeps?: boolean;
  /** Embedded: how a question is put to the person at the terminal; default: a prompt on stdin when it is a terminal, else none (the packages are refused, questions take their stated assumptions). */
  readonly ask?: Ask;
  /** Project profile: web_app, cli_tool, data_pipeline, library, or one of config/profiles/*.yaml. */
  readonly profile?: string;
  /** Turn the goal into a spec first (the reprompter); `--interactive` implies it. */
  readonly reprompt?: boolean;
  /** Ask for the goal (when none is given) and answer the reprompter's questions at the terminal. */
  readonly interactive?: boolean;
  /** commander's --no-questions: false states assumptions instead of asking. */
  readonly questions?: boolean;
  /** Review each change with the reviewer role. */
  readonly enableReview?: boolean;
  /** Audit each change with the security auditor role. */
  readonly enableAudit?: boolean;
  /** With --workspace: the project's own test command, a shell command line run from its root (overrides .ratchet.yaml's). */
  readonly testCommand?: string;
  /** With --workspace: a shell line run once in the sandbox before coding (overrides .ratchet.yaml's `setup`). */
  readonly setupCommand?: string;
  /** With --workspace: whether the model may edit the project's tests (goal, allow, protect). */
  readonly testEdits?: string;
  /** Project key whose lessons the task uses and adds to (with the global ones); default: the workspace's git remote or directory name. */
  readonly project?: string;
  /** How the task uses memory: the contract's default (project and global lessons) unless set. */
  readonly memory?: MemoryUse;
}

const testEditsByName: Readonly<Record<string, TestEdits>> = { goal: TestEdits.TEST_EDITS_UNSPECIFIED, allow: TestEdits.TEST_EDITS_ALLOWED, protect: TestEdits.TEST_EDITS_PROTECTED };

/** The --test-edits value as the contract's enum. */
function parseTestEdits(value: string | undefined): TestEdits {
  const edits = testEditsByName[value ?? 'goal'];
  if (edits === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--test-edits ${value}: use goal (the model may edit the tests when the goal asks to change them), allow or protect`);
  return edits;
}

/** What a workspace task started from, to turn its result into a patch. */
interface WorkspaceRun {
  readonly dir: string;
  readonly collected: CollectedWorkspace;
  readonly apply: boolean;
  readonly branch?: string;
}

/** Name of the patch a workspace task writes into --out. */
export const patchFileName = 'ratchet.patch';

export interface RunResult {
  readonly task: Task;
  readonly written: readonly string[];
  /** The user detached with Ctrl-C from a task on a server; it goes on there. */
  readonly detached?: boolean;
}

/**
 * The labels of `--label KEY=VALUE` flags (the last of a key wins).
 *
 * @throws AppError INVALID_ARGUMENT for a flag without `=` or with an empty key.
 */
export function labelsOfFlags(flags: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const flag of flags) {
    const equals = flag.indexOf('=');
    if (equals <= 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--label ${JSON.stringify(flag.slice(0, 80))}: write it as KEY=VALUE, e.g. --label team=payments`);
    labels[flag.slice(0, equals)] = flag.slice(equals + 1);
  }
  return labels;
}

/**
 * `ratchet run`: submits the goal (to an embedded Ratchet, or to the server
 * of `--server`), prints progress as events arrive and writes the result
 * files to `--out` on success. Ctrl-C cancels an embedded task; on a server
 * it only detaches, and says how to watch the task again.
 *
 * @throws AppError for bad arguments or config (before anything runs).
 */
export async function runGoal(goalGiven: string, options: RunOptions, output: Output = consoleOutput): Promise<RunResult> {
  // Checked before anything runs, by the server's own rule (a server checks again at submit).
  checkLabels('--label', labelsOfFlags(options.label ?? []));
  const ask = terminalAsker(options.ask);
  // No goal, or --interactive: the goal comes from the terminal, and the reprompter's questions are answered there.
  const interactive = options.interactive === true || goalGiven.trim() === '';
  if (interactive && ask === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'the goal is empty and there is no terminal to ask for it; usage: ratchet run "a CLI that manages TODO items in JSON"');
  const goal = goalGiven.trim() !== '' ? goalGiven : await (ask as Ask)('What should Ratchet build? ');
  if (goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'the goal is empty; usage: ratchet run "a CLI that manages TODO items in JSON"');
  const language = parseLanguageName(options.lang);
  const maxIterations = options.maxIterations === undefined ? 0 : Number(options.maxIterations);
  if (!Number.isInteger(maxIterations) || maxIterations < 0 || maxIterations > 100) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `--max-iterations ${options.maxIterations}: use a whole number from 1 to 100`);
  }
  const remote = serverTarget(options) !== undefined;
  if (options.requireApproval && !remote) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, '--require-approval needs a server (--server host:port): an embedded task cannot be approved from another process');
  }
  if (options.yes && remote) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, '--yes works embedded only: a server decides by its own command policy (orchestrator.approveAskedCommands)');
  }
  if (options.allowDeps && remote) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, '--allow-deps works embedded only: on a server the task waits at its DEPENDENCY_INSTALL gate for `ratchet approve TASK_ID GATE_ID`');
  }
  if ((options.apply || options.branch !== undefined) && options.workspace === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, '--apply and --branch need --workspace DIR');
  if (options.apply && options.branch !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'use either --apply (change DIR) or --branch NAME (commit to a new branch), not both');
  const testEdits = parseTestEdits(options.testEdits);
  if (options.testCommand !== undefined && options.workspace === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, "--test-command needs --workspace DIR: it runs that project's own tests");
  if (options.testCommand !== undefined && options.testCommand.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, '--test-command is empty; give the command that runs the tests, e.g. --test-command "npm test"');
  if (options.setupCommand !== undefined && options.workspace === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, '--setup-command needs --workspace DIR: it prepares that project in the sandbox');
  if (options.setupCommand !== undefined && options.setupCommand.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, '--setup-command is empty; give the command that prepares the project, e.g. --setup-command "pip install -e ."');
  // The project file says how the project is set up and tested; a flag given on the command line wins.
  const projectFile = options.workspace === undefined ? {} : await readProjectFile(path.resolve(options.workspace));
  const testLine = options.testCommand ?? projectFile.testCommand;
  const setupCommand = options.setupCommand ?? projectFile.setup ?? '';
  if (!options.json && (projectFile.setup !== undefined || projectFile.testCommand !== undefined)) {
    const used = [...(projectFile.setup === undefined ? [] : [`setup${options.setupCommand === undefined ? '' : ' (overridden by --setup-command)'}`]), ...(projectFile.testCommand === undefined ? [] : [`test_command${options.testCommand === undefined ? '' : ' (overridden by --test-command)'}`])];
    output.err(`project file ${projectFileName}: ${used.join(', ')}`);
  }
  // A command line as the user would type it in the project's root: the sandbox's shell runs it.
  const testCommand = testLine === undefined ? [] : ['sh', '-c', testLine];
  // Embedded mode checks its config before any work; a server has its own. The workspace limits are this client's either way.
  const config = remote ? undefined : loadCliConfig(configDirectory());
  const acceptanceTests = options.tests === undefined ? [] : await readDirectoryFiles(options.tests, 'tests/');
  let workspace: WorkspaceRun | undefined;
  let workspaceFiles: SourceFile[] = [];
  const labels: Record<string, string> = { ...options.labels, ...labelsOfFlags(options.label ?? []) };
  if (options.workspace !== undefined) {
    const dir = path.resolve(options.workspace);
    const collected = await collectWorkspace(dir, config?.workspace ?? defaultWorkspaceSettings);
    if (options.branch !== undefined && !collected.isGitRepository) throw new AppError(ErrorCode.FAILED_PRECONDITION, `--branch ${options.branch}: ${dir} is not in a git repository; use --apply or the patch file`);
    for (const skipped of collected.skipped) output.err(`not sent: ${skipped.path} (${skipped.reason})`);
    // The project's own tests are its acceptance tests: the model never edits them, and no tests are generated beside them.
    const convention = testConvention(language);
    const projectTests = collected.files.filter((file) => convention.isTestPath(file.path));
    workspaceFiles = collected.files.filter((file) => !convention.isTestPath(file.path));
    acceptanceTests.push(...projectTests);
    // A workspace's own tests are the tests: none are generated beside them.
    if (acceptanceTests.length > 0) labels[userTestsOnlyLabel] = 'user';
    const data = collected.dataFiles.length === 0 ? '' : `, ${collected.dataFiles.length} data file(s) for the sandbox only`;
    if (!options.json) output.err(`workspace ${dir}: ${collected.files.length} file(s), ${projectTests.length} of them tests${data}, ${collected.totalBytes} bytes`);
    workspace = { dir, collected, apply: options.apply ?? false, ...(options.branch === undefined ? {} : { branch: options.branch }) };
  }
  // Lessons stay with their project: named, or the workspace's (its git remote, else its directory name); a greenfield goal uses the global scope.
  const project = options.project?.trim() || (workspace === undefined ? '' : await workspaceProjectKey(workspace.dir));
  // A workspace task's patch and report go under the data directory, one folder per task, never into the workspace: two runs in a row never collide.
  const outGiven = options.out ?? (workspace === undefined ? defaultOutDir : undefined);
  const out = outGiven === undefined ? undefined : { dir: path.resolve(outGiven), state: await checkOutputDirectory(path.resolve(outGiven), options.force ?? false) };
  const api = await openApi({ ...options, drive: true, ...(options.yes ? { approveAskedCommands: true } : {}) });
  if (!options.json && api.modelNames !== undefined) {
    const scripted = api.modelNames.some((name) => name.startsWith('scripted:'));
    output.err(`model: ${api.modelNames.join(', ')}${scripted ? ' (a SCRIPTED model replaying recorded turns; no model endpoint is called)' : ''}`);
  }
  let taskId = '';
  const stopWatching = new AbortController();
  const interrupt = () => {
    process.once('SIGINT', () => process.exit(130));
    if (remote) {
      output.err(`detached: task ${taskId || '(not submitted yet)'} goes on at ${api.where}; watch it again with: ratchet watch ${taskId}`);
      stopWatching.abort();
      return;
    }
    output.err('interrupted: cancelling the task (Ctrl-C again to quit at once)');
    if (taskId !== '') void api.cancelTask(taskId, 'interrupted by the user (Ctrl-C)').catch(() => undefined);
  };
  process.once('SIGINT', interrupt);
  try {
    const task = await api.submitTask({
      goal,
      language: languageToProto(language),
      budget: { maxIterations, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined },
      workspace: workspaceFiles,
      dataFiles: workspace === undefined ? [] : [...workspace.collected.dataFiles],
      acceptanceTests,
      approvalPolicy: options.requireApproval ? { required: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT], timeout: undefined } : undefined,
      labels,
      // One id per run: a submit the CLI sends again (the server was briefly gone) makes no second task.
      requestId: randomUUID(),
      testCommand,
      setupCommand,
      testEdits,
      project,
      memory: options.memory ?? MemoryUse.MEMORY_USE_UNSPECIFIED,
      profile: options.profile?.trim() ?? '',
      reprompt: switchOf(options.reprompt === true || interactive ? true : undefined),
      questions: switchOf(options.questions === false ? false : interactive ? true : undefined),
      review: switchOf(options.enableReview),
      audit: switchOf(options.enableAudit),
    });
    taskId = task.id;
    setSpanAttributes({ 'ratchet.task_id': task.id });
    if (!options.json && remote) output.err(`task ${task.id} submitted to ${api.where}`);
    // Embedded, nobody else can answer a package gate or a question: this run does, at the terminal (or by --allow-deps, or the stated assumptions).
    const answerers: Answerers = remote
      ? interactive
        ? { onQuestions: questionAnswerer(api, ask, (line) => output.err(line)) }
        : {}
      : { onGate: dependencyGateAnswerer(api, options, output), onQuestions: questionAnswerer(api, ask, (line) => output.err(line)) };
    const taskOut = out ?? (await taskOutput(options.dataDir === undefined ? dataDirectory(config) : path.resolve(options.dataDir), task.id));
    return await followToEnd(api, task, stopWatching.signal, taskOut, options.json ?? false, output, workspace, answerers);
  } finally {
    process.removeListener('SIGINT', interrupt);
    await api.close();
  }
}

/** Where `ratchet run` writes a greenfield task's files without --out. */
const defaultOutDir = 'ratchet-output';

/** A task's own output folder under the data directory, `<data-dir>/tasks/<id>`: new, so never in the way of another run. */
async function taskOutput(dataDir: string, taskId: string): Promise<OutputTarget> {
  const dir = path.join(dataDir, 'tasks', taskId);
  return { dir, state: await checkOutputDirectory(dir, false) };
}

/** Decides a gate the task raised, while its events are followed. */
type GateAnswerer = (gate: ApprovalGate) => Promise<void>;

/** What a run answers while it follows its task: gates, and the reprompter's questions. */
interface Answerers {
  readonly onGate?: GateAnswerer;
  readonly onQuestions?: (taskId: string, questions: readonly ClarifyingQuestion[]) => Promise<void>;
}

/** A run option as the contract's switch: unset leaves the configured default. */
function switchOf(value: boolean | undefined): PhaseSwitch {
  return value === undefined ? PhaseSwitch.PHASE_SWITCH_UNSPECIFIED : value ? PhaseSwitch.PHASE_SWITCH_ON : PhaseSwitch.PHASE_SWITCH_OFF;
}

/**
 * Embedded mode's answer to a gate on packages (DEPENDENCY_INSTALL for the
 * plan's, SAFETY_OVERRIDE for those the change imports): approved with
 * --allow-deps; otherwise asked at the terminal (y/N); without a terminal,
 * refused with a comment saying how to allow it. Other gates are left alone.
 */
function dependencyGateAnswerer(api: TaskApi, options: RunOptions, output: Output): GateAnswerer {
  const ask = terminalAsker(options.ask);
  return async (gate) => {
    // SAFETY_OVERRIDE gates are raised for packages the change imports: the same question.
    const aboutPackages = gate.kind === ApprovalKind.APPROVAL_KIND_DEPENDENCY_INSTALL || gate.kind === ApprovalKind.APPROVAL_KIND_SAFETY_OVERRIDE;
    if (!aboutPackages || gate.decision !== ApprovalDecision.APPROVAL_DECISION_PENDING) return;
    let approved = options.allowDeps === true;
    let comment = approved ? 'allowed by --allow-deps' : 'refused: no terminal to ask at; run with --allow-deps to allow package installs';
    if (!approved && ask !== undefined) {
      output.err(`${gate.detail}\n`);
      const answer = (await ask('Install these packages for this task? [y/N] ')).trim().toLowerCase();
      approved = answer === 'y' || answer === 'yes';
      comment = approved ? 'approved at the terminal' : 'refused at the terminal';
    }
    await api.approve({ taskId: gate.taskId, gateId: gate.gateId, decision: approved ? ApprovalDecision.APPROVAL_DECISION_APPROVED : ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: '', comment });
  };
}

/** Prints a task's events until it completes (or `signal` aborts); a gate it raises, or questions it asks, go to `answerers`. */
async function followEvents(api: TaskApi, taskId: string, signal: AbortSignal, json: boolean, output: Output, answerers: Answerers = {}): Promise<void> {
  try {
    const interrupted = ({ error, retryInMs, fromSequence }: WatchInterruption) =>
      output.err(`lost the task's event stream from ${api.where} (${error.code}: ${error.message}); the task goes on; following again from event ${fromSequence} in ${(retryInMs / 1000).toFixed(1)} s\n`);
    for await (const event of api.watchTask(taskId, signal, interrupted)) {
      if (json) output.out(eventJson(event));
      else {
        const line = renderEvent(event);
        if (line !== undefined) output.err(line);
      }
      const payload = event.payload;
      if (answerers.onGate !== undefined && payload?.$case === 'approvalRequested' && payload.approvalRequested.gate !== undefined) await answerers.onGate(payload.approvalRequested.gate);
      if (answerers.onQuestions !== undefined && payload?.$case === 'questionsAsked') await answerers.onQuestions(taskId, payload.questionsAsked.questions);
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

/** Follows a task until it ends, then finishes it like `run`; a detach (`signal`) returns at once. */
/** Where a run writes its result, and what was there when it started. */
interface OutputTarget {
  readonly dir: string;
  readonly state: OutputDirectoryState;
}

async function followToEnd(api: TaskApi, task: Task, signal: AbortSignal, out: OutputTarget | undefined, json: boolean, output: Output, workspace?: WorkspaceRun, answerers: Answerers = {}): Promise<RunResult> {
  await followEvents(api, task.id, signal, json, output, answerers);
  if (signal.aborted) return { task, written: [], detached: true };
  if (workspace !== undefined && out !== undefined) return finishWorkspace(api, task.id, out, workspace, json, output);
  return finish(api, task.id, out, json, output);
}

/**
 * The end of a workspace task: its result as a patch of the directory,
 * written to `outDir/ratchet.patch` (the last attempt's, marked failing,
 * when it did not pass), and on success applied to the directory
 * (`--apply`) or committed to a new branch (`--branch`).
 */
async function finishWorkspace(api: TaskApi, taskId: string, out: OutputTarget, workspace: WorkspaceRun, json: boolean, output: Output): Promise<RunResult> {
  const outDir = out.dir;
  const full = await api.getTask(taskId, TaskView.TASK_VIEW_FULL);
  const final = full.task;
  if (final === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${taskId} vanished`);
  const succeeded = final.status === TaskStatus.TASK_STATUS_SUCCEEDED;
  const result = new Map(final.resultFiles.map((file) => [file.path, file]));
  // The result holds every file of the workspace that is left; the sent ones it lacks were deleted.
  const sent = final.workspace;
  const deleted = final.resultFiles.length === 0 ? [] : sent.filter((file) => !result.has(file.path)).map((file) => file.path);
  const { patch, summary } = makePatch(workspace.collected.files, final.resultFiles, deleted);
  const written: string[] = [];
  if (patch !== '') {
    written.push(...(await writeFiles(outDir, [{ path: patchFileName, content: patch }], out.state)));
  }
  const patchFile = path.join(outDir, patchFileName);
  if (!json) {
    output.err(
      patch === ''
        ? `task ${final.id} ${statusName(final.status)}: no change to ${workspace.dir}`
        : `${succeeded ? 'the change' : 'the last attempt (FAILING its tests)'}: ${summary.changed} changed, ${summary.added} added, ${summary.deleted} deleted file(s), +${summary.insertions} -${summary.deletions} lines; patch: ${patchFile}`,
    );
  }
  if (succeeded && patch !== '' && workspace.apply) {
    const applied = await applyPatchToDirectory(workspace.dir, patch, { expectedFingerprint: workspace.collected.fingerprint, sentFiles: workspace.collected.files, patchFile });
    if (!json) {
      const changed = [...applied.written, ...applied.deleted.map((file) => `${file} (deleted)`)];
      output.err(changed.length === 0 ? `nothing applied to ${workspace.dir}` : `applied to ${workspace.dir}: ${changed.join(', ')}`);
      for (const entry of applied.leftOut) output.err(`left out: ${entry.path}: ${entry.reason}; it is in the patch file ${patchFile} if you want it`);
    }
  } else if (succeeded && patch !== '' && workspace.branch !== undefined) {
    const commit = await commitPatchToBranch(workspace.dir, patch, workspace.branch, `${oneLine(final.goal, 72)}\n\nMade by Ratchet, task ${final.id}.`);
    if (!json) output.err(`committed to branch ${commit.branch} (${commit.commit.slice(0, 12)}); your working tree is unchanged`);
  } else if (succeeded && patch !== '' && !json) {
    output.err(`apply it: git -C ${workspace.dir} apply ${patchFile}   (or run again with --apply / --branch NAME)`);
  }
  if (!json && !succeeded) {
    output.err(`task ${final.id} ${statusName(final.status)}: ${stopReasonName(final.stopReason)} - ${final.statusReason}`);
    output.err(`see what happened: ratchet show ${final.id}`);
  }
  return { task: final, written };
}

/**
 * Reads the ended task and, with `outDir`, writes its files there with the
 * user's acceptance tests: the passing result, or for a task that ended
 * without passing its last attempt, marked by a FAILING.md that lists the
 * failing tests and how to go on.
 */
async function finish(api: TaskApi, taskId: string, out: OutputTarget | undefined, json: boolean, output: Output): Promise<RunResult> {
  const outDir = out?.dir;
  const full = await api.getTask(taskId, TaskView.TASK_VIEW_FULL);
  const final = full.task;
  if (final === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${taskId} vanished`);
  const succeeded = final.status === TaskStatus.TASK_STATUS_SUCCEEDED;
  let written: string[] = [];
  if (outDir !== undefined && final.resultFiles.length > 0) {
    // The user's tests win over a generated file of the same path.
    const files = mergeFiles(final.resultFiles, final.acceptanceTests);
    const marker = succeeded ? [] : [{ path: failingMarker, content: failingReport(final, full.iterations.at(-1)) }];
    written = await writeFiles(outDir, [...files, ...marker], out?.state);
    // A passing result replaces a failing attempt written there before: its marker goes.
    if (succeeded) await rm(path.join(outDir, failingMarker), { force: true });
    if (!json) {
      output.err(
        succeeded
          ? `wrote ${written.length} file(s) to ${outDir}: ${files.map((file) => file.path).join(', ')}`
          : `wrote the last attempt (FAILING its tests) to ${outDir}: ${files.map((file) => file.path).join(', ')}; ${failingMarker} lists what fails`,
      );
    }
  }
  if (!json && succeeded && written.length > 0 && outDir !== undefined) {
    const hint = runHint(final.resultFiles, outDir);
    if (hint !== undefined) output.err(hint);
  }
  if (!json && succeeded && written.length === 0) output.err(`task ${final.id} SUCCEEDED`);
  if (!json && !succeeded) {
    output.err(`task ${final.id} ${statusName(final.status)}: ${stopReasonName(final.stopReason)} - ${final.statusReason}`);
    output.err(`see what happened: ratchet show ${final.id}`);
  }
  return { task: final, written };
}

/**
 * How to run the result, when it says: a package.json's start and test
 * scripts (Node runs TypeScript directly), or a Python file with a main
 * guard. Undefined for a library.
 */
export function runHint(files: readonly SourceFile[], outDir: string): string | undefined {
  const manifest = files.find((file) => file.path === 'package.json');
  if (manifest !== undefined) {
    let scripts: Record<string, unknown> = {};
    try {
      const parsed = JSON.parse(manifest.content) as { scripts?: Record<string, unknown> };
      scripts = parsed.scripts ?? {};
    } catch {
      return undefined;
    }
    const commands = [typeof scripts['start'] === 'string' ? 'npm start -- ARGS' : '', typeof scripts['test'] === 'string' ? 'npm test' : ''].filter((command) => command !== '');
    return commands.length === 0 ? undefined : `run it: cd ${outDir} && ${commands.join(', or ')}`;
  }
  const program = files.find((file) => file.path.endsWith('.py') && !/(^|\/)(test_[^/]*|conftest)\.py$/.test(file.path) && /if __name__ == ['"]__main__['"]/.test(file.content));
  return program === undefined ? undefined : `run it: cd ${outDir} && python3 ${program.path} ARGS`;
}

/** FAILING.md: why the task ended, which tests fail and with what, and how to resume it. */
function failingReport(task: Task, last: Iteration | undefined): string {
  const report = last?.testReport;
  const failing = (report?.cases ?? []).filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED);
  const lines = [
    `# FAILING: this is the last attempt of task ${task.id}, and its tests do not pass`,
    '',
    `Goal: ${oneLine(task.goal, 300)}`,
    '',
    `Ended ${statusName(task.status)} (${stopReasonName(task.stopReason)}): ${task.statusReason}`,
    '',
    report === undefined ? 'No test report for the last attempt.' : `Tests in iteration ${last?.number ?? 0}: ${report.passed}/${report.total} passed.`,
    ...(failing.length === 0 ? [] : ['', 'Failing tests:', ...failing.map((testCase) => `- ${testCase.suite ? `${testCase.suite}::` : ''}${testCase.name}: ${oneLine(testCase.failureMessage, 300)}`)]),
    ...(last?.error === undefined || failing.length > 0 ? [] : ['', `Error: ${last.error.message}`]),
    '',
    `See every iteration: ratchet show ${task.id}`,
    `Go on from here: ratchet resume ${task.id} --add-iterations 3 --hint "what to try"`,
    '',
  ];
  return lines.join('\n');
}

/**
 * `ratchet watch TASK_ID`: the task's events from the start, then live ones
 * until it ends; with `--out`, writes the files of a succeeded task.
 */
export async function watchTask(taskId: string, options: ConnectOptions & { json?: boolean; out?: string; force?: boolean }, output: Output = consoleOutput): Promise<RunResult> {
  const outDir = options.out === undefined ? undefined : path.resolve(options.out);
  const out = outDir === undefined ? undefined : { dir: outDir, state: await checkOutputDirectory(outDir, options.force ?? false) };
  const api = await openApi({ ...options, drive: false });
  const stop = new AbortController();
  const detach = () => {
    output.err(`stopped watching; the task goes on at ${api.where}`);
    stop.abort();
  };
  process.once('SIGINT', detach);
  try {
    const id = (await api.getTask(taskId.trim(), TaskView.TASK_VIEW_BASIC)).task?.id ?? taskId.trim();
    await followEvents(api, id, stop.signal, options.json ?? false, output);
    if (stop.signal.aborted) {
      const task = (await api.getTask(id, TaskView.TASK_VIEW_BASIC)).task;
      if (task === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${id} vanished`);
      return { task, written: [], detached: true };
    }
    return await finish(api, id, out, options.json ?? false, output);
  } finally {
    process.removeListener('SIGINT', detach);
    await api.close();
  }
}

/** `ratchet cancel TASK_ID`: stops a running task on the server; it ends CANCELLED. */
export async function cancelTask(taskId: string, options: ConnectOptions & { reason?: string; json?: boolean }, output: Output = consoleOutput): Promise<Task> {
  const api = await openApi({ ...options, drive: false });
  try {
    const task = await api.cancelTask(taskId.trim(), options.reason ?? 'cancelled with ratchet cancel');
    if (options.json) output.out(JSON.stringify(taskJson(task)));
    else output.out(`task ${task.id} ${statusName(task.status)}${task.statusReason ? `: ${task.statusReason}` : ''}`);
    return task;
  } finally {
    await api.close();
  }
}

/**
 * `ratchet resume TASK_ID`: continues a FAILED task (on the server, or
 * embedded in this process) with more budget and an optional hint, follows
 * it like `ratchet run` and writes its files to `--out` when it succeeds.
 */
export async function resumeTask(
  taskId: string,
  options: ConnectOptions & { hint?: string; addIterations?: string; out?: string; force?: boolean; json?: boolean; models?: RoleModels },
  output: Output = consoleOutput,
): Promise<RunResult> {
  const more = options.addIterations === undefined ? 0 : Number(options.addIterations);
  if (!Number.isInteger(more) || more < 0 || more > 100) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--add-iterations ${options.addIterations}: use a whole number from 0 to 100`);
  const outDir = options.out === undefined ? undefined : path.resolve(options.out);
  const out = outDir === undefined ? undefined : { dir: outDir, state: await checkOutputDirectory(outDir, options.force ?? false) };
  const remote = serverTarget(options) !== undefined;
  const api = await openApi({ ...options, drive: true });
  const stop = new AbortController();
  const interrupt = () => {
    process.once('SIGINT', () => process.exit(130));
    if (remote) output.err(`detached: the task goes on at ${api.where}; watch it again with: ratchet watch ${taskId}`);
    else output.err('interrupted: cancelling the task (Ctrl-C again to quit at once)');
    if (!remote) void api.cancelTask(taskId, 'interrupted by the user (Ctrl-C)').catch(() => undefined);
    else stop.abort();
  };
  process.once('SIGINT', interrupt);
  try {
    const task = await api.resumeTask({ taskId: taskId.trim(), hint: options.hint ?? '', additionalBudget: { maxIterations: more, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined } });
    if (!options.json) output.err(`task ${task.id} resumed (${statusName(task.status)}) at ${api.where}`);
    return await followToEnd(api, task, stop.signal, out, options.json ?? false, output);
  } finally {
    process.removeListener('SIGINT', interrupt);
    await api.close();
  }
}

/** `ratchet approve TASK_ID GATE_ID [--reject]`: records a decision on an approval gate. */
export async function approveGate(taskId: string, gateId: string, options: ConnectOptions & { reject?: boolean; comment?: string }, output: Output = consoleOutput): Promise<void> {
  const api = await openApi({ ...options, drive: false });
  try {
    const { task } = await api.approve({
      taskId: taskId.trim(),
      gateId: gateId.trim(),
      decision: options.reject ? ApprovalDecision.APPROVAL_DECISION_REJECTED : ApprovalDecision.APPROVAL_DECISION_APPROVED,
      // The server records who authenticated as the approver; this field is ignored.
      approver: '',
      comment: options.comment ?? '',
    });
    output.out(`gate ${gateId} of task ${taskId} ${options.reject ? 'rejected' : 'approved'}; the task is ${task === undefined ? 'moving on' : statusName(task.status)}`);
  } finally {
    await api.close();
  }
}

/** `ratchet answer TASK_ID`: answers a task's open clarifying questions (--answer, --assume, or at the terminal). */
export async function answerQuestions(taskId: string, options: ConnectOptions & AnswerOptions, output: Output = consoleOutput): Promise<void> {
  const api = await openApi({ ...options, drive: false });
  try {
    const task = await answerTask(api, taskId.trim(), options, terminalAsker(), (line) => output.err(line));
    output.out(`answered; task ${task.id} is ${statusName(task.status)}${task.status === TaskStatus.TASK_STATUS_AWAITING_ANSWER ? ` (${task.statusReason})` : ''}`);
  } finally {
    await api.close();
  }
}

/** `ratchet profiles`: the project profiles `run -p` takes. */
export async function listProfiles(options: ConnectOptions & { json?: boolean }, output: Output = consoleOutput): Promise<void> {
  const api = await openApi({ ...options, drive: false });
  try {
    const profiles = await api.listProfiles();
    for (const profile of profiles) {
      if (options.json) output.out(JSON.stringify(ProjectProfile.toJSON(profile)));
      else output.out(`${profile.name.padEnd(16)} ${profile.language === 0 ? 'any language' : languageFromProto(profile.language)}  ${profile.description}`);
    }
    if (profiles.length === 0 && !options.json) output.err('no profiles: add YAML files to config/profiles/');
  } finally {
    await api.close();
  }
}

function taskJson(task: Task) {
  return { id: task.id, goal: task.goal, status: statusName(task.status), stopReason: task.stopReason ? stopReasonName(task.stopReason) : '', statusReason: task.statusReason, iterations: task.currentIteration, usage: task.usage, createdAt: task.createdAt };
}

/** `ratchet history`: recent tasks, newest first. */
export async function showHistory(options: ConnectOptions & { limit?: string; status?: string; json?: boolean }, output: Output = consoleOutput): Promise<void> {
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--limit ${options.limit}: use 1 to 100`);
  const statuses = options.status === undefined ? [] : [parseStatus(options.status)];
  const api = await openApi({ ...options, drive: false });
  try {
    // A server ends a page early when its tasks are large: the next pages fill the list up to --limit.
    const tasks: Task[] = [];
    let pageToken = '';
    do {
      const page = await api.listTasks({ statuses, labels: {}, pageSize: limit - tasks.length, pageToken, view: TaskView.TASK_VIEW_BASIC });
      tasks.push(...page.tasks);
      pageToken = page.tasks.length === 0 ? '' : page.nextPageToken;
    } while (pageToken !== '' && tasks.length < limit);
    if (options.json) {
      for (const task of tasks) output.out(JSON.stringify(taskJson(task)));
      return;
    }
    if (tasks.length === 0) {
      output.out('no tasks yet; start one with: ratchet run "your goal"');
      return;
    }
    for (const task of tasks) {
      const created = task.createdAt === undefined ? ''.padEnd(16) : task.createdAt.toISOString().slice(0, 16).replace('T', ' ');
      output.out(`${task.id.slice(0, 8)}  ${created}  ${statusName(task.status).padEnd(10)} ${String(task.currentIteration).padStart(2)} it  ${formatUsage(task.usage)}  ${oneLine(task.goal, 60)}`);
    }
  } finally {
    await api.close();
  }
}

/** A test command as the user typed it (`sh -c LINE` shows as LINE). */
function testCommandText(argv: readonly string[]): string {
  return testCommandLine(argv);
}

/** Whether the model could edit the task's acceptance tests, and why. */
function testEditsText(edits: TestEdits, plan: Iteration['plan']): string {
  if (edits === TestEdits.TEST_EDITS_ALLOWED) return 'editable (--test-edits allow)';
  if (edits === TestEdits.TEST_EDITS_PROTECTED) return 'protected (--test-edits protect)';
  if (plan?.changesTests === true) return `editable: the goal asks to change them${plan.changesTestsReason === '' ? '' : ` (${plan.changesTestsReason})`}`;
  return 'protected (the goal does not ask to change them)';
}

/** `ratchet show TASK_ID`: a task's iterations, errors, reflections and lessons. */
/** `flask >=2,<4: allowed (allowed by config/dependencies.yaml ...)`: one package's decision, as `show` lists it. */
function dependencyText(decision: DependencyDecision): string {
  const name = decision.dependency?.name ?? '';
  const spec = decision.installSpec || decision.dependency?.versionSpec || '';
  const verdict = { [DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED]: 'allowed', [DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL]: 'waiting for approval', [DependencyVerdict.DEPENDENCY_VERDICT_DENIED]: 'REFUSED' }[decision.verdict as number] ?? 'unknown';
  const where = decision.declared ? '' : `, imported at ${decision.importedAt.join(', ') || '?'} without being declared`;
  return `${name}${spec === '' ? '' : ` ${spec}`}: ${verdict}${where} (${decision.reason})`;
}

/** What an iteration's install step did, in one line. */
function installText(install: DependencyInstall): string {
  const how = install.error !== '' ? `FAILED: ${install.error}` : install.cached ? 'from the cache' : `installed in ${(msOf(install.duration) / 1000).toFixed(1)} s`;
  const refused = install.refusedHosts.length === 0 ? '' : `; refused hosts: ${install.refusedHosts.join(', ')}`;
  return `${install.resolved.length} package(s) ${how}${install.sizeBytes > 0 ? `, ${(install.sizeBytes / 1_048_576).toFixed(1)} MB` : ''}${refused}`;
}

export async function showTask(taskId: string, options: ConnectOptions & { json?: boolean }, output: Output = consoleOutput): Promise<void> {
  const api = await openApi({ ...options, drive: false });
  try {
    const { task, iterations, approvals } = await api.getTask(taskId.trim(), TaskView.TASK_VIEW_FULL);
    if (task === undefined) throw new AppError(ErrorCode.INTERNAL, `the answer for task ${taskId} has no task`);
    if (options.json) {
      output.out(
        JSON.stringify({
          task: {
            ...task,
            status: statusName(task.status),
            stopReason: stopReasonName(task.stopReason),
            // Paths and titles: the files themselves are what `--out` is for.
            workspace: task.workspace.map((file) => file.path),
            acceptanceTests: task.acceptanceTests.map((file) => file.path),
            resultFiles: task.resultFiles.map((file) => file.path),
            lessons: task.lessons.map((lesson) => lesson.title),
          },
          iterations: iterations.map(toIterationView),
        }),
      );
      return;
    }
    output.out(`task ${task.id}`);
    output.out(`goal: ${task.goal}`);
    output.out(`status: ${statusName(task.status)}${task.stopReason ? ` (${stopReasonName(task.stopReason)})` : ''}${task.statusReason ? ` - ${task.statusReason}` : ''}`);
    output.out(`iterations: ${task.currentIteration}, re-plans: ${task.replanCount}, resumes: ${task.resumeCount}, usage: ${formatUsage(task.usage)}`);
    const memoryText = task.memory === MemoryUse.MEMORY_USE_OFF ? ' (memory off)' : task.memory === MemoryUse.MEMORY_USE_PROJECT_ONLY ? " (this project's lessons only)" : '';
    output.out(`project: ${task.project || '(none: global lessons)'}${memoryText}`);
    output.out(`lessons used: ${task.lessons.length === 0 ? 'none' : task.lessons.map((lesson) => `"${oneLine(lesson.title)}"`).join(', ')}`);
    if (task.profile !== undefined) output.out(`profile: ${task.profile.name} - ${task.profile.description}`);
    const phases = task.phases;
    const optional = phases === undefined ? [] : [phases.reprompt ? `reprompt${phases.questions ? ' (may ask)' : ' (states assumptions)'}` : '', phases.review ? 'review' : '', phases.audit ? 'audit' : ''].filter((name) => name !== '');
    if (optional.length > 0) output.out(`optional phases: ${optional.join(', ')}`);
    for (const question of task.questions) output.out(questionText(question));
    if (task.status === TaskStatus.TASK_STATUS_AWAITING_ANSWER) output.out(`waiting for answers: ratchet answer ${task.id} [--answer q1=TEXT | --assume]`);
    if (task.spec !== undefined) for (const line of specLines(task.spec)) output.out(line);
    const plan = iterations.at(-1)?.plan;
    if (plan !== undefined) output.out(`plan: ${plan.summary}`);
    for (const decision of task.dependencyDecisions) output.out(`package ${dependencyText(decision)}`);
    if (task.testCommand.length > 0) output.out(`test command: ${testCommandText(task.testCommand)}`);
    if (task.setupCommand !== '') output.out(`setup command: ${task.setupCommand}`);
    if (task.acceptanceTests.length > 0) output.out(`tests: ${testEditsText(task.testEdits, plan)}`);
    for (const gate of approvals) {
      const decided = gate.decision === ApprovalDecision.APPROVAL_DECISION_PENDING ? 'PENDING' : `${gate.decision === ApprovalDecision.APPROVAL_DECISION_APPROVED ? 'approved' : 'rejected'} by ${gate.approver}${gate.comment ? `: ${gate.comment}` : ''}`;
      output.out(`approval gate ${gate.gateId} (${approvalKindName(gate.kind)}, iteration ${gate.iteration}): ${decided}`);
    }
    if (task.pendingGateId !== '') output.out(`waiting for approval: ratchet approve ${task.id} ${task.pendingGateId} [--reject --comment "..."]`);
    else if (!isTerminal(task.status)) output.out(`still running; follow it with: ratchet watch ${task.id}`);
    for (const iteration of iterations) {
      const view = toIterationView(iteration);
      output.out('');
      output.out(`iteration ${view.number}: ${view.outcome}, ${formatUsage(iteration.usage)}`);
      // A workspace holds thousands of files: the first ones say enough.
      const paths = iteration.files.map((file) => file.path);
      output.out(`  files: ${paths.slice(0, 12).join(', ') || '(none)'}${paths.length > 12 ? ` and ${paths.length - 12} more` : ''}`);
      if (iteration.toolSteps.length > 0) {
        output.out(`  tool steps (${iteration.toolSteps.length}):`);
        for (const step of iteration.toolSteps) output.out(`    ${renderToolStep(step)}`);
      }
      if (iteration.dependencyInstall !== undefined) output.out(`  install: ${installText(iteration.dependencyInstall)}`);
      if (view.tests !== '') output.out(`  tests: ${view.tests}`);
      if (iteration.error !== undefined) output.out(`  error: ${iteration.error.code}: ${iteration.error.message}`);
      for (const finding of iteration.safetyFindings) output.out(`  safety: ${finding.ruleId} ${finding.path}:${finding.line}${safetyStatus(finding)} ${finding.message}`);
      for (const finding of iteration.reviewFindings) output.out(`  review: ${findingText(finding)}`);
      for (const finding of iteration.auditFindings) output.out(`  audit: ${findingText(finding)}`);
      if (iteration.reflection !== undefined) {
        output.out(`  root cause: ${iteration.reflection.rootCause}`);
        output.out(`  hypothesis: ${iteration.reflection.hypothesis}`);
        output.out(`  next: ${iteration.reflection.fixDirection}`);
        // The lesson as memory kept it: merged into an earlier lesson, it has that lesson's title, as the live output said.
        const stored = iteration.storedLesson;
        if (stored !== undefined) output.out(`  lesson ${stored.created ? 'stored' : 'merged into'}: "${oneLine(stored.title)}"`);
        else if (iteration.reflection.candidateLesson !== undefined) output.out(`  lesson drafted, not stored: "${oneLine(iteration.reflection.candidateLesson.title)}"`);
      }
      if (iteration.reflectionLessons.length > 0) output.out(`  lessons about this error: ${iteration.reflectionLessons.map((lesson) => `"${oneLine(lesson.title)}"`).join(', ')}`);
    }
  } finally {
    await api.close();
  }
}

function parseStatus(text: string): TaskStatus {
  const key = `TASK_STATUS_${text.trim().toUpperCase()}`;
  const value = (TaskStatus as unknown as Record<string, number>)[key];
  if (value === undefined) {
    const names = Object.keys(TaskStatus).filter((name) => name.startsWith('TASK_STATUS_') && name !== 'TASK_STATUS_UNSPECIFIED');
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `unknown status ${text}; use one of ${names.map((name) => name.replace('TASK_STATUS_', '').toLowerCase()).join(', ')}`);
  }
  return value as TaskStatus;
}

/**
 * How `ratchet show` marks a safety finding: one a person decides on (a
 * package the policy asks about; the gate's decision is listed with the
 * task), blocking, or pre-existing (the project's, not the change's);
 * advisory ones bare.
 */
function safetyStatus(finding: SafetyFinding): string {
  if (finding.preExisting) return ' (pre-existing, not blocking)';
  if (finding.action === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL) return ' (for a person to decide)';
  return isBlockingFinding(finding) ? ' (blocking)' : '';
}
