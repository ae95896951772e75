import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { appendFile, cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ScriptedTurn } from '@ratchet/llm';
import { startFakeOpenAiServer } from '@ratchet/testing';
import { goalOf, learningLesson, learningSuite, learningTurns, sampleTurns, solutionCode as code, solutionPlan as plan, turnUsage as usage, writeTurns } from './fixtures/bench/scripts';
import { sampleSolutions } from './fixtures/bench/sample-solutions';
import { type Finished, ratchetArgv, runRatchet, temporaryDirectory } from './helpers';

// `ratchet bench` as a user runs it: the built command in a child process,
// embedded mode with every real service (Docker sandbox, PGlite, memory);
// only the model is scripted (or served by the fake OpenAI-compatible
// server through the real HTTP adapter). Needs Docker and the sandbox
// image, and a build (`npx nx run-many -t build`).
jest.setTimeout(240_000);

const repo = path.resolve(__dirname, '../../..');
const sampleSuite = path.join(repo, 'examples', 'bench', 'sample.jsonl');
const workspaceSuite = path.join(repo, 'examples', 'bench', 'workspace');


interface BenchJson {
  passes: { name: string; rows: { task: string; runs: number; passed: number; passedFirst: number; meanIterations: number; meanModelCalls: number; meanTokens: number }[]; totals: { runs: number; passed: number; passedFirst: number; byRole: Record<string, { modelCalls: number }> } }[];
  inputErrors: { task: string; error: string }[];
  models: string[];
  reportFile: string;
  comparison?: { differences: { metric: string; baseline: string; perTask: { task: string; meanDifference: number }[]; overall?: { mean: number; low: number; high: number; n: number } }[] };
  results: { pass: string; repeat: number; task: string; taskId: string; passed: boolean; iterations: number; usage: { promptTokens: number; completionTokens: number; modelCalls: number }; lessonsRetrieved: { title: string }[]; byRole: Record<string, { modelCalls: number }>; models: string[] }[];
}

describe('ratchet bench', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let sampleScript: string;
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    sampleScript = path.join(dir, 'sample.script.json');
    await writeTurns(sampleScript, sampleTurns(2));
  });
  afterAll(async () => {
    await remove();
  });

  /** The environment of a user with the shipped config, a data directory of their own and, by default, the sample's script. */
  function environment(extra: Record<string, string>): NodeJS.ProcessEnv {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    return { ...clean, RATCHET_CONFIG_DIR: path.join(repo, 'config'), RATCHET_STORAGE_DATA_DIR: path.join(dir, 'user-data'), ...extra };
  }

  /** Runs `ratchet bench ARGS` to its end; asynchronously, so a fake server in this process can answer it. */
  function bench(args: string[], extra: Record<string, string> = { RATCHET_MODEL_SCRIPT: sampleScript }): Promise<Finished> {
    return runRatchet(['bench', ...args], { cwd: dir, env: environment(extra), timeoutMs: 200_000 });
  }

  /** The run, when it exited with `status`; else an error with its output. */
  function exited(run: Finished, status = 0): Finished {
    if (run.status !== status) throw new Error(`ratchet bench exited ${String(run.status)}, not ${status}:\n${run.stderr}`);
    return run;
  }

  const resultLines = async (out: string) => (await readFile(path.join(out, 'results.jsonl'), 'utf8')).split('\n').filter((line) => line !== '');

  it('runs the sample suite offline: a row per task, totals, tokens by role, report.md; a rerun runs nothing and prints JSON', async () => {
    const out = path.join(dir, 'sample-run');
    const run = await bench([sampleSuite, '--out', out, '--max-iterations', '2', '--concurrency', '3']);
    expect(run.stderr).toContain('SCRIPTED');
    exited(run);
    expect(run.stdout).toMatch(/^task +result +pass@1 +iterations +model calls +tokens +cost +time +lessons retrieved\/applied$/m);
    expect(run.stdout).toMatch(/^sample\/clamp +passed +yes +1 +2 +240 +\$0\.0000 +[\d.]+s +\d+\/0$/m);
    expect(run.stdout).toMatch(/^sample\/parse_duration +passed +no +2 +4 +480 /m);
    expect(run.stdout).toMatch(/^sample\/initials +FAILED \((max iterations|no progress)\) +no +2 /m);
    expect(run.stdout).toContain('total: 5/6 passed (83%), pass@1 4/6 (67%)');
    expect(run.stdout).toMatch(/tokens by role: planner [\d,]+ \(\d+ calls, \$0\.0000\), coder 960 \(8 calls, \$0\.0000\), tester 0 \(0 calls, \$0\.0000\), reflector 360 \(3 calls/);
    expect(await resultLines(out)).toHaveLength(6);

    const markdown = await readFile(path.join(out, 'report.md'), 'utf8');
    expect(markdown).toContain('# ratchet bench: sample');
    expect(markdown).toMatch(/\| sample\/clamp \| passed \| yes \| 1 \| 2 \| 240 \|/);
    expect(markdown).toContain('| reflector |');
    expect(markdown).toContain('--data-dir');

    const again = await bench([sampleSuite, '--out', out, '--max-iterations', '2', '--json']);
    exited(again);
    expect(again.stderr).toContain('nothing left to run: all 6 task run(s) have results');
    const report = JSON.parse(again.stdout) as BenchJson;
    expect(report.passes).toHaveLength(1);
    const [fresh] = report.passes;
    expect(fresh!.name).toBe('fresh');
    expect(fresh!.totals).toMatchObject({ runs: 6, passed: 5, passedFirst: 4 });
    expect(fresh!.rows.map((row) => row.task)).toEqual(['sample/clamp', 'sample/parse_duration', 'sample/run_lengths', 'sample/chunked', 'sample/balanced', 'sample/initials']);
    expect(fresh!.rows[1]).toMatchObject({ passed: 1, passedFirst: 0, meanIterations: 2, meanModelCalls: 4, meanTokens: 480 });
    const parse = report.results.find((result) => result.task === 'sample/parse_duration')!;
    expect(parse.byRole).toMatchObject({ planner: { modelCalls: 1 }, coder: { modelCalls: 2 }, reflector: { modelCalls: 1 }, tester: { modelCalls: 0 } });
    expect(parse.usage).toMatchObject({ promptTokens: 400, completionTokens: 80, modelCalls: 4 });
    expect(report.models).toEqual(['scripted:sample.script.json']);
    expect(report.reportFile).toBe(path.join(out, 'report.md'));
  });

  it('resumes: a run with --limit, then the full run does only the rest and keeps what was recorded', async () => {
    const out = path.join(dir, 'resume-run');
    const first = await bench([sampleSuite, '--out', out, '--limit', '2', '--max-iterations', '2']);
    exited(first);
    const recorded = await resultLines(out);
    expect(recorded.map((line) => (JSON.parse(line) as { task: string }).task)).toEqual(['sample/clamp', 'sample/parse_duration']);
    const full = await bench([sampleSuite, '--out', out, '--max-iterations', '2']);
    exited(full);
    expect(full.stderr).toContain('4 of 6 task run(s) to do (2 finished earlier, kept)');
    const all = await resultLines(out);
    expect(all).toHaveLength(6);
    expect(all.slice(0, 2)).toEqual(recorded);
    // Nothing of the first run was submitted again.
    expect(full.stderr).not.toMatch(/\] \d+\/\d+ sample\/(clamp|parse_duration):/);
  });

  it('resumes after Ctrl-C: the task in flight is cancelled and not recorded, finished ones are kept, and the rerun does the rest', async () => {
    const suite = path.join(dir, 'slow.jsonl');
    const line = (entryPoint: string, test: string) => JSON.stringify({ task_id: `slow/${entryPoint}`, prompt: `def ${entryPoint}(value, low, high):\n    """Limit value to [low, high]."""\n`, test, entry_point: entryPoint });
    await writeFile(
      suite,
      [
        line('clamp', 'def check(candidate):\n    assert candidate(5, 1, 3) == 3\n'),
        // Slow enough to be interrupted in the sandbox.
        line('clamp_slowly', 'import time\n\n\ndef check(candidate):\n    time.sleep(8)\n    assert candidate(0, 1, 3) == 1\n'),
        line('clamp_again', 'def check(candidate):\n    assert candidate(2, 1, 3) == 2\n'),
      ].join('\n'),
    );
    const script = path.join(dir, 'slow.script.json');
    const clampCode = (name: string) => code(sampleSolutions['clamp']!.replace('def clamp', `def ${name}`));
    await writeTurns(
      script,
      ['clamp', 'clamp_slowly', 'clamp_again'].flatMap((name): ScriptedTurn[] => [
        { role: 'planner', expect: [goalOf(name)], reply: plan, usage, times: 3 },
        { role: 'coder', expect: [goalOf(name)], reply: clampCode(name), usage, times: 3 },
      ]),
    );
    const out = path.join(dir, 'interrupted-run');
    const child = spawn(process.execPath, ratchetArgv(['bench', suite, '--out', out]), { cwd: dir, env: environment({ RATCHET_MODEL_SCRIPT: script }) });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const ended = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
    const deadline = Date.now() + 120_000;
    while (!/1\/3 slow\/clamp:/.test(stderr) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    // The second task is in its slow test run now.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    child.kill('SIGINT');
    exited({ status: await ended, stdout: '', stderr }, 130);
    expect(stderr).toContain('interrupted: cancelling the tasks in flight');
    expect(stderr).toContain('run the same command again to go on');
    const kept = await resultLines(out);
    expect(kept.map((entry) => (JSON.parse(entry) as { task: string }).task)).toEqual(['slow/clamp']);

    const rerun = await bench([suite, '--out', out], { RATCHET_MODEL_SCRIPT: script });
    exited(rerun);
    expect(rerun.stderr).toContain('2 of 3 task run(s) to do (1 finished earlier, kept)');
    const all = (await resultLines(out)).map((entry) => JSON.parse(entry) as { task: string; passed: boolean; taskId: string });
    expect(all.map((entry) => entry.task)).toEqual(['slow/clamp', 'slow/clamp_slowly', 'slow/clamp_again']);
    expect(all.every((entry) => entry.passed)).toBe(true);
    expect(rerun.stdout).toContain('total: 3/3 passed (100%)');
  });

  it('names the file, the line and the problem of a malformed suite, and runs nothing', async () => {
    const suite = path.join(dir, 'bad.jsonl');
    await writeFile(
      suite,
      [
        JSON.stringify({ task_id: 'ok', prompt: 'def f():\n    """One."""\n', test: 'def check(candidate):\n    assert candidate() == 1\n', entry_point: 'f' }),
        '{"task_id": "broken", "prompt": ',
        JSON.stringify({ task_id: 'no-entry', prompt: 'p', test: 't' }),
        '',
        JSON.stringify({ task_id: 'ok', prompt: 'p', test: 't', entry_point: 'f' }),
        JSON.stringify({ task_id: 'odd', prompt: 'p', test: 't', entry_point: 'not a name' }),
      ].join('\n'),
    );
    const run = await bench([suite, '--out', path.join(dir, 'bad-run')]);
    exited(run, 1);
    expect(run.stderr).toContain('bad.jsonl has 4 bad line(s)');
    expect(run.stderr).toMatch(/bad\.jsonl:2: not valid JSON \(.+\)/);
    expect(run.stderr).toContain('bad.jsonl:3: missing entry_point (every line needs task_id, prompt, test, entry_point)');
    expect(run.stderr).toContain('bad.jsonl:5: task_id "ok" is also on line 1; task ids must be unique');
    expect(run.stderr).toContain('bad.jsonl:6: entry_point must name a Python function, e.g. "add" (got "not a name")');
  });

  it('reports a task whose test is not Python as an input error, runs the others, and exits 65', async () => {
    const suite = path.join(dir, 'one-broken.jsonl');
    const sample = (await readFile(sampleSuite, 'utf8')).split('\n');
    const broken = { task_id: 'broken/check', prompt: 'def f():\n    """One."""\n', test: 'def check(candidate)\n    assert candidate() == 1\n', entry_point: 'f' };
    await writeFile(suite, [sample[0], JSON.stringify(broken)].join('\n'));
    const out = path.join(dir, 'broken-run');
    const run = await bench([suite, '--out', out]);
    exited(run, 65);
    expect(run.stdout).toMatch(/^sample\/clamp +passed +yes/m);
    expect(run.stdout).toContain('input errors (1 task(s) not run):');
    expect(run.stdout).toMatch(/broken\/check: its test \(one-broken\.jsonl line 2\) is not valid Python: line 1, column \d+: /);
    expect(await readFile(path.join(out, 'report.md'), 'utf8')).toContain('## Input errors');
  });

  it('names every task folder without a task.yaml or a goal', async () => {
    const suite = path.join(dir, 'folders');
    await mkdir(path.join(suite, 'no-file'), { recursive: true });
    await writeFile(path.join(suite, 'no-file', 'calc.py'), 'x = 1\n');
    await mkdir(path.join(suite, 'no-goal', 'tests'), { recursive: true });
    await writeFile(path.join(suite, 'no-goal', 'task.yaml'), 'test_command: python3 -m pytest -q\nmax_iteration: 3\n');
    const run = await bench([suite]);
    exited(run, 1);
    expect(run.stderr).toContain('has 2 bad task folder(s)');
    expect(run.stderr).toContain('no-file: no task.yaml; add one with at least a goal');
    expect(run.stderr).toMatch(/no-goal\/task\.yaml: .*goal: missing/);
    expect(run.stderr).toContain('max_iteration');
  });

  it('refuses to add results of a changed suite to a run, and says what to do', async () => {
    const suite = path.join(dir, 'changing.jsonl');
    const first = (await readFile(sampleSuite, 'utf8')).split('\n')[0]!;
    await writeFile(suite, `${first}\n`);
    const out = path.join(dir, 'changing-run');
    exited(await bench([suite, '--out', out]));
    await appendFile(suite, `${(await readFile(sampleSuite, 'utf8')).split('\n')[2]!}\n`);
    const changed = await bench([suite, '--out', out]);
    exited(changed, 1);
    expect(changed.stderr).toMatch(/holds results of a different version of suite changing \(suite hash \w{12}, now \w{12}\)/);
    expect(changed.stderr).toContain('start a new run with --out ANOTHER_DIR, or delete');
    expect(await resultLines(out)).toHaveLength(1);
    const budget = await bench([suite, '--out', path.join(dir, 'changing-run-2'), '--max-iterations', '3']);
    exited(budget);
    const otherBudget = await bench([suite, '--out', path.join(dir, 'changing-run-2'), '--max-iterations', '4']);
    expect(otherBudget.stderr).toContain('was run with --max-iterations 3, this command has --max-iterations 4');
  });

  it('benches a model behind an OpenAI-compatible endpoint through the real HTTP adapter', async () => {
    const server = await startFakeOpenAiServer();
    try {
      server.enqueue({ kind: 'completion', content: plan, usage: { promptTokens: 311, completionTokens: 42 } }, { kind: 'completion', content: code(sampleSolutions['clamp']!), usage: { promptTokens: 508, completionTokens: 77 } });
      const suite = path.join(dir, 'endpoint.jsonl');
      await writeFile(suite, `${(await readFile(sampleSuite, 'utf8')).split('\n')[0]!}\n`);
      const run = await bench([suite, '--out', path.join(dir, 'endpoint-run'), '--json'], { RATCHET_MODEL_BASE_URL: server.url, RATCHET_MODEL_NAME: 'fake-model', RATCHET_MODEL_API_KEY: 'sk-bench-test' });
      expect(run.stderr).toContain('model: fake-model');
      exited(run);
      const report = JSON.parse(run.stdout) as BenchJson;
      expect(report.results).toHaveLength(1);
      expect(report.results[0]).toMatchObject({ task: 'sample/clamp', passed: true, iterations: 1, usage: { promptTokens: 819, completionTokens: 119, modelCalls: 2 }, models: ['fake-model'] });
      expect(report.results[0]!.byRole).toMatchObject({ planner: { modelCalls: 1 }, coder: { modelCalls: 1 } });
      const bodies = server.chatBodies();
      expect(bodies).toHaveLength(2);
      expect(bodies.every((body) => body.model === 'fake-model')).toBe(true);
      expect(bodies[0]!.messages.at(-1)!.content).toContain(goalOf('clamp'));
      expect(server.requests[0]!.headers['authorization']).toBe('Bearer sk-bench-test');
    } finally {
      await server.close();
    }
  });

  it('runs a suite of workspace tasks: each project is fixed through the tools and judged by its own tests', async () => {
    const fixMedian = 'Goal: median() in stats.py is wrong';
    const addSlugify = 'Goal: Add slugify(title) to textutils.py';
    const slugify = [
      '"""Text helpers."""',
      'import re',
      '',
      '',
      'def shorten(text, width):',
      '    """text cut to at most `width` characters, ending in "..." when it was cut."""',
      '    if len(text) <= width:',
      '        return text',
      '    return text[: max(0, width - 3)] + "..."',
      '',
      '',
      'def slugify(title):',
      '    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")',
      '',
    ].join('\n');
    const script = path.join(dir, 'workspace.script.json');
    await writeTurns(script, [
      { role: 'planner', expect: [fixMedian], reply: JSON.stringify({ ...JSON.parse(plan), summary: 'fix median' }) },
      { role: 'coder', expect: [fixMedian, '4 passed'], toolCalls: [{ name: 'finish', arguments: { summary: 'median of an even count is the mean of the middle two' } }] },
      { role: 'coder', expect: [fixMedian, 'edited stats.py'], toolCalls: [{ name: 'run', arguments: { command: 'python3 -m pytest -q 2>&1 | tail -n 1' } }] },
      {
        role: 'coder',
        expect: [fixMedian],
        toolCalls: [{ name: 'edit_file', arguments: { path: 'stats.py', search: '    return ordered[middle]\n', replace: '    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n' } }],
      },
      { role: 'planner', expect: [addSlugify], reply: JSON.stringify({ ...JSON.parse(plan), summary: 'add slugify' }) },
      { role: 'coder', expect: [addSlugify, 'wrote textutils.py'], toolCalls: [{ name: 'finish', arguments: { summary: 'slugify added' } }] },
      { role: 'coder', expect: [addSlugify], toolCalls: [{ name: 'write_file', arguments: { path: 'textutils.py', content: slugify } }] },
    ]);
    const out = path.join(dir, 'workspace-run');
    const run = await bench([workspaceSuite, '--out', out, '--json'], { RATCHET_MODEL_SCRIPT: script });
    exited(run);
    const report = JSON.parse(run.stdout) as BenchJson;
    expect(report.results.map((result) => [result.task, result.passed, result.iterations])).toEqual([
      ['add-slugify', true, 1],
      ['fix-median', true, 1],
    ]);
    expect(report.results.find((result) => result.task === 'fix-median')!.byRole).toMatchObject({ planner: { modelCalls: 1 }, coder: { modelCalls: 3 } });
  });

  it('refuses the approval gates of the tasks it drives instead of waiting for an answer nobody gives', async () => {
    const suite = path.join(dir, 'gate-suite');
    await cp(path.join(workspaceSuite, 'fix-median'), path.join(suite, 'fix-median'), { recursive: true });
    // A plan that needs a package config/dependencies.yaml asks a person about.
    const needsPackage = JSON.stringify({ ...JSON.parse(plan), summary: 'fix median with a package', dependencies: [{ name: 'statistics-plus', versionSpec: '>=1' }] });
    const script = path.join(dir, 'gate.script.json');
    await writeTurns(script, [{ role: 'planner', reply: needsPackage, times: 5 }]);
    const out = path.join(dir, 'gate-run');
    const run = await bench([suite, '--out', out, '--json'], { RATCHET_MODEL_SCRIPT: script });
    const report = JSON.parse(run.stdout) as BenchJson;
    expect(report.results.map((result) => [result.task, result.passed])).toEqual([['fix-median', false]]);
    // The pass's own history, named on the pass's first line.
    const dataDir = /== pass fresh: .*, embedded \((.+)\)/.exec(run.stderr)?.[1];
    const shown = await runRatchet(['show', report.results[0]!.taskId, '--data-dir', dataDir ?? ''], { cwd: dir, env: environment({}), timeoutMs: 60_000 });
    expect(shown.stdout).toContain('ratchet bench answers no approval gate');
  });

  it('judges a SWE-style task by hidden tests the agent never sees: an oracle fix is resolved, a change that passes the visible tests but not the hidden ones is not', async () => {
    // A project whose visible test passes before and after; the fix's regression test is hidden.
    const suite = path.join(dir, 'swe-style');
    const project = path.join(suite, 'even-median');
    await mkdir(path.join(project, 'tests'), { recursive: true });
    await writeFile(path.join(project, 'stats.py'), 'def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return ordered[middle]\n');
    // Both tests import a module only the task's setup makes (as a build makes _version.py): without the setup in the task and in the hidden run, nothing passes.
    await writeFile(path.join(project, 'tests', 'test_stats.py'), 'from stats import median\nfrom _scale import SCALE\n\n\ndef test_odd_count():\n    assert median([3, 1, 2]) * SCALE == 2\n');
    await writeFile(path.join(project, 'tests', 'test_regression.py'), 'from stats import median\nfrom _scale import SCALE\n\n\ndef test_even_count():\n    assert median([4, 1, 3, 2]) * SCALE == 2.5\n');
    await writeFile(
      path.join(project, 'task.yaml'),
      [
        'goal: median([4, 1, 3, 2]) returns 3, but the median of an even count is the mean of the two middle values (2.5)',
        `setup: python3 -c "open('_scale.py', 'w').write('SCALE = 1\\n')"`,
        'hidden_tests: [tests/test_regression.py]',
        'fail_to_pass: [tests/test_regression.py::test_even_count]',
        'pass_to_pass: [tests/test_stats.py::test_odd_count]',
        'max_iterations: 1',
        '',
      ].join('\n'),
    );
    // A second task names a hidden file it does not have: an input error of that task only.
    await mkdir(path.join(suite, 'missing-hidden', 'tests'), { recursive: true });
    await writeFile(path.join(suite, 'missing-hidden', 'calc.py'), 'def add(a, b):\n    return a + b\n');
    await writeFile(path.join(suite, 'missing-hidden', 'tests', 'test_calc.py'), 'from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n');
    await writeFile(path.join(suite, 'missing-hidden', 'task.yaml'), 'goal: add subtraction\nhidden_tests: [tests/test_sub.py]\nfail_to_pass: [tests/test_sub.py::test_sub]\n');

    // The same bug in JavaScript, judged by node's test runner: ids are the file and the test's describe path.
    const jsProject = path.join(suite, 'even-median-js');
    await mkdir(path.join(jsProject, 'test'), { recursive: true });
    await writeFile(path.join(jsProject, 'package.json'), '{ "type": "module" }\n');
    await writeFile(path.join(jsProject, 'stats.js'), 'export function middle(values) {\n  const ordered = [...values].sort((a, b) => a - b)\n  const half = Math.floor(ordered.length / 2)\n  return ordered[half]\n}\n');
    const jsTest = (name: string, call: string, expected: string) => `import { equal } from 'node:assert'\nimport { describe, test } from 'node:test'\nimport { middle } from '../stats.js'\n\ndescribe('middle', () => {\n  test('${name}', () => equal(${call}, ${expected}))\n})\n`;
    await writeFile(path.join(jsProject, 'test', 'stats.test.js'), jsTest('odd count', 'middle([3, 1, 2])', '2'));
    await writeFile(path.join(jsProject, 'test', 'regression.test.js'), jsTest('even count', 'middle([4, 1, 3, 2])', '2.5'));
    await writeFile(
      path.join(jsProject, 'task.yaml'),
      [
        'goal: middle([4, 1, 3, 2]) returns 3, but the middle of an even count is the mean of the two middle values (2.5)',
        'language: javascript',
        'hidden_tests: [test/regression.test.js]',
        'fail_to_pass: ["test/regression.test.js::middle > even count"]',
        'pass_to_pass: ["test/stats.test.js::middle"]',
        'max_iterations: 1',
        '',
      ].join('\n'),
    );

    const goal = 'Goal: median([4, 1, 3, 2]) returns 3';
    const jsGoal = 'Goal: middle([4, 1, 3, 2]) returns 3';
    const fix = { name: 'edit_file', arguments: { path: 'stats.py', search: '    return ordered[middle]\n', replace: '    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n' } };
    const harmless = { name: 'edit_file', arguments: { path: 'stats.py', search: 'def median(values):\n', replace: 'def median(values):\n    """The middle value of values."""\n' } };
    const jsFix = { name: 'edit_file', arguments: { path: 'stats.js', search: '  return ordered[half]\n', replace: '  if (ordered.length % 2 === 0) return (ordered[half - 1] + ordered[half]) / 2\n  return ordered[half]\n' } };
    const jsHarmless = { name: 'edit_file', arguments: { path: 'stats.js', search: 'export function middle(values) {\n', replace: '/** The middle value of values. */\nexport function middle(values) {\n' } };
    const jsPlan = JSON.stringify({ ...JSON.parse(plan), steps: [{ description: 'fix stats.js', paths: ['stats.js'] }], files: [{ path: 'stats.js', purpose: 'code', isTest: false }], testStrategy: 'node --test' });
    const runWith = async (name: string, edit: typeof fix, jsEdit: typeof fix) => {
      const script = path.join(dir, `${name}.script.json`);
      await writeTurns(script, [
        { role: 'planner', expect: [goal], reply: JSON.stringify({ ...JSON.parse(plan), summary: name }) },
        { role: 'coder', expect: [goal, 'edited stats.py'], toolCalls: [{ name: 'finish', arguments: { summary: name } }] },
        { role: 'coder', expect: [goal], toolCalls: [edit] },
        { role: 'planner', expect: [jsGoal], reply: JSON.stringify({ ...JSON.parse(jsPlan), summary: name }) },
        { role: 'coder', expect: [jsGoal, 'edited stats.js'], toolCalls: [{ name: 'finish', arguments: { summary: name } }] },
        { role: 'coder', expect: [jsGoal], toolCalls: [jsEdit] },
      ]);
      const run = await bench([suite, '--out', path.join(dir, `${name}-run`), '--json'], { RATCHET_MODEL_SCRIPT: script });
      exited(run, 65);
      return { run, report: JSON.parse(run.stdout) as BenchJson & { passes: { totals: { judged: number; resolved: number } }[] } };
    };

    const oracle = await runWith('oracle', fix, jsFix);
    const [resolved, resolvedJs] = oracle.report.results;
    expect(resolved).toMatchObject({ task: 'even-median', passed: true, hidden: { resolved: true, failToPass: { passed: 1, total: 1 }, passToPass: { passed: 1, total: 1 }, notPassing: [] } });
    expect(resolvedJs).toMatchObject({ task: 'even-median-js', passed: true, hidden: { resolved: true, failToPass: { passed: 1, total: 1 }, passToPass: { passed: 1, total: 1 }, notPassing: [] } });
    expect(oracle.report.passes[0]!.totals).toMatchObject({ judged: 2, resolved: 2 });
    expect(oracle.report.inputErrors).toEqual([{ task: 'missing-hidden', error: 'hidden test tests/test_sub.py is not a file of the task folder (or its ignore rules leave it out)' }]);
    const markdown = await readFile(path.join(dir, 'oracle-run', 'report.md'), 'utf8');
    expect(markdown).toMatch(/\| even-median \| passed \| yes \| yes \| 1 \|/);
    expect(markdown).toContain('resolved 2/2 (100%) by the hidden tests');

    const unchanged = await runWith('null-oracle', harmless, jsHarmless);
    // The loop passes (its visible test passes: it never ran the hidden one, which fails here), but the hidden test says the bug is still there.
    expect(unchanged.report.results[0]).toMatchObject({ task: 'even-median', passed: true, hidden: { resolved: false, failToPass: { passed: 0, total: 1 }, passToPass: { passed: 1, total: 1 }, notPassing: ['tests/test_regression.py::test_even_count'] } });
    expect(unchanged.report.results[1]).toMatchObject({ task: 'even-median-js', passed: true, hidden: { resolved: false, failToPass: { passed: 0, total: 1 }, passToPass: { passed: 1, total: 1 }, notPassing: ['test/regression.test.js::middle > even count'] } });
    expect(unchanged.report.passes[0]!.totals).toMatchObject({ judged: 2, resolved: 0 });
    expect(unchanged.run.stderr).toMatch(/even-median: passed first time; hidden tests: NOT resolved \(0\/1 fail-to-pass, 1\/1 pass-to-pass\)/);
  });

  it('takes a task from a git history (the parent of a fix) and proves it with oracles: the upstream fix resolves it, changing nothing does not', async () => {
    // A project with a real two-commit history: the bug, then the fix with its regression test.
    const clone = path.join(dir, 'sources', 'example+stats');
    await mkdir(path.join(clone, 'tests'), { recursive: true });
    const git = (...args: string[]) => execFileSync('git', ['-C', clone, ...args], { encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@example.com' } }).trim();
    git('init', '-q');
    await writeFile(path.join(clone, 'stats.py'), 'def median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n');
    await writeFile(path.join(clone, 'tests', 'test_stats.py'), 'from stats import median\n\n\ndef test_odd():\n    assert median([3, 1, 2]) == 2\n');
    git('add', '.');
    git('commit', '-qm', 'median');
    const parent = git('rev-parse', 'HEAD');
    await writeFile(path.join(clone, 'stats.py'), 'def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n');
    await writeFile(path.join(clone, 'tests', 'test_stats.py'), 'from stats import median\n\n\ndef test_odd():\n    assert median([3, 1, 2]) == 2\n\n\ndef test_even():\n    assert median([4, 1, 3, 2]) == 2.5\n');
    git('commit', '-qam', 'median of an even count');
    const fix = git('rev-parse', 'HEAD');
    const suite = path.join(dir, 'from-history');
    await mkdir(path.join(suite, 'stats-even'), { recursive: true });
    await writeFile(
      path.join(suite, 'stats-even', 'task.yaml'),
      [
        'goal: median([4, 1, 3, 2]) gives 3; for an even count it should be the mean of the two middle values, 2.5',
        `source: { repo: example/stats, commit: ${parent}, fix: ${fix} }`,
        'hidden_tests: [tests/test_stats.py]',
        'fail_to_pass: [tests/test_stats.py::test_even]',
        'pass_to_pass: [tests/test_stats.py::test_odd]',
        'max_iterations: 1',
        '',
      ].join('\n'),
    );
    const oracle = async (kind: string, extra: string[] = ['--sources', path.join(dir, 'sources')]) => {
      const run = await bench([suite, '--out', path.join(dir, `history-${kind}-${extra.length}`), '--oracle', kind, '--json', ...extra], {});
      return { run, report: JSON.parse(exited(run, run.status === 65 ? 65 : 0).stdout) as BenchJson & { passes: { totals: { judged: number; resolved: number } }[] } };
    };

    const fixed = await oracle('fix');
    expect(fixed.run.stderr).toContain('scripted:oracle-fix');
    expect(fixed.report.results[0]).toMatchObject({ task: 'stats-even', passed: true, hidden: { resolved: true, failToPass: { passed: 1, total: 1 }, passToPass: { passed: 1, total: 1 } } });
    expect(fixed.report.passes[0]!.totals).toMatchObject({ judged: 1, resolved: 1 });

    const untouched = await oracle('none');
    expect(untouched.report.results[0]).toMatchObject({ task: 'stats-even', hidden: { resolved: false, failToPass: { passed: 0, total: 1 }, passToPass: { passed: 1, total: 1 } } });
    expect(untouched.report.passes[0]!.totals).toMatchObject({ judged: 1, resolved: 0 });

    // Without the clones the task cannot run: an input error that says what to pass.
    const noSources = await oracle('none', []);
    expect(noSources.run.status).toBe(65);
    expect(noSources.report.inputErrors).toEqual([{ task: 'stats-even', error: 'needs a clone of example/stats: pass --sources DIR (or set RATCHET_BENCH_SOURCES) with example+stats in it' }]);
  });

  it('--compare-memory: the warm pass needs fewer iterations than memory off, with a confidence interval', async () => {
    // Task A fails first (the reflector's lesson says why) and is fixed; task
    // B's coder writes good code only when that lesson is in its prompt, so
    // with memory B fails first too, and warm both pass first time.
    const suite = path.join(dir, 'learning.jsonl');
    await writeFile(suite, learningSuite());
    const script = path.join(dir, 'learning.script.json');
    await writeTurns(script, learningTurns());
    const out = path.join(dir, 'compare-run');
    const run = await bench([suite, '--out', out, '--compare-memory', '--json'], { RATCHET_MODEL_SCRIPT: script });
    exited(run);
    const report = JSON.parse(run.stdout) as BenchJson;
    expect(report.passes.map((pass) => pass.name)).toEqual(['off', 'cold', 'warm']);
    const iterations = (pass: string) => report.results.filter((result) => result.pass === pass).map((result) => [result.task, result.iterations]);
    expect(iterations('off')).toEqual([
      ['learning/a', 2],
      ['learning/b', 2],
    ]);
    expect(iterations('warm')).toEqual([
      ['learning/a', 1],
      ['learning/b', 1],
    ]);
    const offResults = report.results.filter((result) => result.pass === 'off');
    expect(offResults.every((result) => result.lessonsRetrieved.length === 0)).toBe(true);
    const warmResults = report.results.filter((result) => result.pass === 'warm');
    expect(warmResults.every((result) => result.lessonsRetrieved.some((retrieved) => retrieved.title === learningLesson))).toBe(true);
    const versusOff = report.comparison!.differences.find((difference) => difference.metric === 'iterations' && difference.baseline === 'off')!;
    expect(versusOff.perTask).toEqual([
      { task: 'learning/a', meanDifference: -1, pairs: 1 },
      { task: 'learning/b', meanDifference: -1, pairs: 1 },
    ]);
    expect(versusOff.overall).toEqual({ n: 2, mean: -1, low: -1, high: -1 });
    expect(run.stderr).not.toContain('Error');
    const table = await bench([suite, '--out', out, '--compare-memory'], { RATCHET_MODEL_SCRIPT: script });
    expect(table.stdout).toContain('== memory compared (warm minus baseline; negative is better)');
    expect(table.stdout).toMatch(/warm vs off: -1\.00 iterations per task, 95% CI \[-1\.00, -1\.00\], n=2 \(few pairs: the interval is optimistic\)/);
    expect(await readFile(path.join(out, 'report.md'), 'utf8')).toContain('## Memory compared');
  });
});
