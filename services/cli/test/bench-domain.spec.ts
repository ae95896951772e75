import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { appendFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TestCaseStatus, type TestReport } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { parse as parseYaml } from 'yaml';
import { loadDirectorySuite } from '../src/bench/directory-suite';
import { judgeHidden, pytestCaseId } from '../src/bench/hidden-tests';
import { jsonlTask, parseJsonlSuite, testNames } from '../src/bench/jsonl-suite';
import { MemoryMode, planPasses } from '../src/bench/passes';
import { loadPythonSyntax, type PythonSyntax } from '../src/bench/python-syntax';
import { buildReport } from '../src/bench/report';
import { noUsage, resultFormat, type TaskResult } from '../src/bench/result';
import { RunStore } from '../src/bench/run-store';
import { pairedBootstrap } from '../src/bench/stats';
import { defaultWorkspaceSettings } from '../src/workspace/settings';
import { failure, temporaryDirectory } from './helpers';

// The parts of `ratchet bench` that need no model and no sandbox: reading
// suites, planning passes, the results file, the statistics and the report.

describe('bench: JSONL suites', () => {
  let syntax: PythonSyntax;
  beforeAll(async () => {
    syntax = await loadPythonSyntax();
  });

  it('reads HumanEval-style lines, numbers as task ids (MBPP), a BOM and CRLF line ends', () => {
    const line = (id: unknown) => JSON.stringify({ task_id: id, prompt: 'def f():\n', test: 'def check(candidate):\n    assert candidate() == 1\n', entry_point: 'f', canonical_solution: 'ignored' });
    const records = parseJsonlSuite(`\uFEFF${line('HumanEval/0')}\r\n\r\n${line(11)}\r\n`, 'suite.jsonl');
    expect(records.map((record) => [record.line, record.taskId])).toEqual([
      [1, 'HumanEval/0'],
      [3, '11'],
    ]);
  });

  it('lists every bad line with its number and what is wrong', async () => {
    const error = await failure(Promise.resolve().then(() => parseJsonlSuite(['[1]', '{"task_id": "a", "prompt": "p", "test": "", "entry_point": "f"}', 'nope'].join('\n'), 'x.jsonl')));
    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.message).toContain('x.jsonl:1: expected a JSON object with task_id, prompt, test, entry_point, got an array');
    expect(error.message).toContain('x.jsonl:2: test must be a non-empty string');
    expect(error.message).toMatch(/x\.jsonl:3: not valid JSON \(.+\)/);
    expect((await failure(Promise.resolve().then(() => parseJsonlSuite('\n\n', 'empty.jsonl')))).message).toContain('empty.jsonl has no tasks');
  });

  it("turns a line into a goal asking for solution.py and a pytest file running the line's test", () => {
    const [record] = parseJsonlSuite(JSON.stringify({ task_id: 'HumanEval/7', prompt: 'def add(a, b):\n    """Sum."""\n', test: 'METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n', entry_point: 'add' }), 'he.jsonl');
    const task = jsonlTask(record!, 'humaneval_7', 'he.jsonl', syntax);
    expect(task.goal).toContain('Write solution.py, a Python module that defines the function `add`');
    expect(task.goal).toContain('def add(a, b):\n    """Sum."""');
    expect(task.acceptanceTests).toEqual([
      {
        path: 'tests/test_humaneval_7.py',
        content: '# Acceptance test of task HumanEval/7 (he.jsonl, line 1).\nfrom solution import add\n\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n\n\ndef test_humaneval_7():\n    check(add)\n',
      },
    ]);
    expect(task.inputError).toBeUndefined();
  });

  it('runs test functions as they are, and gives plain assertions a test to be collected by', () => {
    const task = (test: string) => jsonlTask({ line: 1, taskId: 't', prompt: 'p', test, entryPoint: 'f' }, 't', 's.jsonl', syntax).acceptanceTests[0]!.content;
    expect(task('def test_f():\n    assert f() == 1\n')).not.toContain('def test_t');
    expect(task('assert f() == 1\n')).toContain('def test_t():\n    """The statements above ran when pytest imported this file."""');
  });

  it('makes a test that is not Python an input error with the line and column', () => {
    const task = jsonlTask({ line: 4, taskId: 'bad', prompt: 'p', test: 'def check(candidate):\n    assert candidate(1 == 2\n', entryPoint: 'f' }, 'bad', 's.jsonl', syntax);
    expect(task.acceptanceTests).toEqual([]);
    expect(task.inputError).toMatch(/^its test \(s\.jsonl line 4\) is not valid Python: line \d+, column \d+: /);
    expect(syntax.problem('def check(candidate):\n    return 1\n')).toBeUndefined();
  });

  it('names test files after task ids, uniquely', () => {
    expect(testNames(['HumanEval/0', 'humaneval-0', '11', '!!!'])).toEqual(['humaneval_0', 'humaneval_0_2', '11', 'task']);
  });
});

describe('bench: hidden tests (SWE-bench style)', () => {
  it('matches pytest node ids to the JUnit cases of a report', () => {
    expect(pytestCaseId('tests/test_x.py::test_y')).toBe('tests.test_x::test_y');
    expect(pytestCaseId('tests/test_x.py::TestY::test_z[a-1]')).toBe('tests.test_x.TestY::test_z[a-1]');
    expect(pytestCaseId('./test_top.py::test_a')).toBe('test_top::test_a');
    const report = (cases: [string, string, TestCaseStatus][]): TestReport => ({
      framework: 'pytest', total: cases.length, passed: 0, failed: 0, errored: 0, skipped: 0, duration: undefined, parsed: true, parseError: '',
      cases: cases.map(([suite, name, status]) => ({ suite, name, status, file: '', duration: undefined, failureMessage: '', failureDetail: '' })),
    });
    const judged = judgeHidden(
      { language: 'python', failToPass: ['tests/test_x.py::TestY::test_fixed', 'tests/test_x.py::test_missing'], passToPass: ['tests/test_x.py::test_kept', 'tests/test_x.py::test_skipped'] },
      report([
        ['tests.test_x.TestY', 'test_fixed', TestCaseStatus.TEST_CASE_STATUS_PASSED],
        ['tests.test_x', 'test_kept', TestCaseStatus.TEST_CASE_STATUS_PASSED],
        ['tests.test_x', 'test_skipped', TestCaseStatus.TEST_CASE_STATUS_SKIPPED],
      ]),
    );
    // A node id without parameters stands for all its cases.
    const parametrized = report([
      ['tests.test_x', 'test_p[a]', TestCaseStatus.TEST_CASE_STATUS_PASSED],
      ['tests.test_x', 'test_p[b]', TestCaseStatus.TEST_CASE_STATUS_FAILED],
      ['tests.test_x', 'test_q[a]', TestCaseStatus.TEST_CASE_STATUS_PASSED],
    ]);
    expect(judgeHidden({ language: 'python', failToPass: ['tests/test_x.py::test_p', 'tests/test_x.py::test_q'], passToPass: ['tests/test_x.py::test_p[a]'] }, parametrized)).toMatchObject({ failToPass: { passed: 1, total: 2 }, passToPass: { passed: 1, total: 1 }, notPassing: ['tests/test_x.py::test_p'] });
    // A hidden test that did not run, or was skipped, is not passing.
    expect(judged).toEqual({ resolved: false, failToPass: { passed: 1, total: 2 }, passToPass: { passed: 1, total: 2 }, notPassing: ['tests/test_x.py::test_missing', 'tests/test_x.py::test_skipped'] });
  });

  it("matches node's test ids (file::describe > name) to the JUnit cases of node's runner", () => {
    // As the runner's parser gives node's cases: the describe blocks joined as the suite, the file where the sandbox ran it.
    const nodeCase = (file: string, suite: string, name: string, status: TestCaseStatus) => ({ suite, name, status, file, duration: undefined, failureMessage: '', failureDetail: '' });
    const report: TestReport = {
      framework: 'node:test', total: 5, passed: 0, failed: 0, errored: 0, skipped: 0, duration: undefined, parsed: true, parseError: '',
      cases: [
        nodeCase('/work/test/index.test.js', 'node', 'avoids pool break', TestCaseStatus.TEST_CASE_STATUS_PASSED),
        nodeCase('/work/test/index.test.js', 'browser', 'avoids pool break', TestCaseStatus.TEST_CASE_STATUS_FAILED),
        nodeCase('/work/test/index.test.js', 'node > sizes', 'zero', TestCaseStatus.TEST_CASE_STATUS_PASSED),
        nodeCase('/work/test/index.test.js', 'node > sizes', 'negative', TestCaseStatus.TEST_CASE_STATUS_PASSED),
        nodeCase('/work/test/other.test.js', '', 'top level', TestCaseStatus.TEST_CASE_STATUS_PASSED),
      ],
    };
    const judged = judgeHidden(
      {
        language: 'javascript',
        // A describe block's id stands for every test inside it; the same name in another block or file is another test.
        failToPass: ['test/index.test.js::node > avoids pool break', 'test/index.test.js::node > sizes', './test/other.test.js::top level'],
        passToPass: ['test/index.test.js::browser > avoids pool break', 'test/index.test.js::top level', 'test/index.test.js::node > size'],
      },
      report,
    );
    expect(judged).toEqual({
      resolved: false,
      failToPass: { passed: 3, total: 3 },
      passToPass: { passed: 0, total: 3 },
      notPassing: ['test/index.test.js::browser > avoids pool break', 'test/index.test.js::top level', 'test/index.test.js::node > size'],
    });
  });

  it('keeps hidden files out of what the agent gets, and names a task.yaml that lists hidden files without fail_to_pass, or ids in no file', async () => {
    const { dir, remove } = await temporaryDirectory();
    try {
      const task = async (name: string, yaml: string) => {
        await mkdir(path.join(dir, name, 'tests'), { recursive: true });
        await writeFile(path.join(dir, name, 'mod.py'), 'X = 1\n');
        await writeFile(path.join(dir, name, 'tests', 'test_mod.py'), 'from mod import X\n\n\ndef test_x():\n    assert X == 1\n');
        await writeFile(path.join(dir, name, 'tests', 'test_hidden.py'), 'def test_h():\n    pass\n');
        await writeFile(path.join(dir, name, 'task.yaml'), yaml);
      };
      await task('good', 'goal: g\nhidden_tests: [tests/test_hidden.py]\nfail_to_pass: [tests/test_hidden.py::test_h]\npass_to_pass: [tests/test_mod.py::test_x]\n');
      await task('stray-id', 'goal: g\nhidden_tests: [tests/test_hidden.py]\nfail_to_pass: [tests/test_other.py::test_h]\n');
      const { tasks } = await loadDirectorySuite(dir, defaultWorkspaceSettings);
      const good = tasks.find((entry) => entry.id === 'good')!;
      expect([...good.workspace, ...good.acceptanceTests].map((file) => file.path).sort()).toEqual(['mod.py', 'tests/test_mod.py']);
      expect(good.hidden).toEqual({ language: 'python', files: [{ path: 'tests/test_hidden.py', content: 'def test_h():\n    pass\n' }], failToPass: ['tests/test_hidden.py::test_h'], passToPass: ['tests/test_mod.py::test_x'] });
      expect(tasks.find((entry) => entry.id === 'stray-id')!.inputError).toBe('test tests/test_other.py::test_h is in no file of the task (hidden or sent); use a pytest node id, e.g. tests/test_x.py::test_y');

      // node's runner: ids name the file and the test's describe path.
      await mkdir(path.join(dir, 'js', 'test'), { recursive: true });
      await writeFile(path.join(dir, 'js', 'index.js'), 'export const x = 1\n');
      await writeFile(path.join(dir, 'js', 'test', 'hidden.test.js'), "import { test } from 'node:test'\ntest('h', () => {})\n");
      await writeFile(path.join(dir, 'js', 'task.yaml'), 'goal: g\nlanguage: javascript\ntest_command: node --test\nhidden_tests: [test/hidden.test.js]\nfail_to_pass: ["test/hidden.test.js::h"]\npass_to_pass: [test/hidden.test.js]\n');
      const js = (await loadDirectorySuite(dir, defaultWorkspaceSettings)).tasks.find((entry) => entry.id === 'js')!;
      expect(js.inputError).toBe("test test/hidden.test.js names no test; use the file, '::' and the test's describe blocks and name joined by ' > ', e.g. test/x.test.js::parse > rejects empty input");
      await writeFile(path.join(dir, 'js', 'task.yaml'), 'goal: g\nlanguage: javascript\ntest_command: node --test\nhidden_tests: [test/hidden.test.js]\nfail_to_pass: ["test/hidden.test.js::h"]\n');
      const fixed = (await loadDirectorySuite(dir, defaultWorkspaceSettings)).tasks.find((entry) => entry.id === 'js')!;
      expect(fixed.hidden).toMatchObject({ language: 'javascript', failToPass: ['test/hidden.test.js::h'], passToPass: [] });
      expect(fixed.workspace.map((file) => file.path)).toEqual(['index.js']);

      // A setup command goes with the task (and into the suite's hash); an empty one is a mistake to name.
      await task('setup', 'goal: g\nsetup: python3 -m pip install -e .\n');
      const withSetup = await loadDirectorySuite(dir, defaultWorkspaceSettings);
      expect(withSetup.tasks.find((entry) => entry.id === 'setup')!.setupCommand).toBe('python3 -m pip install -e .');
      expect(good.setupCommand).toBeUndefined();
      await task('setup', 'goal: g\nsetup: ""\n');
      await expect(loadDirectorySuite(dir, defaultWorkspaceSettings)).rejects.toMatchObject({ message: expect.stringContaining('setup/task.yaml: setup: setup is empty; leave it out when the project needs none') });
      await rm(path.join(dir, 'setup'), { recursive: true });

      await task('no-f2p', 'goal: g\nhidden_tests: [tests/test_hidden.py]\n');
      await expect(loadDirectorySuite(dir, defaultWorkspaceSettings)).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('no-f2p/task.yaml: fail_to_pass: hidden_tests needs fail_to_pass') });
    } finally {
      await remove();
    }
  });
});

describe('bench/swe', () => {
  it('is a suite of real bug fixes from at least 8 projects in Python and JavaScript, each naming its repository, commits and licence; without clones each task says what to pass', async () => {
    const suite = path.resolve(__dirname, '../../../bench/swe');
    const { tasks } = await loadDirectorySuite(suite, defaultWorkspaceSettings);
    expect(tasks.length).toBeGreaterThanOrEqual(20);
    expect(new Set(tasks.map((task) => task.language))).toEqual(new Set(['python', 'javascript']));
    const sources = await Promise.all(tasks.map(async (task) => (parseYaml(await readFile(path.join(suite, task.id, 'task.yaml'), 'utf8')) as { source: { repo: string; licence?: string } }).source));
    expect(new Set(sources.map((source) => source.repo)).size).toBeGreaterThanOrEqual(8);
    expect(sources.every((source) => typeof source.licence === 'string' && source.licence.length > 0)).toBe(true);
    for (const task of tasks) expect(task.inputError).toMatch(/^needs a clone of [\w.-]+\/[\w.-]+: pass --sources DIR/);
  });
});

describe('bench: passes', () => {
  const input = { suiteName: 'sample', runId: 'RUN', runDir: '/runs/sample', memory: MemoryMode.FRESH, compareMemory: false, repeat: 2, remote: false };

  it('embedded: a fresh memory is a new data directory per repeat; shared is the user’s; off has its own', () => {
    expect(planPasses(input).map((pass) => [pass.name, pass.repeat, pass.memory, pass.dataDir])).toEqual([
      ['fresh', 1, 'default', '/runs/sample/data/fresh-r1'],
      ['fresh', 2, 'default', '/runs/sample/data/fresh-r2'],
    ]);
    expect(planPasses({ ...input, memory: MemoryMode.SHARED, repeat: 1 })).toEqual([{ name: 'shared', repeat: 1, memory: 'default', project: 'bench/sample' }]);
    expect(planPasses({ ...input, memory: MemoryMode.OFF, repeat: 1 })).toEqual([{ name: 'off', repeat: 1, memory: 'off', project: 'bench/sample', dataDir: '/runs/sample/data/off' }]);
  });

  it('on a server: a fresh memory is a project of its own, searched without the global lessons', () => {
    expect(planPasses({ ...input, remote: true, repeat: 1 })).toEqual([{ name: 'fresh', repeat: 1, memory: 'project-only', project: 'bench/sample/RUN/r1' }]);
  });

  it('--compare-memory: off, then cold and warm over one empty memory, per repeat', () => {
    const passes = planPasses({ ...input, compareMemory: true, remote: true });
    expect(passes.map((pass) => `${pass.name}${pass.repeat}:${pass.memory}:${pass.project}`)).toEqual([
      'off1:off:bench/sample',
      'cold1:project-only:bench/sample/RUN/r1',
      'warm1:project-only:bench/sample/RUN/r1',
      'off2:off:bench/sample',
      'cold2:project-only:bench/sample/RUN/r2',
      'warm2:project-only:bench/sample/RUN/r2',
    ]);
    const embedded = planPasses({ ...input, compareMemory: true, repeat: 1 });
    expect(embedded[1]!.dataDir).toBe('/runs/sample/data/learning-r1');
    expect(embedded[2]!.dataDir).toBe(embedded[1]!.dataDir);
  });
});

describe('bench: paired bootstrap', () => {
  it('is reproducible, contains the mean, and narrows with more pairs', () => {
    const few = [-2, 0, -1, 0, -3, 1, 0, -1];
    const first = pairedBootstrap(few)!;
    expect(pairedBootstrap(few)).toEqual(first);
    expect(first.mean).toBeCloseTo(-0.75);
    expect(first.low).toBeLessThan(first.mean);
    expect(first.high).toBeGreaterThan(first.mean);
    const many = pairedBootstrap(Array.from({ length: 8 }, () => few).flat())!;
    expect(many.high - many.low).toBeLessThan(first.high - first.low);
  });

  it('has no interval without pairs, and a point when every difference is the same', () => {
    expect(pairedBootstrap([])).toBeUndefined();
    expect(pairedBootstrap([-1, -1, -1])).toEqual({ n: 3, mean: -1, low: -1, high: -1 });
  });
});

const result = (pass: TaskResult['pass'], task: string, iterations: number, repeat = 1): TaskResult => ({
  format: resultFormat,
  pass,
  repeat,
  task,
  taskId: `${pass}-${task}-${repeat}`,
  status: 'SUCCEEDED',
  stopReason: 'tests passed',
  statusReason: '',
  passed: true,
  passedFirst: iterations === 1,
  iterations,
  usage: { ...noUsage, modelCalls: iterations * 2, promptTokens: iterations * 100 },
  byRole: { planner: noUsage, coder: noUsage, tester: noUsage, reflector: noUsage, other: noUsage },
  wallMs: iterations * 1000,
  lessonsRetrieved: [],
  lessonsApplied: [],
  models: ['scripted:x'],
  finishedAt: '2025-01-01T00:00:00.000Z',
});

describe('bench: report', () => {
  it('pairs warm with off and cold by task and repeat', () => {
    const report = buildReport({
      suite: { name: 's', source: '/s.jsonl', hash: 'h', tasks: 2, selected: 2 },
      run: { dir: '/r', runId: 'RUN', createdAt: '' },
      passes: ['off', 'cold', 'warm'].map((name) => ({ name: name as TaskResult['pass'], repeat: 1 })),
      tasks: ['a', 'b'],
      results: [result('off', 'a', 3), result('off', 'b', 2), result('cold', 'a', 3), result('cold', 'b', 1), result('warm', 'a', 1), result('warm', 'b', 1), result('warm', 'z', 1)],
      inputErrors: [],
      compareMemory: true,
      lookCloser: [],
    });
    expect(report.passes.map((pass) => [pass.name, pass.totals.runs, pass.totals.passedFirst])).toEqual([
      ['off', 2, 0],
      ['cold', 2, 1],
      ['warm', 2, 2],
    ]);
    const iterations = report.comparison!.differences.filter((difference) => difference.metric === 'iterations');
    expect(iterations.map((difference) => [difference.baseline, difference.perTask.map((entry) => entry.meanDifference), difference.overall?.mean])).toEqual([
      ['off', [-2, -1], -1.5],
      ['cold', [-2, 0], -1],
    ]);
    const tokens = report.comparison!.differences.find((difference) => difference.metric === 'tokens' && difference.baseline === 'off')!;
    expect(tokens.overall?.mean).toBe(-150);
  });
});

describe('bench: run directory', () => {
  let dir: string;
  let remove: () => Promise<void>;
  const identity = { suiteName: 's', source: '/s.jsonl', suiteHash: 'abc', maxIterations: null };
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
  });
  afterAll(async () => {
    await remove();
  });

  it('appends one line per result, drops a line a crash cut short, and keeps the run id', async () => {
    const runDir = path.join(dir, 'run');
    const store = await RunStore.open(runDir, identity);
    await store.append(result('fresh', 'a', 1));
    await store.append(result('fresh', 'b', 2));
    await store.close();
    await appendFile(path.join(runDir, 'results.jsonl'), '{"format":1,"pass":"fresh","task":"c"');
    const reopened = await RunStore.open(runDir, identity);
    expect(reopened.info.runId).toBe(store.info.runId);
    expect(reopened.all().map((entry) => entry.task)).toEqual(['a', 'b']);
    expect(reopened.notes[0]).toContain('dropped an unfinished last line');
    await reopened.append(result('fresh', 'c', 1));
    await reopened.close();
    const lines = (await readFile(path.join(runDir, 'results.jsonl'), 'utf8')).split('\n');
    expect(lines.filter((line) => line !== '').map((line) => (JSON.parse(line) as TaskResult).task)).toEqual(['a', 'b', 'c']);
  });

  it('refuses a second bench in the same directory, and takes over the lock of one that died', async () => {
    const runDir = path.join(dir, 'locked');
    const store = await RunStore.open(runDir, identity);
    const error = await failure(RunStore.open(runDir, identity));
    expect(error.message).toContain(`another ratchet bench (process ${process.pid}) is running in ${runDir}`);
    await store.close();
    // A pid that cannot be alive.
    await writeFile(path.join(runDir, 'lock'), '2147483646\n');
    await (await RunStore.open(runDir, identity)).close();
  });

  it('refuses results of another suite version or budget', async () => {
    const runDir = path.join(dir, 'versions');
    await (await RunStore.open(runDir, identity)).close();
    expect((await failure(RunStore.open(runDir, { ...identity, suiteHash: 'def' }))).message).toContain('holds results of a different version of suite s');
    expect((await failure(RunStore.open(runDir, { ...identity, maxIterations: 3 }))).message).toContain('was run with no --max-iterations, this command has --max-iterations 3');
  });
});
