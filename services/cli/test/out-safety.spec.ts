import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ErrorCode } from '@ratchet/errors';
import { runGoal } from '../src/commands';
import { writeFiles } from '../src/files';
import { SafeDirectory } from '../src/safe-write';
import { codeReply, failure, planReply, RecordedOutput, scripted, temporaryDirectory, testsReply } from './helpers';

// `--out` never writes through a symlink or outside the directory, even when
// the link is planted while the task runs. Embedded mode with the real
// sandbox (Docker); only the model is scripted.
jest.setTimeout(120_000);

const calc = 'def add(a, b):\n    return a + b\n';
const calcTest = 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n';

/** Output that runs `during` once, when the run reports its test results: while the task runs, before anything is written. */
class OutputDuringRun extends RecordedOutput {
  private done = false;
  constructor(private readonly during: () => Promise<void>) {
    super();
  }
  pending: Promise<void> | undefined;
  override err(line: string): void {
    super.err(line);
    if (!this.done && /tests: \d+ passed/.test(line)) {
      this.done = true;
      this.pending = this.during();
    }
  }
}

describe('ratchet run --out (embedded): safe output', () => {
  let dir: string;
  let remove: () => Promise<void>;
  /** A file outside every output directory that links point at; it must never change. */
  let victim: string;
  const victimText = 'precious, must not change\n';

  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    process.env['RATCHET_CONFIG_DIR'] = path.resolve(__dirname, '../../../config');
    victim = path.join(dir, 'victim.txt');
    await writeFile(victim, victimText);
  });
  afterAll(async () => {
    await remove();
  });

  const run = (out: string, output: RecordedOutput, force = false) => {
    const { models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', calc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', calcTest) },
    ]);
    return runGoal('add two numbers', { lang: 'python', out, force, dataDir: path.join(dir, 'data'), models }, output);
  };

  it('refuses a file in --out that is a symlink, even with --force, and leaves its target alone', async () => {
    const out = path.join(dir, 'link-file');
    await mkdir(out);
    await symlink(victim, path.join(out, 'calc.py'));
    const error = await failure(run(out, new RecordedOutput(), true));
    expect(error.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(error.message).toMatch(/refusing to write calc\.py in .*link-file: it is a symlink/);
    expect(await readFile(victim, 'utf8')).toBe(victimText);
    expect((await readdir(out)).sort()).toEqual(['calc.py']);
  });

  it('refuses a directory in --out that is a symlink, writing nothing into the directory it points at', async () => {
    const out = path.join(dir, 'link-dir');
    const elsewhere = path.join(dir, 'elsewhere');
    await mkdir(out);
    await mkdir(elsewhere);
    await symlink(elsewhere, path.join(out, 'tests'));
    const error = await failure(run(out, new RecordedOutput(), true));
    expect(error.message).toMatch(/refusing to write tests\/test_calc\.py in .*: tests is a symlink/);
    expect(await readdir(elsewhere)).toEqual([]);
    // Every check runs before the first write: calc.py was not written either.
    expect(await readdir(out)).toEqual(['tests']);
  });

  it('refuses when a symlink is planted in the empty --out while the task runs', async () => {
    const out = path.join(dir, 'planted');
    await mkdir(out);
    const output = new OutputDuringRun(() => symlink(victim, path.join(out, 'calc.py')));
    const error = await failure(run(out, output));
    expect(output.pending).toBeDefined();
    expect(error.message).toMatch(/output directory .*planted changed during the run \(calc\.py appeared in it\); nothing was written/);
    expect(await readFile(victim, 'utf8')).toBe(victimText);
  });

  it('refuses, even with --force, a link planted while the task runs', async () => {
    const out = path.join(dir, 'planted-force');
    await mkdir(out);
    const output = new OutputDuringRun(() => symlink(victim, path.join(out, 'calc.py')));
    const error = await failure(run(out, output, true));
    expect(error.message).toMatch(/calc\.py in .*: it is a symlink/);
    expect(await readFile(victim, 'utf8')).toBe(victimText);
  });

  it('refuses when --out itself is swapped for a link to another directory while the task runs', async () => {
    const out = path.join(dir, 'swapped');
    const elsewhere = path.join(dir, 'swapped-target');
    await mkdir(out);
    await mkdir(elsewhere);
    const output = new OutputDuringRun(async () => {
      await rename(out, `${out}.old`);
      await symlink(elsewhere, out);
    });
    const error = await failure(run(out, output, true));
    expect(error.message).toMatch(/refusing to write .*swapped: it is a symlink/);
    expect(await readdir(elsewhere)).toEqual([]);
    expect(await readdir(`${out}.old`)).toEqual([]);
  });

  it("never writes a coder reply's .git/config: the reply goes back for repair, and git status in --out runs nothing", async () => {
    const out = path.join(dir, 'dot-git-reply');
    const marker = path.join(dir, 'fsmonitor-ran');
    const fsmonitor = `[core]\n\tfsmonitor = touch ${marker}\n`;
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: JSON.stringify({ files: [{ path: 'calc.py', content: calc }, { path: '.git/config', content: fsmonitor }, { path: '.git/HEAD', content: 'ref: refs/heads/main\n' }], deletedPaths: [], summary: 'wrote calc.py' }) },
      { role: 'coder', expect: ['inside version-control metadata'], reply: codeReply('calc.py', calc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', calcTest) },
    ]);
    const result = await runGoal('add two numbers', { lang: 'python', out, dataDir: path.join(dir, 'data'), models }, new RecordedOutput());
    expect(model.remaining).toBe(0);
    expect(result.written.map((file) => path.relative(out, file)).sort()).toEqual(['calc.py', path.join('tests', 'test_calc.py')]);
    expect((await readdir(out)).sort()).toEqual(['calc.py', 'tests']);
    // What the user does next: git status in the output directory (here inside no repository at all) runs no command.
    try {
      execFileSync('git', ['status'], { cwd: out, stdio: 'ignore', env: { ...process.env, GIT_CEILING_DIRECTORIES: dir } });
    } catch {
      // "not a git repository" is the expected answer.
    }
    expect(existsSync(marker)).toBe(false);
  });

  it.each([
    ['.git/config', '[core]\n\tfsmonitor = touch /tmp/x\n'],
    ['.git/hooks/pre-commit', '#!/bin/sh\ntouch /tmp/x\n'],
    ['src/.GIT /config', '[core]\n\tfsmonitor = touch /tmp/x\n'],
    ['GIT~1/config', '[core]\n\tfsmonitor = touch /tmp/x\n'],
    ['.git', 'gitdir: ../elsewhere\n'],
    ['.hg/hgrc', '[hooks]\npre-status = touch /tmp/x\n'],
    ['HEAD', 'ref: refs/heads/main\n'],
  ])('writeFiles refuses %j in a result, writing nothing at all', async (filePath, content) => {
    const out = path.join(dir, `refused-${filePath.replace(/[^a-z]/gi, '_')}`);
    const error = await failure(writeFiles(out, [{ path: 'calc.py', content: calc }, { path: filePath, content }]));
    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.message).toContain(`refusing to write ${JSON.stringify(filePath)}`);
    expect(error.message).toContain('nothing was written');
    expect(existsSync(out)).toBe(false);
  });

  it('SafeDirectory, under both --out and --apply, never writes or deletes inside .git whatever its caller checked', async () => {
    const root = path.join(dir, 'safe-directory');
    await mkdir(path.join(root, '.git'), { recursive: true });
    await writeFile(path.join(root, '.git', 'config'), '[core]\n');
    const refuse = () => new Error('unexpected refusal') as never;
    const opened = (await SafeDirectory.open(root, refuse, false)) as SafeDirectory;
    try {
      await expect(opened.writeFile('.git/config', '[core]\n\tfsmonitor = touch /tmp/x\n', refuse)).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('inside version-control metadata') });
      await expect(opened.writeFile('.GIT./hooks/pre-commit', 'x', refuse)).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
      await expect(opened.deleteFile('.git/config', refuse)).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    } finally {
      await opened.close();
    }
    expect(await readFile(path.join(root, '.git', 'config'), 'utf8')).toBe('[core]\n');
    expect(await readdir(root)).toEqual(['.git']);
  });

  it('writeFiles writes .gitignore, .gitattributes and .gitmodules, which are project files', async () => {
    const out = path.join(dir, 'git-project-files');
    await writeFiles(out, [
      { path: '.gitignore', content: '*.pyc\n' },
      { path: '.gitattributes', content: '* text=auto\n' },
      { path: '.gitmodules', content: '' },
      { path: 'docs/HEAD.md', content: 'ref: refs/heads/main\n' },
    ]);
    expect((await readdir(out)).sort()).toEqual(['.gitattributes', '.gitignore', '.gitmodules', 'docs']);
  });

  it('writes a normal result whole, and a second run with --force replaces it', async () => {
    const out = path.join(dir, 'normal');
    const first = await run(out, new RecordedOutput());
    expect(first.written.map((file) => path.relative(out, file)).sort()).toEqual(['calc.py', path.join('tests', 'test_calc.py')]);
    await writeFile(path.join(out, 'calc.py'), 'stale\n');
    await run(out, new RecordedOutput(), true);
    expect(await readFile(path.join(out, 'calc.py'), 'utf8')).toBe(calc);
    // No temporary files are left behind.
    expect((await readdir(out)).sort()).toEqual(['calc.py', 'tests']);
  });
});
