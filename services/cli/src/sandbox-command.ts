import { languageToProto, parseLanguageName, type LanguageName } from '@ratchet/agent';
import { SandboxDriver, TestCaseStatus, type SandboxJobResult, type TestReport } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { createDriver, sandboxRunnerOptionsOf } from '@ratchet/sandbox-runner';
import { reportPath, testCommand } from '@ratchet/tester';
import { configDirectory, loadCliConfig } from './cli-config';
import { consoleOutput, type Output } from './commands';
import { readDirectoryFiles } from './files';

export interface SandboxRunOptions {
  readonly driver?: string;
  readonly lang: string;
  readonly timeout?: string;
  readonly report?: string;
  readonly json?: boolean;
}

/**
 * `ratchet sandbox run DIR [-- COMMAND...]`: runs the files of DIR with a
 * command in the configured sandbox (or `--driver`'s) and prints what the
 * runner saw: output, exit code, flags and the parsed test report. Without a
 * command it runs the language's tests as the tester would. For checking a
 * setup, and for reproducing what a task's test run did.
 *
 * @returns true when the command exited 0 (and, with a report, every test passed).
 * @throws AppError for bad arguments, config, or a driver that cannot run here.
 */
export async function runInSandbox(directory: string, command: readonly string[], options: SandboxRunOptions, output: Output = consoleOutput): Promise<boolean> {
  const language = parseLanguageName(options.lang);
  const driverName = options.driver ?? undefined;
  if (driverName !== undefined && driverName !== 'docker' && driverName !== 'bwrap') throw new AppError(ErrorCode.INVALID_ARGUMENT, `--driver ${driverName}: use docker or bwrap`);
  const timeoutSeconds = options.timeout === undefined ? undefined : Number(options.timeout);
  if (timeoutSeconds !== undefined && (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 3600)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `--timeout ${options.timeout}: use whole seconds from 1 to 3600`);
  }
  const files = await readDirectoryFiles(directory, '', 'sandbox run');
  const testFiles = files.map((file) => file.path).filter((file) => isTestFile(file, language));
  if (command.length === 0 && testFiles.length === 0) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${directory} has no test files (test_*.py, *_test.py, *.test.ts, *.test.js); give a command after --, e.g. ratchet sandbox run ${directory} -- python3 main.py`);
  }
  const config = loadCliConfig(configDirectory());
  const settings = { ...config.sandbox, ...(driverName === undefined ? {} : { driver: driverName as 'docker' | 'bwrap' }), ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }), warmPool: 0 };
  // What the driver changes on the host (a state directory it repairs) is said on stderr, as the CLI's other notes.
  const driver = createDriver({ ...sandboxRunnerOptionsOf(settings, `cli-${process.pid}`), logger: { warn: (_fields, message) => output.err(message) } });
  try {
    await driver.ping();
    const argv = command.length > 0 ? [...command] : testCommand(language, testFiles, settings.cpus);
    const report = options.report ?? (command.length === 0 ? reportPath : '');
    const result = await driver.run({
      jobId: `cli-${process.pid}-${Date.now()}`,
      taskId: 'cli',
      iteration: 1,
      language: languageToProto(language),
      files,
      dataFiles: [],
      setupCommand: '',
      commands: [{ name: command.length > 0 ? 'command' : 'tests', argv, workingDirectory: '', timeout: undefined }],
      env: {},
      limits: undefined,
      driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
      image: '',
      testReportPath: report,
      protectedPaths: command.length > 0 ? [] : testFiles,
      dependencies: [],
      enqueuedAt: new Date(),
      deadline: undefined,
    });
    const ok = result.exitCode === 0 && !result.timedOut && (report === '' || (result.testReport?.parsed === true && result.testReport.failed === 0 && result.testReport.errored === 0));
    if (options.json === true) output.out(JSON.stringify(resultJson(result, settings.driver)));
    else printResult(result, settings.driver, report !== '', output);
    return ok;
  } finally {
    await driver.close();
  }
}

function isTestFile(file: string, language: LanguageName): boolean {
  const name = file.split('/').at(-1) ?? '';
  return language === 'python' ? /^test_.*\.py$|_test\.py$/.test(name) : /\.test\.[cm]?[jt]s$/.test(name);
}

/** One JSON object: what a script needs to judge a run. */
function seconds(value: { seconds: number; nanos: number } | undefined): number | null {
  return value === undefined ? null : value.seconds + value.nanos / 1e9;
}

function resultJson(result: SandboxJobResult, driver: string) {
  return {
    driver,
    runnerId: result.runnerId,
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    oomKilled: result.oomKilled,
    stdoutTruncated: result.stdoutTruncated,
    stderrTruncated: result.stderrTruncated,
    stdout: result.stdout.toString('utf8'),
    stderr: result.stderr.toString('utf8'),
    wallSeconds: seconds(result.resourceUsage?.wallTime),
    startupSeconds: seconds(result.startup),
    peakMemoryBytes: result.resourceUsage?.peakMemoryBytes ?? 0,
    commands: result.commandResults.map((command) => ({ name: command.name, exitCode: command.exitCode, timedOut: command.timedOut, seconds: seconds(command.duration) })),
    testReport: result.testReport === undefined ? null : reportJson(result.testReport),
    tamperedPaths: result.tamperedPaths,
    rejectedOutputs: result.rejectedOutputs,
  };
}

function reportJson(report: TestReport) {
  return {
    parsed: report.parsed,
    parseError: report.parseError,
    framework: report.framework,
    total: report.total,
    passed: report.passed,
    failed: report.failed,
    errored: report.errored,
    skipped: report.skipped,
    cases: report.cases.map((testCase) => ({ name: testCase.name, suite: testCase.suite, status: statusName(testCase.status), message: testCase.failureMessage })),
  };
}

function statusName(status: TestCaseStatus): string {
  const names: Partial<Record<TestCaseStatus, string>> = {
    [TestCaseStatus.TEST_CASE_STATUS_PASSED]: 'passed',
    [TestCaseStatus.TEST_CASE_STATUS_FAILED]: 'failed',
    [TestCaseStatus.TEST_CASE_STATUS_ERRORED]: 'errored',
    [TestCaseStatus.TEST_CASE_STATUS_SKIPPED]: 'skipped',
  };
  return names[status] ?? 'unknown';
}

function printResult(result: SandboxJobResult, driver: string, reportExpected: boolean, output: Output): void {
  const stdout = result.stdout.toString('utf8').trimEnd();
  const stderr = result.stderr.toString('utf8').trimEnd();
  if (stdout !== '') output.out(stdout);
  if (stderr !== '') output.err(stderr);
  const flags = [result.timedOut && 'timed out', result.oomKilled && 'out of memory', result.stdoutTruncated && 'stdout truncated', result.stderrTruncated && 'stderr truncated'].filter((flag) => flag !== false);
  output.err('');
  output.err(`exit ${result.exitCode}${flags.length > 0 ? ` (${flags.join(', ')})` : ''} · ${seconds(result.resourceUsage?.wallTime)?.toFixed(2)} s · ${driver} sandbox, runner ${result.runnerId}`);
  const report = result.testReport;
  if (report !== undefined && reportExpected) {
    if (report.parsed) output.err(`tests: ${report.passed} passed, ${report.failed} failed, ${report.errored} errored, ${report.skipped} skipped of ${report.total}`);
    else output.err(`tests: no report (${report.parseError})`);
    for (const testCase of report.cases.filter((item) => item.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || item.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED)) {
      output.err(`  ${statusName(testCase.status)}: ${testCase.suite}::${testCase.name}: ${testCase.failureMessage.split('\n')[0]}`);
    }
  }
  if (result.tamperedPaths.length > 0) output.err(`tampered: ${result.tamperedPaths.join('; ')}`);
  if (result.rejectedOutputs.length > 0) output.err(`refused outputs: ${result.rejectedOutputs.join('; ')}`);
}
