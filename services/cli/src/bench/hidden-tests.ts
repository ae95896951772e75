import { TestCaseStatus, type DataFile, type SandboxJobResult, type SourceFile, type TestReport } from '@ratchet/contracts';
import { AppError } from '@ratchet/errors';
import { reportPath } from '@ratchet/tester';

// SWE-bench-style judging of a workspace task: tests the agent never saw
// (the fix's regression tests: FAIL_TO_PASS; tests that passed before and
// must still pass: PASS_TO_PASS) run after the task, in the sandbox, on the
// task's result. The task is *resolved* when every one of them passes,
// whatever the loop itself concluded.

/** A task's hidden tests, as its task.yaml names them. */
export interface HiddenTests {
  /** Test files of the task folder that are never sent; laid over the result for the run. */
  readonly files: readonly SourceFile[];
  /** pytest node ids (`tests/test_x.py::TestY::test_z`) that must pass on the result and fail without the fix. */
  readonly failToPass: readonly string[];
  /** pytest node ids that must still pass on the result. */
  readonly passToPass: readonly string[];
}

/** What the hidden tests said about one task's result. */
export interface HiddenOutcome {
  /** Every FAIL_TO_PASS and PASS_TO_PASS test passed. */
  readonly resolved: boolean;
  readonly failToPass: { readonly passed: number; readonly total: number };
  readonly passToPass: { readonly passed: number; readonly total: number };
  /** The hidden tests that did not pass (failed, errored, skipped or did not run), by node id. */
  readonly notPassing: readonly string[];
  /** Why the hidden tests could not be judged (no result, the run timed out, no report). */
  readonly error?: string;
}

/** Runs one sandbox job; the bench's local sandbox driver. */
export type RunJob = (job: { files: SourceFile[]; dataFiles: DataFile[]; argv: string[]; jobId: string }) => Promise<SandboxJobResult>;

/**
 * The junit id of a pytest node id, as `suite::name` (what a parsed report's
 * cases give): `tests/test_x.py::TestY::test_z[1]` is
 * `tests.test_x.TestY::test_z[1]`.
 */
export function pytestCaseId(nodeId: string): string {
  const [file = '', ...rest] = nodeId.split('::');
  const name = rest.pop() ?? '';
  const module = file.replace(/\.py$/, '').split('/').filter((part) => part !== '' && part !== '.').join('.');
  return `${[module, ...rest].join('.')}::${name}`;
}

/** The file part of a pytest node id. */
export function fileOfNodeId(nodeId: string): string {
  return nodeId.split('::')[0] ?? '';
}

/**
 * Judges a parsed report of the hidden tests' run. A node id without
 * parameters (`test_x`) stands for every case of it (`test_x[1]`,
 * `test_x[2]`): it passes when it ran and every case passed.
 */
export function judgeHidden(hidden: Pick<HiddenTests, 'failToPass' | 'passToPass'>, report: TestReport): HiddenOutcome {
  const statuses = report.cases.map((testCase) => ({ id: `${testCase.suite}::${testCase.name}`, passed: testCase.status === TestCaseStatus.TEST_CASE_STATUS_PASSED }));
  const passes = (nodeId: string) => {
    const id = pytestCaseId(nodeId);
    const cases = statuses.filter((entry) => entry.id === id || (!id.endsWith(']') && entry.id.startsWith(`${id}[`)));
    return cases.length > 0 && cases.every((entry) => entry.passed);
  };
  const notPassing = [...hidden.failToPass, ...hidden.passToPass].filter((nodeId) => !passes(nodeId));
  return {
    resolved: notPassing.length === 0,
    failToPass: { passed: hidden.failToPass.filter(passes).length, total: hidden.failToPass.length },
    passToPass: { passed: hidden.passToPass.filter(passes).length, total: hidden.passToPass.length },
    notPassing,
  };
}

/** An outcome that could not be judged: nothing resolved, every hidden test counted as not passing. */
export function unjudged(hidden: Pick<HiddenTests, 'failToPass' | 'passToPass'>, error: string): HiddenOutcome {
  return {
    resolved: false,
    failToPass: { passed: 0, total: hidden.failToPass.length },
    passToPass: { passed: 0, total: hidden.passToPass.length },
    notPassing: [...hidden.failToPass, ...hidden.passToPass],
    error,
  };
}

/**
 * Runs the hidden tests on a task's result: the result's files, the
 * project's visible tests and data files, with the hidden files laid over
 * them, `python3 -m pytest` on exactly the listed node ids with a JUnit
 * report.
 */
export async function runHiddenTests(
  hidden: HiddenTests,
  result: { readonly files: readonly SourceFile[]; readonly visibleTests: readonly SourceFile[]; readonly dataFiles: readonly DataFile[] },
  run: RunJob,
  jobId: string,
): Promise<HiddenOutcome> {
  if (result.files.length === 0) return unjudged(hidden, 'the task left no result to test');
  const files = new Map<string, SourceFile>();
  for (const file of [...result.files, ...result.visibleTests, ...hidden.files]) files.set(file.path, file);
  const ids = [...new Set([...hidden.failToPass, ...hidden.passToPass])];
  const argv = ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--junitxml=${reportPath}`, ...ids];
  let job: SandboxJobResult;
  try {
    job = await run({ files: [...files.values()], dataFiles: [...result.dataFiles], argv, jobId });
  } catch (error) {
    return unjudged(hidden, `the hidden tests could not run: ${AppError.from(error).message}`);
  }
  if (job.timedOut) return unjudged(hidden, 'the hidden tests timed out');
  if (job.testReport?.parsed !== true) return unjudged(hidden, `the hidden tests gave no report (exit ${job.exitCode}): ${lastLine(job)}`);
  return judgeHidden(hidden, job.testReport);
}

function lastLine(job: SandboxJobResult): string {
  const output = `${job.stdout.toString('utf8')}\n${job.stderr.toString('utf8')}`;
  return output.split('\n').filter((line) => line.trim() !== '').at(-1) ?? '(no output)';
}
