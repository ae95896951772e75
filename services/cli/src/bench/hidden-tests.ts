import type { LanguageName } from '@ratchet/agent';
import { TestCaseStatus, type DataFile, type SandboxJobResult, type SourceFile, type TestCase, type TestReport } from '@ratchet/contracts';
import { AppError } from '@ratchet/errors';
import { testCommand } from '@ratchet/tester';

// SWE-bench-style judging of a workspace task: tests the agent never saw
// (the fix's regression tests: FAIL_TO_PASS; tests that passed before and
// must still pass: PASS_TO_PASS) run after the task, in the sandbox, on the
// task's result. The task is *resolved* when every one of them passes,
// whatever the loop itself concluded.
//
// A test is named by an id of the file that holds it: a pytest node id
// (`tests/test_x.py::TestY::test_z`) in Python; in JavaScript and TypeScript
// (node's test runner) the file, `::`, and its describe blocks and name
// joined by ` > ` (`test/index.test.js::node > avoids pool break`).

/** A task's hidden tests, as its task.yaml names them. */
export interface HiddenTests {
  /** The runner the ids are for: pytest for python, node's test runner otherwise. */
  readonly language: LanguageName;
  /** Test files of the task folder that are never sent; laid over the result for the run. */
  readonly files: readonly SourceFile[];
  /** Test ids that must pass on the result and fail without the fix. */
  readonly failToPass: readonly string[];
  /** Test ids that must still pass on the result. */
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
export type RunJob = (job: { language: LanguageName; files: SourceFile[]; dataFiles: DataFile[]; argv: string[]; jobId: string; setupCommand: string }) => Promise<SandboxJobResult>;

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

/** The file part of a test id. */
export function fileOfNodeId(nodeId: string): string {
  return nodeId.split('::')[0] ?? '';
}

/** The cases of a report that a test id names. */
type CasesOf = (nodeId: string) => readonly TestCase[];

/**
 * pytest: a node id without parameters (`test_x`) names every case of it
 * (`test_x[1]`, `test_x[2]`).
 */
function pytestCases(report: TestReport): CasesOf {
  const byId = report.cases.map((testCase) => ({ id: `${testCase.suite}::${testCase.name}`, testCase }));
  return (nodeId) => {
    const id = pytestCaseId(nodeId);
    return byId.filter((entry) => entry.id === id || (!id.endsWith(']') && entry.id.startsWith(`${id}[`))).map((entry) => entry.testCase);
  };
}

/**
 * node's test runner: `file::outer > inner > name` names that test, and
 * `file::outer` every test inside that describe block. The report's file is
 * where the sandbox ran it, so the id's file is matched as its end.
 */
function nodeTestCases(report: TestReport): CasesOf {
  const byId = report.cases.map((testCase) => ({ file: testCase.file.replace(/\\/g, '/'), path: testCase.suite === '' ? testCase.name : `${testCase.suite} > ${testCase.name}`, testCase }));
  return (nodeId) => {
    const file = fileOfNodeId(nodeId).replace(/^(\.\/)+/, '');
    const name = nodeId.slice(nodeId.indexOf('::') + 2);
    const inFile = (reported: string) => reported === file || reported.endsWith(`/${file}`);
    return byId.filter((entry) => inFile(entry.file) && (entry.path === name || entry.path.startsWith(`${name} > `))).map((entry) => entry.testCase);
  };
}

/**
 * Judges a parsed report of the hidden tests' run: an id passes when it
 * names at least one case that ran and every case it names passed.
 */
export function judgeHidden(hidden: Pick<HiddenTests, 'language' | 'failToPass' | 'passToPass'>, report: TestReport): HiddenOutcome {
  const casesOf = hidden.language === 'python' ? pytestCases(report) : nodeTestCases(report);
  const passes = (nodeId: string) => {
    const cases = casesOf(nodeId);
    return cases.length > 0 && cases.every((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_PASSED);
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
 * them, after the task's setup command (when it has one), with a JUnit
 * report: pytest on exactly the listed node ids, node's
 * test runner on the files that hold the listed tests (it cannot select
 * tests by describe path; only the listed ones are judged).
 */
export async function runHiddenTests(
  hidden: HiddenTests,
  result: { readonly files: readonly SourceFile[]; readonly visibleTests: readonly SourceFile[]; readonly dataFiles: readonly DataFile[]; readonly setupCommand: string },
  run: RunJob,
  jobId: string,
): Promise<HiddenOutcome> {
  if (result.files.length === 0) return unjudged(hidden, 'the task left no result to test');
  const files = new Map<string, SourceFile>();
  for (const file of [...result.files, ...result.visibleTests, ...hidden.files]) files.set(file.path, file);
  const ids = [...new Set([...hidden.failToPass, ...hidden.passToPass])];
  const argv = testCommand(hidden.language, hidden.language === 'python' ? ids : [...new Set(ids.map(fileOfNodeId))]);
  let job: SandboxJobResult;
  try {
    job = await run({ language: hidden.language, files: [...files.values()], dataFiles: [...result.dataFiles], argv, jobId, setupCommand: result.setupCommand });
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
