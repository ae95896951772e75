import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { cp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { StopReason, TaskStatus } from '@ratchet/contracts';
import { servePackageIndex, wheel, type PackageIndex } from '@ratchet/testing';
import { runGoal, showTask } from '../src/commands';
import { codeReply, planReply, RecordedOutput, reflectionReply, scripted, temporaryDirectory, testsReply } from './helpers';

// Third-party packages end to end, embedded: the planner declares them, the
// real safety service judges them against a dependency policy written here,
// a gate asks a person, the real sandbox runner installs them through its
// filtering proxy from a package index this test serves (wheels it builds),
// and the tests import them in a sandbox without network. The JavaScript
// task installs from the npm registry itself. Only the model is scripted.
jest.setTimeout(300_000);

const repoConfig = path.resolve(__dirname, '../../../config');

const policy = `python:
  default: ask
  allow:
    - name: tinyfmt
      version: ">=1,<2"
  deny:
    - name: evilpkg
      reason: ships a crypto miner in its setup script
npm:
  default: ask
  allow:
    - name: is-odd
      version: "^3"
`;

const greetCode = 'from tinyfmt import shout\n\n\ndef greet(name):\n    return shout(f"hello {name}")\n';
const greetTest = 'from app import greet\n\n\ndef test_greet():\n    assert greet("ana") == "HELLO ANA!"\n';
const padCode = 'from padkit import pad\n\n\ndef right(text):\n    return pad(text, 6)\n';
const padTest = 'from app import right\n\n\ndef test_right():\n    assert right("ab") == "    ab"\n';

describe('ratchet run with third-party packages (embedded)', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let index: PackageIndex;
  const saved = { ...process.env };

  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    index = await servePackageIndex({
      tinyfmt: [wheel('tinyfmt', '1.0.0', { 'tinyfmt/__init__.py': 'def shout(text):\n    return text.upper() + "!"\n' })],
      padkit: [wheel('padkit', '0.3.0', { 'padkit/__init__.py': 'def pad(text, width):\n    return text.rjust(width)\n' })],
    });
    const configDir = path.join(dir, 'config');
    await cp(repoConfig, configDir, { recursive: true });
    await writeFile(path.join(configDir, 'dependencies.yaml'), policy);
    process.env['RATCHET_CONFIG_DIR'] = configDir;
    process.env['RATCHET_SANDBOX_DEPENDENCIES_PYTHON_INDEX_URL'] = index.url;
    process.env['RATCHET_SANDBOX_DEPENDENCIES_CACHE_DIRECTORY'] = path.join(dir, 'deps');
    // A TLS-intercepting egress (this CI's) needs its CA inside the install sandbox too.
    if (process.env['NODE_EXTRA_CA_CERTS']) process.env['RATCHET_SANDBOX_DEPENDENCIES_CA_FILE'] = process.env['NODE_EXTRA_CA_CERTS'];
  });

  afterAll(async () => {
    process.env = saved;
    await index?.close();
    await remove();
  });

  const run = (name: string, goal: string, models: ReturnType<typeof scripted>['models'], options: Partial<Parameters<typeof runGoal>[1]> = {}, lang = 'python') =>
    runGoal(goal, { lang, out: path.join(dir, name), dataDir: path.join(dir, 'data'), models, ...options }, new RecordedOutput());

  const shown = async (taskId: string) => {
    const output = new RecordedOutput();
    await showTask(taskId, { dataDir: path.join(dir, 'data') }, output);
    return output.all;
  };

  it('installs an allowlisted package through the install step, and a later task reuses the layer', async () => {
    const turns = () => [
      { role: 'planner' as const, reply: planReply('app.py', 'tests/test_app.py', undefined, [{ name: 'tinyfmt', versionSpec: '' }]) },
      { role: 'coder' as const, reply: codeReply('app.py', greetCode) },
      { role: 'tester' as const, reply: testsReply('tests/test_app.py', greetTest) },
    ];
    const first = await run('first', 'greet people loudly with tinyfmt', scripted(turns()).models);
    expect(first.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    const text = await shown(first.task.id);
    expect(text).toContain('package tinyfmt >=1,<2: allowed (allowed by config/dependencies.yaml (python.allow: tinyfmt >=1,<2))');
    expect(text).toMatch(/install: 1 package\(s\) installed in [\d.]+ s/);

    const second = await run('second', 'greet people loudly with tinyfmt, again', scripted(turns()).models);
    expect(second.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(await shown(second.task.id)).toContain('install: 1 package(s) from the cache');
  });

  it('asks about a package the policy does not know, installs it once approved, and ends a task whose plan needs a refused one', async () => {
    const plan = planReply('app.py', 'tests/test_app.py', undefined, [{ name: 'padkit', versionSpec: '>=0.3' }]);
    const questions: string[] = [];
    const approved = await run(
      'approved',
      'right-align short labels with padkit',
      scripted([
        { role: 'planner', reply: plan },
        { role: 'coder', reply: codeReply('app.py', padCode) },
        { role: 'tester', reply: testsReply('tests/test_app.py', padTest) },
      ]).models,
      { ask: (question) => (questions.push(question), Promise.resolve('y')) },
    );
    expect(questions).toEqual(['Install these packages for this task? [y/N] ']);
    expect(approved.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    const text = await shown(approved.task.id);
    expect(text).toMatch(/approval gate \S+ \(dependency install, iteration 1\): approved by \S+: approved at the terminal/);
    expect(text).toMatch(/package padkit >=0.3: allowed \(approved by \S+: approved at the terminal\)/);

    // No terminal and no --allow-deps: refused; the planner is asked again and still wants it, so the task ends.
    const refused = await run(
      'refused',
      'right-align short labels with padkit',
      scripted([
        { role: 'planner', reply: plan },
        { role: 'planner', reply: plan },
      ]).models,
    );
    expect(refused.task.status).toBe(TaskStatus.TASK_STATUS_FAILED);
    expect(refused.task.stopReason).toBe(StopReason.STOP_REASON_SAFETY_BLOCKED);
    expect(refused.task.statusReason).toMatch(/the plan needs padkit \(>=0.3\), which is refused \(refused by \S+: refused: no terminal to ask at; run with --allow-deps/);

    // --allow-deps says yes without asking.
    const allowed = await run(
      'allowed',
      'right-align short labels with padkit, allowed',
      scripted([
        { role: 'planner', reply: plan },
        { role: 'coder', reply: codeReply('app.py', padCode) },
        { role: 'tester', reply: testsReply('tests/test_app.py', padTest) },
      ]).models,
      { allowDeps: true },
    );
    expect(allowed.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(await shown(allowed.task.id)).toContain('allowed by --allow-deps');
  });

  it('ends a task whose plan needs a denied package, with the policy reason, before any code is written', async () => {
    const { model, models } = scripted([{ role: 'planner', reply: planReply('app.py', 'tests/test_app.py', undefined, [{ name: 'evilpkg', versionSpec: '' }]) }]);
    const result = await run('denied', 'mine some coins', models);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_FAILED);
    expect(result.task.stopReason).toBe(StopReason.STOP_REASON_SAFETY_BLOCKED);
    expect(result.task.statusReason).toContain('the plan needs evilpkg, which is refused (denied by config/dependencies.yaml: evilpkg: ships a crypto miner in its setup script)');
    // One model call, the planner's: nothing was coded or run.
    expect(model.calls).toHaveLength(1);
  });

  it('blocks code that imports a package the plan did not declare and the policy does not allow', async () => {
    const { models } = scripted([
      { role: 'planner', reply: planReply('app.py', 'tests/test_app.py') },
      { role: 'coder', reply: codeReply('app.py', padCode) },
      { role: 'reflector', reply: reflectionReply('padkit is imported without being declared') },
    ]);
    const result = await run('undeclared', 'right-align labels', models, { maxIterations: '1' });
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_FAILED);
    const text = await shown(result.task.id);
    expect(text).toContain('error: SAFETY_BLOCKED');
    expect(text).toMatch(/safety: dep\.undeclared-import app\.py:1 /);
  });

  it('asks about a package the change imports that the plan did not declare, and tests the change with it once allowed', async () => {
    const questions: string[] = [];
    const { models } = scripted([
      { role: 'planner', reply: planReply('app.py', 'tests/test_app.py') },
      { role: 'coder', reply: codeReply('app.py', padCode) },
      { role: 'tester', reply: testsReply('tests/test_app.py', padTest) },
    ]);
    const result = await run('undeclared-allowed', 'right-align labels, the padding from a package', models, { maxIterations: '1', ask: (question) => (questions.push(question), Promise.resolve('y')) });
    expect(questions).toEqual(['Install these packages for this task? [y/N] ']);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    const text = await shown(result.task.id);
    expect(text).toMatch(/approval gate \S+ \(safety override, iteration 1\): approved by \S+: approved at the terminal/);
    expect(text).toMatch(/package padkit: allowed, imported at app\.py:1 without being declared \(approved by \S+: approved at the terminal\)/);
    expect(text).toMatch(/safety: dep\.undeclared-import app\.py:1 \(for a person to decide\) /);
    expect(text).toMatch(/install: 1 package\(s\) installed in [\d.]+ s|install: 1 package\(s\) from the cache/);
  });

  it('runs a TypeScript task that imports an npm package installed from the registry', async () => {
    const reachable = await fetch('https://registry.npmjs.org/is-odd', { signal: AbortSignal.timeout(10_000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (!reachable) {
      console.warn('registry.npmjs.org is not reachable from this machine: skipped the npm install end-to-end test');
      return;
    }
    const code = "import isOdd from 'is-odd';\n\nexport function odd(value: number): boolean {\n  return isOdd(value);\n}\n";
    const test = "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { odd } from '../app.ts';\n\ntest('odd numbers', () => {\n  assert.equal(odd(3), true);\n  assert.equal(odd(4), false);\n});\n";
    const { models } = scripted([
      { role: 'planner', reply: planReply('app.ts', 'tests/app.test.ts', undefined, [{ name: 'is-odd', versionSpec: '^3.0.1' }]) },
      { role: 'coder', reply: codeReply('app.ts', code) },
      { role: 'tester', reply: testsReply('tests/app.test.ts', test) },
    ]);
    const result = await run('npm', 'tell odd numbers with is-odd', models, {}, 'typescript');
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(await shown(result.task.id)).toMatch(/install: \d+ package\(s\) installed/);
  });
});
