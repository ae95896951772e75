import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { StopReason, TaskStatus } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { runGoal, showHistory, showTask } from '../src/commands';
import { runDemo } from '../src/demo';
import { codeReply, planReply, RecordedOutput, reflectionReply, scripted, temporaryDirectory, testsReply } from './helpers';

// Embedded mode end to end: every real service (Docker sandbox, tree-sitter
// safety, PGlite storage, memory) in one process over the in-process bus;
// only the model is scripted. Needs Docker and the sandbox image:
// tools/ensure-docker.sh sets both up.
jest.setTimeout(120_000);

const test = (body: string) => `from calc import add\n\n\ndef test_add():\n    ${body}\n`;
const goodCalc = 'def add(a, b):\n    return a + b\n';
const badCalc = 'def add(a, b):\n    return a - b\n';

describe('ratchet run (embedded)', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    // No user config: these tests run on the shipped defaults.
    process.env['RATCHET_CONFIG_DIR'] = path.resolve(__dirname, '../../../config');
  });
  afterAll(async () => {
    await remove();
  });

  it('the demo: fails, reflects, fixes, stores a lesson; the similar second task retrieves it and passes first time; the third fixes an existing project into a patch', async () => {
    const output = new RecordedOutput();
    const ok = await runDemo({ dir: path.join(dir, 'demo') }, output);
    expect(output.all).toContain('MODEL IS SCRIPTED');
    expect(ok).toBe(true);
    expect(output.all).toMatch(/FAIL test_add_creates_the_file_on_first_use: .*FileNotFoundError/);
    expect(output.all).toContain('lesson stored: "Treat a missing or empty JSON data file as an empty collection"');
    const secondTask = output.all.slice(output.all.indexOf('== task 2'));
    expect(secondTask).toMatch(/\d lesson\(s\) for this goal:(\n\s+".*" \(score [\d.]+\))*\n\s+"Treat a missing or empty JSON data file as an empty collection"/);
    expect(output.all).toMatch(/\[iteration 1\] lesson stored/);
    const shopping = await readFile(path.join(dir, 'demo', 'shopping', 'shopping.py'), 'utf8');
    expect(shopping).toContain('def load(path)');
    await readFile(path.join(dir, 'demo', 'todo', 'tests', 'test_todo.py'), 'utf8');

    // Task 3: the coder's tool calls, as they happened, in the real sandbox.
    const thirdTask = output.all.slice(output.all.indexOf('== task 3: fix a failing test in an existing project (workspace mode)'));
    expect(thirdTask).toMatch(/\[iteration 1\] +#1 run python3 -m pytest -q 2>&1 \| tail -n 2 \[allow\] -> .*FAILED tests\/test_stock.py::test_low_stock_includes_the_threshold/);
    expect(thirdTask).toMatch(/#2 search def low_stock -> .*inventory\/stock.py:26:def low_stock\(items, threshold\):/);
    expect(thirdTask).toMatch(/#3 read_file inventory\/stock.py:26-28 -> /);
    expect(thirdTask).toMatch(/#4 edit_file inventory\/stock.py -> edited inventory\/stock.py/);
    expect(thirdTask).toMatch(/#5 run python3 -m pytest -q 2>&1 \| tail -n 2 \[allow\] -> .*4 passed/);
    expect(thirdTask).toMatch(/#6 finish low_stock\(\) left out items exactly at the threshold/);
    // The printed patch holds the fix, and how to apply it; the project itself is as it was.
    expect(thirdTask).toContain('--- a/inventory/stock.py\n+++ b/inventory/stock.py');
    expect(thirdTask).toContain('-    return [item.sku for item in items if item.quantity < threshold]\n+    return [item.sku for item in items if item.quantity <= threshold]');
    expect(thirdTask).toMatch(/Apply the fix with: git -C \S+inventory apply \S+ratchet.patch/);
    const project = path.join(dir, 'demo', 'inventory');
    expect(await readFile(path.join(project, 'inventory', 'stock.py'), 'utf8')).toContain('if item.quantity < threshold]');
    expect(execFileSync('git', ['-C', project, 'status', '--porcelain'], { encoding: 'utf8' })).toBe('');
    expect(execFileSync('git', ['-C', project, 'apply', '--check', path.join(dir, 'demo', 'inventory-patch', 'ratchet.patch')], { encoding: 'utf8' })).toBe('');

    const history = new RecordedOutput();
    await showHistory({ dataDir: path.join(dir, 'demo', 'data') }, history);
    expect(history.lines).toHaveLength(3);
    expect(history.lines[0]).toMatch(/SUCCEEDED +1 it .*make the failing test in tests\/ pass/);
    expect(history.lines[1]).toContain('SUCCEEDED');
    expect(history.lines[1]).toContain('shopping list');
    const taskId = history.lines[2]!.split(' ')[0]!;
    const shown = new RecordedOutput();
    await showTask(taskId, { dataDir: path.join(dir, 'demo', 'data') }, shown);
    expect(shown.all).toContain('iteration 1: failed (TESTS_FAILED)');
    expect(shown.all).toContain('root cause: load() opens the data file unconditionally');
    expect(shown.all).toContain('iteration 2: passed');
  });

  it('blocked code goes to the reflector with the findings, never to the sandbox', async () => {
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', 'import os\n\n\ndef add(a, b):\n    os.system("echo " + str(a))\n    return a + b\n') },
      { role: 'reflector', expect: ['os.system'], reply: reflectionReply('the code runs a shell command') },
      { role: 'coder', expect: ['The safety check of the previous attempt (fix what blocks)', 'calc.py:5 (blocks)'], reply: codeReply('calc.py', goodCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', test('assert add(2, 3) == 5')) },
    ]);
    const output = new RecordedOutput();
    const result = await runGoal('add two numbers', { lang: 'python', out: path.join(dir, 'blocked-out'), dataDir: path.join(dir, 'data'), models }, output);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(result.task.currentIteration).toBe(2);
    expect(output.all).toContain('safety check blocked the code');
    expect(model.remaining).toBe(0);
    const shown = new RecordedOutput();
    await showTask(result.task.id, { dataDir: path.join(dir, 'data'), json: true }, shown);
    const view = JSON.parse(shown.lines[0]!) as { iterations: { tests: string; safetyFindings: { path: string }[]; outcome: string }[] };
    expect(view.iterations[0]).toMatchObject({ outcome: 'failed (SAFETY_BLOCKED)', tests: '' });
    expect(view.iterations[0]!.safetyFindings[0]!.path).toBe('calc.py');
    expect(await readFile(path.join(dir, 'blocked-out', 'calc.py'), 'utf8')).toBe(goodCalc);
  });

  it("a finding only Bandit makes stops the tests in the test job's sandbox and goes to the reflector; the fixed attempt passes", async () => {
    // wsgiref's CGIHandler (httpoxy, Bandit B412, HIGH) is no built-in rule's: the safety check passes it, Bandit's scan before the tests does not.
    const cgiCalc = `${goodCalc}\n\nimport wsgiref.handlers\n\n\ndef serve(app):\n    wsgiref.handlers.CGIHandler().run(app)\n`;
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', cgiCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', test('assert add(2, 3) == 5')) },
      { role: 'reflector', expect: ['bandit.B412 at calc.py:9'], reply: reflectionReply('the module serves CGI, which Bandit refuses') },
      { role: 'coder', expect: ['The safety check of the previous attempt (fix what blocks)', 'calc.py:9 (blocks)'], reply: codeReply('calc.py', goodCalc) },
    ]);
    const output = new RecordedOutput();
    const result = await runGoal('add two numbers', { lang: 'python', out: path.join(dir, 'bandit-out'), dataDir: path.join(dir, 'bandit-data'), models }, output);
    if (result.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED) throw new Error(output.all);
    expect(result.task.currentIteration).toBe(2);
    expect(model.remaining).toBe(0);
    expect(output.all).toMatch(/testing done in [\d.]+s: blocked: /);
    const shown = new RecordedOutput();
    await showTask(result.task.id, { dataDir: path.join(dir, 'bandit-data'), json: true }, shown);
    const view = JSON.parse(shown.lines[0]!) as { iterations: { tests: string; safetyFindings: { ruleId: string; path: string }[]; outcome: string }[] };
    // The gate stopped the run before any test: the first attempt has no test result.
    expect(view.iterations[0]).toMatchObject({ outcome: 'failed (SAFETY_BLOCKED)', tests: '' });
    expect(view.iterations[0]!.safetyFindings).toContainEqual(expect.objectContaining({ ruleId: 'bandit.B412', path: 'calc.py' }));
    expect(await readFile(path.join(dir, 'bandit-out', 'calc.py'), 'utf8')).toBe(goodCalc);
  });

  it('the same failure twice re-plans, three times ends the task as no progress', async () => {
    const failing = test('assert add(2, 3) == 5');
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', badCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', failing) },
      { role: 'reflector', expect: ['AssertionError'], reply: reflectionReply('add subtracts') },
      { role: 'coder', reply: codeReply('calc.py', badCalc) },
      { role: 'reflector', reply: reflectionReply('add still subtracts') },
      { role: 'planner', expect: ['This is a re-plan', 'the same failure twice in a row'], reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', badCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', failing) },
      { role: 'reflector', reply: reflectionReply('add subtracts again') },
    ]);
    const output = new RecordedOutput();
    const result = await runGoal('add two numbers', { lang: 'python', out: path.join(dir, 'stuck-out'), dataDir: path.join(dir, 'data'), models }, output);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_FAILED);
    expect(result.task.stopReason).toBe(StopReason.STOP_REASON_NO_PROGRESS);
    expect(result.task.replanCount).toBe(1);
    expect(result.task.currentIteration).toBe(3);
    expect(result.task.statusReason).toContain('the same failure 3 times in a row');
    // People see the real assertion, not the normalised signature.
    expect(result.task.statusReason).toContain('assert -1 == 5');
    expect(result.task.statusReason).not.toContain('<n>');
    expect(model.remaining).toBe(0);
  });

  it("brings back an earlier task's lesson by its failure signature while reflecting, though none of its words match", async () => {
    const dataDir = path.join(dir, 'signature-data');
    const lesson = { title: 'Check the sign of arithmetic results', body: 'A result with the wrong sign points at the operator used.', tags: ['arithmetic'] };
    const reflection = (rootCause: string) => JSON.stringify({ rootCause, hypothesis: 'fixing it makes the test pass', fixDirection: `fix: ${rootCause}`, confidence: 0.7, replanRecommended: false, lesson, relevantLessonIds: [] });
    const first = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', badCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', test('assert add(2, 3) == 5')) },
      { role: 'reflector', reply: reflection('add subtracts') },
      { role: 'coder', reply: codeReply('calc.py', goodCalc) },
    ]);
    const firstOutput = new RecordedOutput();
    const added = await runGoal('add two numbers', { lang: 'python', out: path.join(dir, 'signature-first'), dataDir, models: first.models }, firstOutput);
    expect(added.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(firstOutput.all).toContain(`lesson stored: "${lesson.title}"`);

    // Another goal failing the same way (pytest reports `assert -1 == 1`, signature `assert -<n> == <n>` as before), in words the lesson does not use.
    const second = scripted([
      { role: 'planner', reply: planReply('ledger.py', 'tests/test_ledger.py') },
      { role: 'coder', reply: codeReply('ledger.py', 'def balance(entries):\n    return -sum(entries)\n') },
      { role: 'tester', reply: testsReply('tests/test_ledger.py', 'from ledger import balance\n\n\ndef test_balance():\n    assert balance([4, -3]) == 1\n') },
      { role: 'reflector', expect: [lesson.title, lesson.body], reply: reflection('balance negates the sum') },
      { role: 'coder', reply: codeReply('ledger.py', 'def balance(entries):\n    return sum(entries)\n') },
    ]);
    const ledger = await runGoal('compute the balance of an account', { lang: 'python', out: path.join(dir, 'signature-second'), dataDir, models: second.models }, new RecordedOutput());
    expect(ledger.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    // Searched by the goal alone (before planning) it was not found: the signature is what brought it back.
    expect(ledger.task.lessons.map((found) => found.title)).not.toContain(lesson.title);
    expect(second.model.remaining).toBe(0);
  });

  it('rewrites a generated test the coder and the reflector find wrong, in the same iteration, without a re-plan', async () => {
    const wrongTest = test('assert add(2, 3) == 6');
    const dispute = { path: 'tests/test_calc.py', testName: 'test_add', reason: 'the goal is to add two numbers: add(2, 3) is 5, not 6' };
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: JSON.stringify({ files: [{ path: 'calc.py', content: goodCalc }], deletedPaths: [], summary: 'add is right; the test is wrong', disputedTests: [dispute] }) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', wrongTest) },
      // The reflector sees the coder's dispute and agrees, with the evidence.
      { role: 'reflector', expect: ['Tests the coder disputed', 'add(2, 3) is 5, not 6'], reply: JSON.stringify({ ...JSON.parse(reflectionReply('the test expects 6 for 2 + 3')), disputedTests: [dispute] }) },
      // The tester is told which test was wrong and why; the code is not asked for again.
      { role: 'tester', expect: ['Tests an earlier version got wrong', 'add(2, 3) is 5, not 6'], reply: testsReply('tests/test_calc.py', test('assert add(2, 3) == 5')) },
    ]);
    const output = new RecordedOutput();
    const result = await runGoal('add two numbers', { lang: 'python', out: path.join(dir, 'disputed-out'), dataDir: path.join(dir, 'data'), models }, output);
    expect(model.remaining).toBe(0);
    expect(result.task).toMatchObject({ status: TaskStatus.TASK_STATUS_SUCCEEDED, currentIteration: 1, replanCount: 0 });
    expect(output.all).toContain('the test is wrong, not the code: tests/test_calc.py::test_add');
    expect(await readFile(path.join(dir, 'disputed-out', 'tests', 'test_calc.py'), 'utf8')).toBe(test('assert add(2, 3) == 5'));
  });

  it("never lets a user's acceptance test be disputed away", async () => {
    const userTests = path.join(dir, 'user-python-tests');
    await import('node:fs/promises').then(async (fs) => {
      await fs.mkdir(userTests, { recursive: true });
      await fs.writeFile(path.join(userTests, 'test_user.py'), test('assert add(2, 3) == 6'));
    });
    const dispute = { path: 'tests/test_user.py', testName: 'test_add', reason: '2 + 3 is 5' };
    const { models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: JSON.stringify({ files: [{ path: 'calc.py', content: goodCalc }], deletedPaths: [], summary: 's', disputedTests: [dispute] }) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', test('assert add(1, 1) == 2')) },
      { role: 'reflector', reply: JSON.stringify({ ...JSON.parse(reflectionReply('the user test expects 6')), disputedTests: [dispute] }) },
    ]);
    const result = await runGoal('add two numbers', { lang: 'python', tests: userTests, out: path.join(dir, 'undisputed-out'), dataDir: path.join(dir, 'data'), models, maxIterations: '1' }, new RecordedOutput());
    // The dispute of an acceptance test is ignored: the iteration counts as a failure of the code.
    expect(result.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_MAX_ITERATIONS });
  });

  it('stops at --max-iterations with the reason, and writes the last attempt marked FAILING', async () => {
    const { models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', badCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', test('assert add(2, 3) == 5')) },
      { role: 'reflector', reply: reflectionReply('add subtracts') },
    ]);
    const output = new RecordedOutput();
    const result = await runGoal('add two numbers', { lang: 'python', out: path.join(dir, 'max-out'), dataDir: path.join(dir, 'data'), models, maxIterations: '1' }, output);
    expect(result.task.stopReason).toBe(StopReason.STOP_REASON_MAX_ITERATIONS);
    expect(output.all).toContain('reached the maximum of 1 iterations');
    expect(output.all).toContain(`ratchet show ${result.task.id}`);
    // The user gets the code of the last attempt and the tests it fails, clearly marked.
    expect(output.all).toContain('wrote the last attempt (FAILING its tests)');
    expect(await readFile(path.join(dir, 'max-out', 'calc.py'), 'utf8')).toBe(badCalc);
    expect(await readFile(path.join(dir, 'max-out', 'tests', 'test_calc.py'), 'utf8')).toBe(test('assert add(2, 3) == 5'));
    const failing = await readFile(path.join(dir, 'max-out', 'FAILING.md'), 'utf8');
    expect(failing).toContain('Tests in iteration 1: 0/1 passed.');
    expect(failing).toMatch(/- \S*test_add: .*assert -1 == 5/);
    expect(failing).toContain(`ratchet resume ${result.task.id} --add-iterations 3`);
  });

  it("runs the user's acceptance tests from --tests, in TypeScript, next to the generated ones", async () => {
    const userTests = path.join(dir, 'user-tests');
    await import('node:fs/promises').then(async (fs) => {
      await fs.mkdir(userTests, { recursive: true });
      await fs.writeFile(path.join(userTests, 'acceptance.test.ts'), "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.ts';\n\ntest('user: adds', () => assert.equal(add(2, 2), 4));\n");
    });
    const { model, models } = scripted([
      { role: 'planner', expect: ['--- tests/acceptance.test.ts'], reply: planReply('src/calc.ts', 'tests/calc.test.ts') },
      { role: 'coder', reply: codeReply('src/calc.ts', 'export function add(a: number, b: number): number {\n  return a + b;\n}\n') },
      {
        role: 'tester',
        reply: testsReply('tests/calc.test.ts', "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.ts';\n\ntest('adds negatives', () => assert.equal(add(-1, -2), -3));\n"),
      },
    ]);
    const output = new RecordedOutput();
    const result = await runGoal('add two numbers', { lang: 'ts', tests: userTests, out: path.join(dir, 'ts-out'), dataDir: path.join(dir, 'data'), models }, output);
    expect(output.all).toMatch(/tests: 2 passed, 0 failed of 2/);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(model.remaining).toBe(0);
    // The user's acceptance tests go to --out with the result, so it runs there as it ran in the sandbox.
    expect(result.written).toContain(path.join(dir, 'ts-out', 'tests', 'acceptance.test.ts'));
  });

  it('gives a TypeScript program a package.json and prints the command that runs it', async () => {
    const todo = [
      "import { readFileSync, writeFileSync, existsSync } from 'node:fs';",
      '',
      'export function addItem(items: string[], title: string): string[] {',
      '  return [...items, title];',
      '}',
      '',
      'if (import.meta.main) {',
      "  const file = 'todo.json';",
      "  const items: string[] = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];",
      '  const [command, ...rest] = process.argv.slice(2);',
      "  if (command === 'add') writeFileSync(file, JSON.stringify(addItem(items, rest.join(' '))));",
      "  console.log(JSON.parse(readFileSync(file, 'utf8')).join('\\n'));",
      '}',
      '',
    ].join('\n');
    const manifest = JSON.stringify({ name: 'todo', type: 'module', scripts: { start: 'node src/todo.ts', test: 'node --test' } }, null, 2);
    const { model, models } = scripted([
      { role: 'planner', expect: ['package.json', 'node --test'], reply: planReply('src/todo.ts', 'tests/todo.test.ts') },
      { role: 'coder', reply: JSON.stringify({ files: [{ path: 'src/todo.ts', content: todo }, { path: 'package.json', content: manifest }], deletedPaths: [], summary: 'todo cli' }) },
      {
        role: 'tester',
        reply: testsReply('tests/todo.test.ts', "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { addItem } from '../src/todo.ts';\n\ntest('adds', () => assert.deepEqual(addItem([], 'milk'), ['milk']));\n"),
      },
    ]);
    const out = path.join(dir, 'ts-cli');
    const output = new RecordedOutput();
    const result = await runGoal('a CLI that manages TODO items in JSON', { lang: 'ts', out, dataDir: path.join(dir, 'data'), models }, output);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(model.remaining).toBe(0);
    // The coder is told how TypeScript is laid out, tested and run here, as the planner and the tester are.
    const coderSystem = model.calls.find((call) => call.request.role === 'coder')!.request.messages[0]!.content;
    expect(coderSystem).toContain('type stripping');
    expect(coderSystem).toContain('package.json');
    expect(output.all).toContain(`run it: cd ${out} && npm start -- ARGS, or npm test`);
    // The printed command's script runs the program as a user would.
    const { execFileSync } = await import('node:child_process');
    expect(execFileSync(process.execPath, ['src/todo.ts', 'add', 'milk'], { cwd: out, encoding: 'utf8' }).trim()).toBe('milk');
  });

  it('says which variables to set when no model is configured, before starting anything', async () => {
    const saved = { ...process.env };
    delete process.env['RATCHET_MODEL_BASE_URL'];
    delete process.env['RATCHET_MODEL_NAME'];
    delete process.env['RATCHET_MODEL_SCRIPT'];
    try {
      await expect(runGoal('add two numbers', { lang: 'python', out: path.join(dir, 'none-out'), dataDir: path.join(dir, 'data') }, new RecordedOutput())).rejects.toMatchObject({
        code: ErrorCode.CONFIG_INVALID,
        message: expect.stringMatching(/RATCHET_MODEL_BASE_URL.*RATCHET_MODEL_NAME.*RATCHET_MODEL_API_KEY/),
      });
    } finally {
      process.env = saved;
    }
  });

  it('rejects bad input with what to do', async () => {
    const options = { lang: 'python', out: path.join(dir, 'bad-out'), dataDir: path.join(dir, 'data') };
    await expect(runGoal('  ', options, new RecordedOutput())).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('usage: ratchet run') });
    await expect(runGoal('x', { ...options, lang: 'cobol' }, new RecordedOutput())).rejects.toMatchObject({ message: expect.stringContaining('use python, typescript or javascript') });
    await expect(runGoal('x', { ...options, maxIterations: 'many' }, new RecordedOutput())).rejects.toMatchObject({ message: expect.stringContaining('--max-iterations') });
    await expect(runGoal('x', { ...options, tests: path.join(dir, 'missing') }, new RecordedOutput())).rejects.toMatchObject({ message: expect.stringContaining('not a directory') });
    await expect(runGoal('x', { ...options, out: path.join(dir, 'demo') }, new RecordedOutput())).rejects.toMatchObject({ code: ErrorCode.ALREADY_EXISTS, message: expect.stringContaining('--force') });
    await expect(showTask('nope-not-a-task', { dataDir: path.join(dir, 'data') }, new RecordedOutput())).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
  });
});
