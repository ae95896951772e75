import { testCommandProblem, workspacePathProblem } from '@ratchet/agent';
import { ApprovalKind, Language, MemoryUse, TestEdits, type SourceFile, type SubmitTaskRequest } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';

/** Longest goal accepted, in characters. */
export const maxGoalChars = 10_000;
/** Most files in a workspace or acceptance-test set: what `ratchet run --workspace` sends at most by default (workspace.maxFiles). */
export const maxFiles = 20_000;
/** Largest total size of a request's files, in bytes (UTF-8): the CLI's workspace.maxBytes default, 50 MiB. */
export const maxTotalFileBytes = 50 * 1024 * 1024;

/**
 * Checks a SubmitTask request before anything is stored.
 *
 * @throws AppError INVALID_ARGUMENT naming the field and what to do.
 */
export function validateSubmit(request: SubmitTaskRequest): void {
  const goal = request.goal.trim();
  if (goal === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do, e.g. "a CLI that manages TODO items in JSON"');
  if (goal.length > maxGoalChars) throw new AppError(ErrorCode.INVALID_ARGUMENT, `goal is ${goal.length} characters; keep it under ${maxGoalChars} and put details in workspace files`);
  if (request.language === Language.LANGUAGE_UNSPECIFIED || Language[request.language] === undefined) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, 'language is unspecified; choose python, typescript or javascript');
  }
  checkFiles('workspace', request.workspace);
  checkFiles('acceptance_tests', request.acceptanceTests);
  const problem = testCommandProblem(request.testCommand);
  if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `test_command ${problem}; give the program and its arguments, e.g. ["npm", "test"]`);
  if (request.testCommand.length > 0 && request.workspace.length === 0 && request.acceptanceTests.length === 0) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, "test_command needs a workspace: it runs the project's own tests; without one, leave it empty and the tests are written for the goal");
  }
  if (TestEdits[request.testEdits] === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `test_edits is ${request.testEdits}; use TEST_EDITS_PROTECTED, TEST_EDITS_ALLOWED or leave it unset for the goal to decide`);
  if (MemoryUse[request.memory] === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `memory is ${request.memory}; use MEMORY_USE_PROJECT_ONLY, MEMORY_USE_OFF or leave it unset`);
  const project = request.project.trim();
  if (project !== '' && !/^[A-Za-z0-9._/:@-]{1,200}$/.test(project)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `project ${JSON.stringify(project.slice(0, 60))} is not a project key: use letters, digits and . _ / : @ - (at most 200), e.g. "github.com/team/repo"`);
  }
  if (request.memory === MemoryUse.MEMORY_USE_PROJECT_ONLY && project === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'memory MEMORY_USE_PROJECT_ONLY needs a project: name the project whose lessons to use');
  const budget = request.budget;
  if (budget !== undefined) {
    if (budget.maxIterations < 0 || budget.maxIterations > 100) throw new AppError(ErrorCode.INVALID_ARGUMENT, `budget.max_iterations is ${budget.maxIterations}; use 1 to 100 (0 for the default)`);
    if (budget.maxTokens < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'budget.max_tokens is negative; use 0 for no token limit');
    if (budget.maxCostUsd < 0 || !Number.isFinite(budget.maxCostUsd)) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'budget.max_cost_usd must be a finite number >= 0 (0 for no limit)');
    if (budget.maxWallTime !== undefined && budget.maxWallTime.seconds < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'budget.max_wall_time is negative');
  }
  const policy = request.approvalPolicy;
  if (policy !== undefined) {
    for (const kind of policy.required) {
      if (kind === ApprovalKind.APPROVAL_KIND_UNSPECIFIED || ApprovalKind[kind] === undefined) {
        throw new AppError(ErrorCode.INVALID_ARGUMENT, `approval_policy.required has ${kind}; use APPROVAL_KIND_FINAL_RESULT (the gate the loop raises)`);
      }
    }
    if (policy.timeout !== undefined && (policy.timeout.seconds < 0 || policy.timeout.nanos < 0)) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'approval_policy.timeout is negative; use 0 to wait forever');
  }
}

function checkFiles(field: string, files: readonly SourceFile[]): void {
  if (files.length > maxFiles) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} has ${files.length} files; at most ${maxFiles} are accepted`);
  let total = 0;
  const seen = new Set<string>();
  for (const file of files) {
    const problem = workspacePathProblem(file.path);
    if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}: path ${JSON.stringify(file.path)} ${problem}; paths are relative to the workspace root`);
    if (seen.has(file.path)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field}: ${file.path} appears twice`);
    seen.add(file.path);
    total += Buffer.byteLength(file.content, 'utf8');
  }
  if (total > maxTotalFileBytes) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} totals ${total} bytes; at most ${maxTotalFileBytes} are accepted`);
}
