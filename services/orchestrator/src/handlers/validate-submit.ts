import { testCommandProblem, workspacePathProblem } from '@ratchet/agent';
import { ApprovalKind, Language, MemoryUse, PhaseSwitch, TestEdits, type Budget, type DataFile, type Duration, type SourceFile, type SubmitTaskRequest } from '@ratchet/contracts';
import { AppError, ErrorCode, quoted } from '@ratchet/errors';
import { checkLabels } from '../domain/labels';

/** Longest goal accepted, in characters. */
export const maxGoalChars = 10_000;
/** Longest setup command accepted, characters: a line or two; longer steps belong in a script. */
const maxSetupCommandChars = 4_000;
/** Most files in a workspace or acceptance-test set: what `ratchet run --workspace` sends at most by default (workspace.maxFiles). */
export const maxFiles = 20_000;
/** Largest total size of a request's files, in bytes (UTF-8): the CLI's workspace.maxBytes default, 50 MiB. */
export const maxTotalFileBytes = 50 * 1024 * 1024;
/** Longest request_id accepted, in characters: room for any UUID, ULID or hash a client makes. */
export const maxRequestIdChars = 200;

/**
 * Bounds of a task's budget (and of what ResumeTask adds to one). Iterations
 * as orchestrator.maxIterations allows (1 to 100); wall time up to 7 days,
 * against a default of 30 minutes (orchestrator.maxWallTimeSeconds 1800);
 * tokens and cost far above any real task, so a typo or an attack with
 * 2^53-1 cannot pass for a budget.
 */
export const budgetLimits = {
  maxIterations: 100,
  maxTokens: 1_000_000_000,
  maxCostUsd: 100_000,
  maxWallTimeSeconds: 7 * 24 * 60 * 60,
} as const;

/**
 * Longest approval_policy.timeout, in seconds: 7 days, as the wall-time
 * budget (a gate waiting longer than a task may run decides nothing).
 */
export const maxApprovalTimeoutSeconds = 7 * 24 * 60 * 60;

/**
 * Checks a SubmitTask request before anything is stored.
 *
 * @throws AppError INVALID_ARGUMENT naming the field, the limit and what to do.
 */
export function validateSubmit(request: SubmitTaskRequest): void {
  const goal = request.goal.trim();
  if (goal === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do, e.g. "a CLI that manages TODO items in JSON"');
  if (goal.length > maxGoalChars) throw new AppError(ErrorCode.INVALID_ARGUMENT, `goal is ${goal.length} characters; keep it under ${maxGoalChars} and put details in workspace files`);
  checkText('goal', goal);
  checkEnum('language', Language, request.language, { required: true });
  checkFiles('workspace', request.workspace);
  checkFiles('acceptance_tests', request.acceptanceTests);
  checkDataFiles(request.dataFiles, new Set(request.workspace.map((file) => file.path)));
  const problem = testCommandProblem(request.testCommand);
  if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `test_command ${problem}; give the program and its arguments, e.g. ["npm", "test"]`);
  if (request.testCommand.length > 0 && request.workspace.length === 0 && request.acceptanceTests.length === 0) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, "test_command needs a workspace: it runs the project's own tests; without one, leave it empty and the tests are written for the goal");
  }
  const setup = request.setupCommand.trim();
  if (setup !== '') {
    if (request.workspace.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, "setup_command needs a workspace: it prepares an existing project (e.g. \"pip install -e .\"); without one, leave it empty");
    if (setup.length > maxSetupCommandChars) throw new AppError(ErrorCode.INVALID_ARGUMENT, `setup_command is ${setup.length} characters; keep it under ${maxSetupCommandChars} and put longer steps in a script of the workspace`);
    checkText('setup_command', setup);
  }
  checkEnum('test_edits', TestEdits, request.testEdits, { required: false, unset: 'the goal decides' });
  checkEnum('memory', MemoryUse, request.memory, { required: false, unset: 'lessons are retrieved and stored' });
  for (const phase of ['reprompt', 'questions', 'review', 'audit'] as const) checkEnum(phase, PhaseSwitch, request[phase], { required: false, unset: 'the configured default' });
  if (request.profile.length > 100) throw new AppError(ErrorCode.INVALID_ARGUMENT, `profile is ${request.profile.length} characters; name one of the configured profiles (ratchet profiles lists them)`);
  const project = request.project.trim();
  if (project !== '' && !/^[A-Za-z0-9._/:@-]{1,200}$/.test(project)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `project ${quoted(project, 60)} is not a project key: use letters, digits and . _ / : @ - (at most 200), e.g. "github.com/team/repo"`);
  }
  if (request.memory === MemoryUse.MEMORY_USE_PROJECT_ONLY && project === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'memory MEMORY_USE_PROJECT_ONLY needs a project: name the project whose lessons to use');
  if (request.requestId.length > maxRequestIdChars) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `request_id is ${request.requestId.length} characters; at most ${maxRequestIdChars} are accepted (a UUID is 36)`);
  }
  checkText('request_id', request.requestId);
  checkLabels('labels', request.labels);
  checkBudget('budget', request.budget);
  const policy = request.approvalPolicy;
  if (policy !== undefined) {
    for (const kind of policy.required) {
      if (kind === ApprovalKind.APPROVAL_KIND_UNSPECIFIED || !isKnown(ApprovalKind, kind)) {
        throw new AppError(ErrorCode.INVALID_ARGUMENT, `approval_policy.required has ${kind}; use APPROVAL_KIND_FINAL_RESULT (the gate the loop raises)`);
      }
    }
    checkDuration('approval_policy.timeout', policy.timeout, maxApprovalTimeoutSeconds, 'wait forever');
  }
}

/**
 * Checks a budget's limits, or the amounts ResumeTask adds to one, against
 * `budgetLimits`. In a budget 0 (or unset) means "the configured default";
 * in an addition, "nothing added".
 *
 * @param field the request field, for the message ("budget", "additional_budget").
 * @throws AppError INVALID_ARGUMENT naming the field and its limit.
 */
export function checkBudget(field: string, budget: Budget | undefined, kind: 'limits' | 'addition' = 'limits'): void {
  if (budget === undefined) return;
  const { maxIterations, maxTokens, maxCostUsd } = budgetLimits;
  const range = (max: number) => (kind === 'limits' ? `use 1 to ${max} (0 for the default)` : `use 0 to ${max}`);
  if (!Number.isInteger(budget.maxIterations) || budget.maxIterations < 0 || budget.maxIterations > maxIterations) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}.max_iterations is ${budget.maxIterations}; ${range(maxIterations)}`);
  }
  if (!Number.isSafeInteger(budget.maxTokens) || budget.maxTokens < 0 || budget.maxTokens > maxTokens) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}.max_tokens is ${budget.maxTokens}; ${range(maxTokens)}`);
  }
  if (!Number.isFinite(budget.maxCostUsd) || budget.maxCostUsd < 0 || budget.maxCostUsd > maxCostUsd) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}.max_cost_usd is ${budget.maxCostUsd}; use 0 to ${maxCostUsd} USD${kind === 'limits' ? ' (0 for the default)' : ''}`);
  }
  checkDuration(`${field}.max_wall_time`, budget.maxWallTime, budgetLimits.maxWallTimeSeconds, kind === 'limits' ? 'the default' : 'nothing added');
}

/**
 * A google.protobuf.Duration a client sent: seconds 0 to `maxSeconds`,
 * nanos 0 to 999,999,999 (a negative duration is refused, not read as 0).
 */
function checkDuration(field: string, duration: Duration | undefined, maxSeconds: number, zeroMeans: string): void {
  if (duration === undefined) return;
  const { seconds, nanos } = duration;
  const limit = `use 0 to ${maxSeconds} seconds (${maxSeconds / 86_400} days; 0 for ${zeroMeans})`;
  if (!Number.isSafeInteger(seconds) || seconds < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}.seconds is ${seconds}; ${limit}`);
  if (!Number.isInteger(nanos) || nanos < 0 || nanos > 999_999_999) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}.nanos is ${nanos}; use 0 to 999999999`);
  if (seconds > maxSeconds || (seconds === maxSeconds && nanos > 0)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} is ${seconds} seconds; ${limit}`);
}

/** A proto enum (numeric, with ts-proto's UNRECOGNIZED = -1 and reverse names). */
type ProtoEnum = Readonly<Record<string, string | number>>;

/** True for a value the enum names, other than ts-proto's UNRECOGNIZED (-1). */
function isKnown(enumObject: ProtoEnum, value: number): boolean {
  return Number.isInteger(value) && value >= 0 && typeof enumObject[value] === 'string';
}

/** An enum field: a known value, and not UNSPECIFIED (0) when `required`; the message lists the allowed names. */
function checkEnum(field: string, enumObject: ProtoEnum, value: number, options: { required: true } | { required: false; unset: string }): void {
  if (isKnown(enumObject, value) && !(options.required && value === 0)) return;
  const names = Object.entries(enumObject)
    .filter(([, number]) => typeof number === 'number' && number > 0)
    .map(([name]) => name);
  const allowed = `${names.slice(0, -1).join(', ')} or ${names[names.length - 1] ?? ''}`;
  const was = value === 0 ? 'unspecified' : String(value);
  throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} is ${was}; use ${allowed}${options.required ? '' : ` (or leave it unset: ${options.unset})`}`);
}

/** Text the database stores: Postgres text and JSON cannot hold a NUL character. */
function checkText(field: string, text: string): void {
  if (text.includes('\0')) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} contains a NUL character (\\u0000); send plain text`);
}

function checkFiles(field: string, files: readonly SourceFile[]): void {
  if (files.length > maxFiles) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} has ${files.length} files; at most ${maxFiles} are accepted`);
  let total = 0;
  const seen = new Set<string>();
  for (const file of files) {
    const problem = workspacePathProblem(file.path);
    if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}: path ${quoted(file.path)} ${problem}; paths are relative to the workspace root`);
    if (seen.has(file.path)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}: ${quoted(file.path)} appears twice`);
    seen.add(file.path);
    const nul = file.content.indexOf('\0');
    if (nul >= 0) {
      throw new AppError(
        ErrorCode.INVALID_ARGUMENT,
        `${field}: ${quoted(file.path)} contains a NUL byte (at character ${nul}), so it is not a text file; only text files are accepted here: send files that are not text in data_files (ratchet run --workspace does)`,
      );
    }
    total += Buffer.byteLength(file.content, 'utf8');
  }
  if (total > maxTotalFileBytes) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} totals ${total} bytes; at most ${maxTotalFileBytes} are accepted`);
}

/** The workspace's files that are not text: clean paths, none twice or also a text file, within the same limits. */
function checkDataFiles(files: readonly DataFile[], textPaths: ReadonlySet<string>): void {
  if (files.length > maxFiles) throw new AppError(ErrorCode.INVALID_ARGUMENT, `data_files has ${files.length} files; at most ${maxFiles} are accepted`);
  let total = 0;
  const seen = new Set<string>();
  for (const file of files) {
    const problem = workspacePathProblem(file.path);
    if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `data_files: path ${quoted(file.path)} ${problem}; paths are relative to the workspace root`);
    if (seen.has(file.path) || textPaths.has(file.path)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `data_files: ${quoted(file.path)} appears twice (or also in workspace)`);
    seen.add(file.path);
    total += file.content.length;
  }
  if (total > maxTotalFileBytes) throw new AppError(ErrorCode.INVALID_ARGUMENT, `data_files totals ${total} bytes; at most ${maxTotalFileBytes} are accepted`);
}
