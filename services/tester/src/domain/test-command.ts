import type { SandboxJobResult } from '@ratchet/contracts';
import type { LanguageName } from '@ratchet/agent';

/**
 * Where the runner writes the JUnit report, inside the sandbox. Outside the
 * work directory, so it is not among the files the code is given.
 */
export const reportPath = '/tmp/ratchet-junit.xml';

/**
 * The command that runs `testPaths` for `language` and writes a JUnit report
 * to `reportPath`: pytest through `python3 -m` (so the workspace root is on
 * `sys.path`), node's test runner with the spec reporter on stdout and the
 * JUnit reporter to the file (TypeScript through Node 24's type stripping).
 * `workers` is the test files node runs at once (default 1): inside a
 * CPU-limited sandbox the CPU count still shows the host's, so it is given
 * explicitly. pytest runs tests in one process.
 */
export function testCommand(language: LanguageName, testPaths: readonly string[], workers = 1): string[] {
  // A module that cannot be collected fails as one case; the other tests still run and count.
  if (language === 'python') return ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--continue-on-collection-errors', `--junitxml=${reportPath}`, ...testPaths];
  return ['node', '--test', `--test-concurrency=${Math.max(1, Math.floor(workers))}`, '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=junit', `--test-reporter-destination=${reportPath}`, ...testPaths];
}

/**
 * Whether a sandboxed test run passed. The parsed report decides, never the
 * exit code alone: it must have been read, hold at least one case and no
 * failed or errored one, and the command must have exited 0 without timing
 * out or running out of memory (so `os._exit(0)` before the report is written
 * does not pass).
 */
export function runPassed(result: SandboxJobResult): boolean {
  const report = result.testReport;
  return report !== undefined && report.parsed && report.total > 0 && report.failed === 0 && report.errored === 0 && result.exitCode === 0 && !result.timedOut && !result.oomKilled;
}

/** The environment variable that tells a project's own test command where a JUnit report is read from. */
export const reportPathVariable = 'RATCHET_TEST_REPORT';

/**
 * Whether a run of a project's own test command passed: it exited 0 without
 * timing out or running out of memory, and if it wrote a JUnit report to
 * `$RATCHET_TEST_REPORT`, that report has at least one case and none failed
 * or errored. Without a report the exit code decides, as it does for the
 * project's CI.
 */
export function customRunPassed(result: SandboxJobResult): boolean {
  if (result.exitCode !== 0 || result.timedOut || result.oomKilled) return false;
  const report = result.testReport;
  if (report === undefined || !report.parsed) return true;
  return report.total > 0 && report.failed === 0 && report.errored === 0;
}
