import { checkWorkspacePath, languageFromProto, testCommandProblem, withJunitReport } from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { CommandResult, RunJobRequest, RunJobResponse, RunTestsRequest, RunTestsResponse, SandboxJobResult, SandboxLimits } from '@ratchet/contracts';
import { SandboxDriver } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { customRunPassed, reportPath, reportPathVariable, runPassed, testCommand } from '../domain/test-command';

/**
 * Where test runs go: the sandbox runner's RPC client (embedded mode) or a
 * caller of the sandbox job queue (distributed mode) both fit.
 */
export interface SandboxJobs {
  runJob(request: RunJobRequest, options: { deadline: number; signal: AbortSignal }): Promise<RunJobResponse>;
}

/**
 * RunTests: runs the given test files against the code in the sandbox and
 * reports pass/fail from the parsed JUnit report: a run passes only when the
 * report was read, has at least one case and none failed or errored, and the
 * command neither timed out nor exited non-zero. With a `test_command` (a
 * project's own, e.g. `npm test`) that command runs instead, and passes on
 * its exit code and any JUnit report it writes (`customRunPassed`). With a
 * `gate` (safety's Bandit scan) that command runs first in the same sandbox
 * and the tests only when it exits 0; the answer gives its result and what
 * it printed apart from the tests' own.
 *
 * @throws AppError INVALID_ARGUMENT for no test paths or a path that is not
 *   among the files; whatever the sandbox runner throws.
 */
export function runTestsHandler(sandbox: SandboxJobs, defaultLimits: SandboxLimits, image: string) {
  return async (request: RunTestsRequest, context: CallContext): Promise<RunTestsResponse> => {
    const language = languageFromProto(request.language);
    const custom = request.testCommand.length > 0;
    const problem = testCommandProblem(request.testCommand);
    if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `test_command ${problem}; give the program and its arguments, e.g. ["npm", "test"]`);
    if (!custom && request.testPaths.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'test_paths is empty; name the test files to run, or give a test_command');
    const paths = new Set(request.files.map((file) => checkWorkspacePath(file.path, 'files')));
    for (const testPath of request.testPaths) {
      if (!paths.has(testPath)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `test_paths: ${testPath} is not among the files sent`);
    }
    const gate = request.gate;
    if (gate !== undefined && gate.argv.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'gate.argv is empty; leave the gate unset to run the tests alone');
    const limits = request.limits ?? defaultLimits;
    const tests = { name: 'tests', argv: custom ? withJunitReport(request.testCommand, reportPathVariable) : testCommand(language, request.testPaths, limits.cpus || defaultLimits.cpus || 1), workingDirectory: '', timeout: limits.timeout };
    const { result } = await sandbox.runJob(
      {
        job: {
          jobId: `${request.taskId}-i${request.iteration}-tests`,
          taskId: request.taskId,
          iteration: request.iteration,
          language: request.language,
          files: request.files,
          // The project's fixtures and data go in beside the code, as they are on disk.
          dataFiles: request.dataFiles,
          // The supervisor runs a command only when the one before it exited 0: a gate that refuses stops the tests.
          commands: gate === undefined ? [tests] : [{ ...gate, name: gate.name || 'gate' }, tests],
          // A project's own command may write a JUnit report there; the language's runner always does.
          env: custom ? { [reportPathVariable]: reportPath } : {},
          limits,
          driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
          image,
          testReportPath: reportPath,
          // The code under test must not edit its tests; the runner checks them after the run.
          protectedPaths: request.testPaths,
          dependencies: request.dependencies,
          // The workspace's setup runs (or comes from the runner's cache) before the tests.
          setupCommand: request.setupCommand,
          enqueuedAt: new Date(),
          deadline: new Date(context.deadline),
        },
      },
      { deadline: context.deadline, signal: context.signal },
    );
    if (result === undefined) throw new AppError(ErrorCode.INTERNAL, 'the sandbox runner answered without a result');
    const report = result.testReport;
    const passed = custom ? customRunPassed(result) : runPassed(result);
    if (gate === undefined) return { ...(report === undefined ? {} : { report }), result, passed, gateOutput: Buffer.alloc(0) };
    const { gateResult, gateOutput, testsResult } = splitGate(result);
    // A gate that stopped the run leaves no tests run, whatever a report on disk says.
    const testsRan = testsResult.commandResults.length > 0;
    return { ...(report === undefined || !testsRan ? {} : { report }), result: testsResult, passed: passed && testsRan, ...(gateResult === undefined ? {} : { gateResult }), gateOutput };
  };
}

/**
 * The gate's part of a job that ran a gate first: its command result and
 * the bytes of stdout it wrote (the runner counts each command's share),
 * and the job's result as if the tests had run alone.
 */
export function splitGate(result: SandboxJobResult): { gateResult?: CommandResult; gateOutput: Buffer; testsResult: SandboxJobResult } {
  const [gateResult, ...rest] = result.commandResults;
  if (gateResult === undefined) return { gateOutput: Buffer.alloc(0), testsResult: result };
  const gateBytes = Math.min(gateResult.stdoutBytes, result.stdout.length);
  return { gateResult, gateOutput: result.stdout.subarray(0, gateBytes), testsResult: { ...result, stdout: result.stdout.subarray(gateBytes), commandResults: rest } };
}
