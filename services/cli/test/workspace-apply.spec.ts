import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ErrorCode } from '@ratchet/errors';
import { failure } from './helpers';
import { applyPatchToDirectory } from '../src/workspace/apply';
import { collectWorkspace } from '../src/workspace/collect';
import { makePatch } from '../src/workspace/patch';
import { defaultWorkspaceSettings } from '../src/workspace/settings';

// Real files in temporary directories; `outside` stands for anything beyond the workspace a link could point at.
// A liveness bound, not a speed target: the tests run real git, whose processes
// took over jest's 5 s default in a test of workspace-git.spec.ts on a saturated 2-core CI host.
jest.setTimeout(30_000);
let scratch: string;
let dir: string;
let outside: string;

beforeEach(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'ratchet-workspace-apply-'));
  dir = path.join(scratch, 'project');
  outside = path.join(scratch, 'outside');
  await mkdir(dir);
  await mkdir(outside);
});

afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function put(relative: string, content: string): Promise<void> {
  await mkdir(path.dirname(path.join(dir, relative)), { recursive: true });
  await writeFile(path.join(dir, relative), content);
}

async function read(relative: string, base = dir): Promise<string> {
  return readFile(path.join(base, relative), 'utf8');
}

/** Every entry below `base`, for "nothing else changed" assertions. */
async function listing(base: string): Promise<string[]> {
  const entries = await readdir(base, { recursive: true });
  return entries.map(String).sort();
}

describe('applyPatchToDirectory', () => {
  it('writes, creates and deletes exactly what the patch says, keeping permissions', async () => {
    await put('calc.py', 'def add(a, b):\n    return a - b\n');
    await put('run.sh', '#!/bin/sh\necho old\n');
    await chmod(path.join(dir, 'run.sh'), 0o755);
    await put('old/only.txt', 'bye\n');
    await put('keep.txt', 'untouched\n');
    const start = await collectWorkspace(dir);
    const { patch } = makePatch(
      start.files,
      [
        { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' },
        { path: 'run.sh', content: '#!/bin/sh\necho new\n' },
        { path: 'tests/unit/test_calc.py', content: 'from calc import add\n' },
      ],
      ['old/only.txt'],
    );

    const result = await applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint, settings: defaultWorkspaceSettings });

    expect(result).toEqual({ written: ['calc.py', 'run.sh', 'tests/unit/test_calc.py'], deleted: ['old/only.txt'], leftOut: [] });
    expect(await read('calc.py')).toBe('def add(a, b):\n    return a + b\n');
    expect(await read('run.sh')).toBe('#!/bin/sh\necho new\n');
    expect((await stat(path.join(dir, 'run.sh'))).mode & 0o777).toBe(0o755);
    expect(await read('tests/unit/test_calc.py')).toBe('from calc import add\n');
    expect(await read('keep.txt')).toBe('untouched\n');
    // The emptied directory goes, as with git apply, and no temporary file is left behind.
    expect(await listing(dir)).toEqual(['calc.py', 'keep.txt', 'run.sh', 'tests', 'tests/unit', 'tests/unit/test_calc.py']);
  });

  it("applies a patch to the user's own git repository, whose .git it reads past, and refuses one that writes into .git in any spelling", async () => {
    const env = { PATH: process.env['PATH'], HOME: scratch, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull, LC_ALL: 'C' };
    const git = (args: string[]) => execFileSync('git', args, { cwd: dir, env, encoding: 'utf8' });
    git(['init', '-q', '-b', 'main', '.']);
    await put('calc.py', 'def add(a, b):\n    return a - b\n');
    const configBefore = await read('.git/config');
    const start = await collectWorkspace(dir);
    expect(start.isGitRepository).toBe(true);
    expect(start.files.map((file) => file.path)).toEqual(['calc.py']);

    const marker = path.join(scratch, 'fsmonitor-ran');
    const hooks = [
      `diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch ${marker}\n`,
      `--- a/.git/config\n+++ b/.git/config\n@@ -1,1 +1,2 @@\n [core]\n+\tfsmonitor = touch ${marker}\n`,
      `--- /dev/null\n+++ b/.GIT/config\n@@ -0,0 +1,2 @@\n+[core]\n+\tfsmonitor = touch ${marker}\n`,
      `--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n--- /dev/null\n+++ b/sub/.git\n@@ -0,0 +1,1 @@\n+gitdir: ../elsewhere\n`,
    ];
    for (const patch of hooks) {
      const error = await failure(applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint, sentFiles: start.files }));
      expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(error.message).toContain('inside version-control metadata');
    }
    expect(existsSync(path.join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(await read('.git/config')).toBe(configBefore);
    expect(await read('calc.py')).toBe('def add(a, b):\n    return a - b\n');
    expect(existsSync(path.join(dir, 'sub'))).toBe(false);
    git(['status', '--porcelain']);
    expect(existsSync(marker)).toBe(false);

    const { patch } = makePatch(start.files, [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }]);
    expect(await applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint, sentFiles: start.files })).toEqual({ written: ['calc.py'], deleted: [], leftOut: [] });
    expect(git(['status', '--porcelain'])).toBe('?? calc.py\n');
    expect(await read('.git/config')).toBe(configBefore);
  });

  it('refuses when the directory changed since the task started, names the files and writes nothing', async () => {
    await put('calc.py', 'def add(a, b):\n    return a - b\n');
    await put('other.py', 'x = 1\n');
    const start = await collectWorkspace(dir);
    const { patch } = makePatch(start.files, [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }]);

    await put('calc.py', 'def add(a, b):\n    return b - a  # my own fix\n');
    await put('new.py', 'y = 2\n');

    const withSent = await failure(applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint, sentFiles: start.files, patchFile: 'ratchet-task.patch' }));
    expect(withSent.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(withSent.message).toContain('changed since the task started (calc.py modified, new.py added)');
    expect(withSent.message).toContain('Re-run the task');
    expect(withSent.message).toContain('ratchet-task.patch');

    // Without the sent files, the patch's own files that no longer fit are named.
    const withoutSent = await failure(applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint }));
    expect(withoutSent.message).toContain('changed since the task started (calc.py)');
    expect(await read('calc.py')).toBe('def add(a, b):\n    return b - a  # my own fix\n');
  });

  it('never writes through a symlinked file: it is left out and named, its target untouched, the rest applied', async () => {
    await writeFile(path.join(outside, 'target.txt'), 'outside\n');
    await put('main.py', 'x\n');
    await symlink(path.join(outside, 'target.txt'), path.join(dir, 'link.txt'));
    const start = await collectWorkspace(dir);
    const { patch } = makePatch(start.files, [
      { path: 'main.py', content: 'y\n' },
      { path: 'link.txt', content: 'overwritten\n' },
    ]);

    const result = await applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint });

    expect(result.written).toEqual(['main.py']);
    expect(result.leftOut).toEqual([{ path: 'link.txt', reason: expect.stringContaining('link.txt was not sent (symlink)') }]);
    expect(await read('main.py')).toBe('y\n');
    expect(await read('target.txt', outside)).toBe('outside\n');
    expect((await lstat(path.join(dir, 'link.txt'))).isSymbolicLink()).toBe(true);
  });

  it('leaves out a symlinked file even when .gitignore hid it from the walk', async () => {
    await writeFile(path.join(outside, 'target.txt'), 'outside\n');
    await put('.gitignore', 'link.txt\n');
    await symlink(path.join(outside, 'target.txt'), path.join(dir, 'link.txt'));
    const start = await collectWorkspace(dir);
    const { patch } = makePatch(start.files, [{ path: 'link.txt', content: 'overwritten\n' }]);

    const result = await applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint });

    expect(result.leftOut).toEqual([{ path: 'link.txt', reason: expect.stringContaining('already has a symlink there') }]);
    expect(await read('target.txt', outside)).toBe('outside\n');
  });

  it('never writes into a symlinked directory: left out, the directory it points at untouched', async () => {
    await writeFile(path.join(outside, 'existing.txt'), 'outside\n');
    await put('main.py', 'x\n');
    await symlink(outside, path.join(dir, 'linked'));
    const start = await collectWorkspace(dir);
    const { patch } = makePatch(start.files, [
      { path: 'linked/existing.txt', content: 'overwritten\n' },
      { path: 'linked/planted.txt', content: 'planted\n' },
    ]);

    const result = await applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint });

    expect(result.written).toEqual([]);
    expect(result.leftOut.map((entry) => entry.path)).toEqual(['linked/existing.txt', 'linked/planted.txt']);
    expect(result.leftOut.every((entry) => entry.reason.includes('linked was not sent (symlink)'))).toBe(true);
    expect(await listing(outside)).toEqual(['existing.txt']);
    expect(await read('existing.txt', outside)).toBe('outside\n');
  });

  it('refuses a symlinked directory the walk never saw (workspace.alwaysSkip), by checking every parent on the way', async () => {
    await put('main.py', 'x\n');
    await symlink(outside, path.join(dir, 'vendor'));
    const settings = { ...defaultWorkspaceSettings, alwaysSkip: ['vendor'] };
    const start = await collectWorkspace(dir, settings);
    expect(start.skipped).toEqual([]);
    const { patch } = makePatch(start.files, [
      { path: 'main.py', content: 'y\n' },
      { path: 'vendor/deep/planted.txt', content: 'planted\n' },
    ]);

    const error = await failure(applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint, settings }));

    expect(error.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(error.message).toContain('refusing to write vendor/deep/planted.txt: vendor is a symlink');
    expect(await listing(outside)).toEqual([]);
    // Every check runs before the first write.
    expect(await read('main.py')).toBe('x\n');
  });

  it('applies the source changes of a patch that also touches files that were never sent, and names those it left out', async () => {
    await put('main.py', 'x\n');
    await put('.env', 'SECRET=1\n');
    await put('.gitignore', '_version.py\n');
    await put('_version.py', 'version = "1.0"\n');
    const start = await collectWorkspace(dir);
    const patch = [
      'diff --git a/.env b/.env\n--- a/.env\n+++ b/.env\n@@ -1,1 +1,1 @@\n-SECRET=1\n+SECRET=2\n',
      // A stand-in for a build-generated module the sandbox did not have: the user's own is kept.
      'diff --git a/_version.py b/_version.py\nnew file mode 100644\n--- /dev/null\n+++ b/_version.py\n@@ -0,0 +1,1 @@\n+version = "0.0"\n',
      'diff --git a/main.py b/main.py\n--- a/main.py\n+++ b/main.py\n@@ -1,1 +1,1 @@\n-x\n+y\n',
    ].join('');

    const result = await applyPatchToDirectory(dir, patch, { expectedFingerprint: start.fingerprint });

    expect(result.written).toEqual(['main.py']);
    expect(result.leftOut).toEqual([
      { path: '.env', reason: expect.stringContaining('.env was not sent (secret (matches workspace.secretPatterns: .env))') },
      { path: '_version.py', reason: expect.stringContaining('already has an entry that was not sent') },
    ]);
    expect(await read('main.py')).toBe('y\n');
    expect(await read('_version.py')).toBe('version = "1.0"\n');
    expect(await read('.env')).toBe('SECRET=1\n');
  });
});
