import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TaskStatus } from '@ratchet/contracts';
import type { ScriptedTurn } from '@ratchet/llm';
import { patchFileName, runGoal, showTask } from '../src/commands';
import { planReply, RecordedOutput, scripted, temporaryDirectory } from './helpers';

// Judge the change, not the project: a real project's module already has an
// optional dependency (try/except ImportError), asserts (Bandit B101), a
// "password" default (B107) and even a shell call that would block if the
// change wrote it. A one-line fix must pass the safety and dependency checks
// (real safety service, Bandit in the real sandbox) and succeed in one
// iteration, its patch holding only the fix. Only the model is scripted.
jest.setTimeout(180_000);

const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@example.com' } });

const table = [
  'import subprocess',
  '',
  'try:',
  '    import wcwidth',
  'except ImportError:',
  '    wcwidth = None',
  '',
  '',
  'def render(rows, floor_token: str = "<"):',
  '    assert rows is not None',
  '    return [floor_token + str(row) for row in rows]',
  '',
  '',
  'def page(command):',
  '    return subprocess.call(command, shell=True)',
  '',
  '',
  'def clamp(value, low, high):',
  '    assert low <= high',
  '    return max(low, min(value, low))',
  '',
].join('\n');

const tableTest = ['from tabulate_lite.table import clamp, render', '', '', 'def test_clamp():', '    assert clamp(5, 0, 10) == 5', '    assert clamp(-1, 0, 10) == 0', '    assert clamp(11, 0, 10) == 10', '', '', 'def test_render():', '    assert render([1]) == ["<1"]', ''].join('\n');

async function project(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'tabulate_lite'), { recursive: true });
  await mkdir(path.join(dir, 'tests'));
  await writeFile(path.join(dir, 'tabulate_lite', '__init__.py'), '');
  await writeFile(path.join(dir, 'tabulate_lite', 'table.py'), table);
  await writeFile(path.join(dir, 'tests', 'test_table.py'), tableTest);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'tabulate-lite');
}

const turns: ScriptedTurn[] = [
  { role: 'planner', reply: planReply('tabulate_lite/table.py', 'tests/test_table.py', { changesTests: false }) },
  { role: 'coder', toolCalls: [{ name: 'edit_file', arguments: { path: 'tabulate_lite/table.py', search: 'min(value, low)', replace: 'min(value, high)' } }] },
  { role: 'coder', expect: ['edited tabulate_lite/table.py'], toolCalls: [{ name: 'run', arguments: { command: 'python3 -m pytest -q' } }] },
  { role: 'coder', expect: ['2 passed'], toolCalls: [{ name: 'finish', arguments: { summary: 'clamp() capped at low; it caps at high now' } }] },
];

/** A project whose tests read fixtures that are not UTF-8 (as sqlparse's tests/files/*.sql): split() cuts at the wrong character. */
async function fixtureProject(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'tests', 'files'), { recursive: true });
  await writeFile(path.join(dir, 'sqlsplit.py'), 'def split(text):\n    return [part.strip() for part in text.split(":") if part.strip()]\n');
  // Latin-1: "café" is not valid UTF-8, so the file is a data file, never shown to the model.
  await writeFile(path.join(dir, 'tests', 'files', 'latin1.sql'), Buffer.from("select 'caf\xe9';\nselect 1;\n", 'latin1'));
  await writeFile(
    path.join(dir, 'tests', 'test_split.py'),
    [
      'from pathlib import Path',
      '',
      'from sqlsplit import split',
      '',
      '',
      'def test_split_latin1_file():',
      '    text = (Path(__file__).parent / "files" / "latin1.sql").read_text(encoding="latin-1")',
      '    assert split(text) == ["select \'caf\\xe9\'", "select 1"]',
      '',
    ].join('\n'),
  );
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'sqlsplit');
}

const fixtureTurns: ScriptedTurn[] = [
  { role: 'planner', reply: planReply('sqlsplit.py', 'tests/test_split.py', { changesTests: false }) },
  { role: 'coder', toolCalls: [{ name: 'run', arguments: { command: 'python3 -m pytest -q 2>&1 | tail -n 2' } }] },
  { role: 'coder', expect: ['1 failed'], toolCalls: [{ name: 'edit_file', arguments: { path: 'sqlsplit.py', search: 'text.split(":")', replace: 'text.split(";")' } }] },
  { role: 'coder', expect: ['edited sqlsplit.py'], toolCalls: [{ name: 'run', arguments: { command: 'python3 -m pytest -q' } }] },
  { role: 'coder', expect: ['1 passed'], toolCalls: [{ name: 'finish', arguments: { summary: 'split at semicolons' } }] },
];

/** A project that cannot be imported as it is in git: its version module is made by a build step and gitignored. */
async function generatedModuleProject(dir: string, projectFile?: string): Promise<void> {
  await mkdir(path.join(dir, 'shout'), { recursive: true });
  await mkdir(path.join(dir, 'tools'));
  await mkdir(path.join(dir, 'tests'));
  await writeFile(path.join(dir, 'tools', 'make_version.py'), 'from pathlib import Path\n\nPath("shout/_version.py").write_text("VERSION = \\"1.2.dev3\\"\\n")\n');
  await writeFile(path.join(dir, 'shout', '__init__.py'), 'from shout._version import VERSION\n\n\ndef shout(text):\n    return text.lower() + "!"\n');
  await writeFile(path.join(dir, '.gitignore'), 'shout/_version.py\n');
  await writeFile(path.join(dir, 'tests', 'test_shout.py'), 'from shout import VERSION, shout\n\n\ndef test_shout():\n    assert shout("hi") == "HI!"\n\n\ndef test_version():\n    assert VERSION.startswith("1.2")\n');
  if (projectFile !== undefined) await writeFile(path.join(dir, '.ratchet.yaml'), projectFile);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'shout');
}

const shoutTurns: ScriptedTurn[] = [
  { role: 'planner', reply: planReply('shout/__init__.py', 'tests/test_shout.py', { changesTests: false }) },
  { role: 'coder', toolCalls: [{ name: 'edit_file', arguments: { path: 'shout/__init__.py', search: 'text.lower()', replace: 'text.upper()' } }] },
  { role: 'coder', expect: ['edited shout/__init__.py'], toolCalls: [{ name: 'run', arguments: { command: 'python3 -m pytest -q' } }] },
  { role: 'coder', expect: ['2 passed'], toolCalls: [{ name: 'finish', arguments: { summary: 'shout() upper-cases now' } }] },
];

describe('a one-line fix in a module with pre-existing findings (embedded)', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    process.env['RATCHET_CONFIG_DIR'] = path.resolve(__dirname, '../../../config');
  });
  afterAll(async () => {
    await remove();
  });

  it('passes the checks and succeeds in one iteration; the patch holds only the fix; the pre-existing findings are shown as not blocking', async () => {
    const workspace = path.join(dir, 'tabulate-lite');
    await project(workspace);
    const { model, models } = scripted(turns);
    const output = new RecordedOutput();
    const out = path.join(dir, 'out');
    const result = await runGoal('clamp(11, 0, 10) returns 0 instead of 10', { lang: 'python', out, dataDir: path.join(dir, 'data'), models, workspace }, output);
    if (result.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED) throw new Error(output.all);
    expect(result.task.currentIteration).toBe(1);
    expect(model.remaining).toBe(0);
    // The built-in rules (in the safety check) and Bandit (in the test job, before the tests) found the project's own findings in the changed module, none blocking.
    expect(output.all).toMatch(/safety check done in [\d.]+s: 0 finding\(s\), not blocking; [1-9] pre-existing finding\(s\) in the changed files, not blocking/);
    expect(output.all).toMatch(/testing done in [\d.]+s: .*code check with Bandit: 0 finding\(s\), not blocking; [4-9] pre-existing finding\(s\) in the changed files, not blocking/);
    expect(output.all).not.toContain('WAITING FOR APPROVAL');
    const patch = await readFile(path.join(out, patchFileName), 'utf8');
    expect(patch.match(/^[-+](?![-+])/gm)).toEqual(['-', '+']);
    expect(patch).toContain('-    return max(low, min(value, low))\n+    return max(low, min(value, high))');
    const shown = new RecordedOutput();
    await showTask(result.task.id, { dataDir: path.join(dir, 'data') }, shown);
    expect(shown.all).toMatch(/safety: bandit\.B107 tabulate_lite\/table\.py:9 \(pre-existing, not blocking\)/);
    expect(shown.all).toMatch(/safety: bandit\.B101 tabulate_lite\/table\.py:19 \(pre-existing, not blocking\)/);
    expect(shown.all).toMatch(/safety: py\.subprocess-shell tabulate_lite\/table\.py:15 \(pre-existing, not blocking\)/);
    expect(shown.all).not.toContain('wcwidth');
  });

  it('sends files that are not text to the sandbox, so tests that read binary fixtures pass there, and never to the model', async () => {
    const workspace = path.join(dir, 'sqlsplit');
    await fixtureProject(workspace);
    const { model, models } = scripted(fixtureTurns);
    const output = new RecordedOutput();
    const result = await runGoal('split() must cut statements at semicolons', { lang: 'python', out: path.join(dir, 'sqlsplit-out'), dataDir: path.join(dir, 'data'), models, workspace }, output);
    if (result.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED) throw new Error(output.all);
    expect(output.all).toContain('1 data file(s) for the sandbox only');
    expect(output.all).not.toContain('not sent: tests/files/latin1.sql');
    expect(output.all).toContain('tests: 1 passed, 0 failed of 1');
    const sent = model.calls.map((call) => call.request.messages.map((message) => message.content).join('\n')).join('\n');
    expect(sent).not.toContain('select 1;');
    const patch = await readFile(path.join(dir, 'sqlsplit-out', patchFileName), 'utf8');
    expect(patch).not.toContain('latin1.sql');
  });

  it('lets a correct fix succeed in a project whose other test already failed before the change, reporting that test as pre-existing', async () => {
    const workspace = path.join(dir, 'broken-before');
    await project(workspace);
    // A test the goal is not about, failing before any change (it needs a service the sandbox does not have).
    await writeFile(path.join(workspace, 'tests', 'test_remote.py'), 'import socket\n\n\ndef test_reaches_the_registry():\n    socket.create_connection(("registry.invalid", 443), timeout=1)\n');
    git(workspace, 'add', '.');
    git(workspace, 'commit', '-q', '-m', 'a test that needs the network');
    const { model, models } = scripted(turns);
    const output = new RecordedOutput();
    const result = await runGoal('clamp(11, 0, 10) returns 0 instead of 10', { lang: 'python', out: path.join(dir, 'broken-before-out'), dataDir: path.join(dir, 'data'), models, workspace }, output);
    if (result.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED) throw new Error(output.all);
    expect(result.task.currentIteration).toBe(1);
    expect(output.all).toMatch(/baseline: before any change 2 of 3 test\(s\) fail \(tests\.test_remote::test_reaches_the_registry, tests\.test_table::test_clamp\)/);
    expect(output.all).toMatch(/testing done in [\d.]+s: 2\/3 tests passed; fixed 1: tests\.test_table::test_clamp; 1 pre-existing failure\(s\), failing before the change too: tests\.test_remote::test_reaches_the_registry/);
    // The coder was told which failures were there before it started.
    const coderPrompt = model.calls.find((call) => call.request.role === 'coder')?.request.messages.map((message) => message.content).join('\n') ?? '';
    expect(coderPrompt).toContain('pre-existing failures');
    expect(coderPrompt).toContain('- tests.test_remote::test_reaches_the_registry');
  });

  it("runs the project's setup from .ratchet.yaml before the baseline, the coder and the tests; what it made stays out of the patch", async () => {
    const workspace = path.join(dir, 'shout');
    await generatedModuleProject(workspace, 'setup: python3 tools/make_version.py\n');
    const { model, models } = scripted(shoutTurns);
    const output = new RecordedOutput();
    const out = path.join(dir, 'shout-out');
    const result = await runGoal('shout("hi") must return "HI!"', { lang: 'python', out, dataDir: path.join(dir, 'data'), models, workspace }, output);
    if (result.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED) throw new Error(output.all);
    expect(model.remaining).toBe(0);
    expect(output.all).toContain('project file .ratchet.yaml: setup');
    // The baseline ran after the setup: the version test passed before any change, only the goal's test failed.
    expect(output.all).toMatch(/baseline: before any change 1 of 2 test\(s\) fail \(tests\.test_shout::test_shout\)/);
    const patch = await readFile(path.join(out, patchFileName), 'utf8');
    expect(patch).toContain('+    return text.upper() + "!"');
    expect(patch).not.toContain('_version');
    const shown = new RecordedOutput();
    await showTask(result.task.id, { dataDir: path.join(dir, 'data') }, shown);
    expect(shown.all).toContain('setup command: python3 tools/make_version.py');
  });

  it('ends the task before any model call when the setup fails, with its output and exit code', async () => {
    const workspace = path.join(dir, 'shout-broken-setup');
    await generatedModuleProject(workspace);
    const { model, models } = scripted(shoutTurns);
    const output = new RecordedOutput();
    const result = await runGoal('shout("hi") must return "HI!"', { lang: 'python', out: path.join(dir, 'broken-setup-out'), dataDir: path.join(dir, 'data'), models, workspace, setupCommand: 'python3 tools/make_versions.py' }, output);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_FAILED);
    expect(model.calls).toHaveLength(0);
    expect(result.task.statusReason).toMatch(/SETUP_FAILED: the setup command "python3 tools\/make_versions\.py" exited with code 2/);
    expect(result.task.statusReason).toContain("can't open file");
  });

  it('runs twice in a row in one directory without --out: each task writes its patch under the data directory, nothing into the workspace', async () => {
    const workspace = path.join(dir, 'twice');
    await project(workspace);
    const dataDir = path.join(dir, 'data-twice');
    const patches: string[] = [];
    for (let run = 0; run < 2; run += 1) {
      const { models } = scripted(turns);
      const output = new RecordedOutput();
      const result = await runGoal('clamp(11, 0, 10) returns 0 instead of 10', { lang: 'python', dataDir, models, workspace }, output);
      if (result.task.status !== TaskStatus.TASK_STATUS_SUCCEEDED) throw new Error(output.all);
      const patchFile = path.join(dataDir, 'tasks', result.task.id, patchFileName);
      expect(output.all).toContain(`patch: ${patchFile}`);
      patches.push(await readFile(patchFile, 'utf8'));
    }
    expect(patches[1]).toBe(patches[0]);
    expect(git(workspace, 'status', '--porcelain')).toBe('');
  });
});
