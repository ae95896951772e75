import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ErrorCode } from '@ratchet/errors';
import { failure } from './helpers';
import { collectWorkspace } from '../src/workspace/collect';
import { commitPatchToBranch } from '../src/workspace/git';
import { makePatch } from '../src/workspace/patch';

// Real git in temporary repositories. The global and system config are shut
// out so the identity fallback is tested the same on every machine.
// A liveness bound for every test, not a speed target: a test that collects a
// workspace and commits a patch runs about ten git processes, which took over
// jest's 5 s default on a CI host whose two cores were saturated.
jest.setTimeout(30_000);
let scratch: string;
let dir: string;
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'ratchet-workspace-git-'));
  dir = path.join(scratch, 'repo');
  await mkdir(dir);
  env = { PATH: process.env['PATH'], HOME: scratch, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull, LC_ALL: 'C' };
  git(['init', '-q', '-b', 'main', '.']);
  await put('calc.py', 'def add(a, b):\n    return a - b\n');
  await put('src/util.py', 'def double(x):\n    return x * 2\n');
  await put('obsolete.txt', 'old\n');
  git(['add', '.']);
  git(['-c', 'user.name=Dev', '-c', 'user.email=dev@example.com', 'commit', '-q', '-m', 'start']);
});

afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function git(args: string[], cwd = dir): string {
  return execFileSync('git', args, { cwd, env, encoding: 'utf8' });
}

async function put(relative: string, content: string, base = dir): Promise<void> {
  await mkdir(path.dirname(path.join(base, relative)), { recursive: true });
  await writeFile(path.join(base, relative), content);
}

async function fixPatch(workspace = dir): Promise<string> {
  const start = await collectWorkspace(workspace);
  return makePatch(
    start.files,
    [
      { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' },
      { path: 'tests/test_calc.py', content: 'from calc import add\n' },
    ],
    ['obsolete.txt'],
  ).patch;
}

describe('commitPatchToBranch', () => {
  it('commits the fix onto a new branch from HEAD without touching the working tree, the index or the current branch', async () => {
    await put('notes.txt', 'an untracked file of the user\n');
    await put('src/util.py', 'def double(x):\n    return x * 2  # staged edit\n');
    git(['add', 'src/util.py']);
    const patch = await fixPatch();
    const head = git(['rev-parse', 'HEAD']).trim();
    const statusBefore = git(['status', '--porcelain=v1', '--branch']);
    const indexBefore = createHash('sha256').update(await readFile(path.join(dir, '.git', 'index'))).digest('hex');

    const result = await commitPatchToBranch(dir, patch, 'ratchet/fix-add', 'Fix add\n\nFound by Ratchet.', { env });

    const indexAfter = createHash('sha256').update(await readFile(path.join(dir, '.git', 'index'))).digest('hex');
    expect(indexAfter).toBe(indexBefore);
    expect(git(['status', '--porcelain=v1', '--branch'])).toBe(statusBefore);
    expect(git(['rev-parse', 'HEAD']).trim()).toBe(head);
    expect(git(['symbolic-ref', '--short', 'HEAD']).trim()).toBe('main');
    expect(await readFile(path.join(dir, 'calc.py'), 'utf8')).toBe('def add(a, b):\n    return a - b\n');
    expect(await readFile(path.join(dir, 'obsolete.txt'), 'utf8')).toBe('old\n');

    expect(result.branch).toBe('ratchet/fix-add');
    expect(git(['rev-parse', 'ratchet/fix-add']).trim()).toBe(result.commit);
    expect(git(['rev-parse', `${result.commit}^{tree}`]).trim()).toBe(result.tree);
    expect(git(['rev-parse', `${result.commit}^`]).trim()).toBe(head);
    expect(git(['show', 'ratchet/fix-add:calc.py'])).toBe('def add(a, b):\n    return a + b\n');
    expect(git(['show', 'ratchet/fix-add:tests/test_calc.py'])).toBe('from calc import add\n');
    // The staged edit is the user's, not part of the fix.
    expect(git(['show', 'ratchet/fix-add:src/util.py'])).toBe('def double(x):\n    return x * 2\n');
    expect(git(['ls-tree', '-r', '--name-only', 'ratchet/fix-add']).split('\n').filter(Boolean)).toEqual(['calc.py', 'src/util.py', 'tests/test_calc.py']);
    expect(git(['log', '-1', '--format=%B', 'ratchet/fix-add']).trim()).toBe('Fix add\n\nFound by Ratchet.');
    // No identity anywhere in this git: the fallback.
    expect(git(['log', '-1', '--format=%an <%ae> / %cn <%ce>', 'ratchet/fix-add']).trim()).toBe('Ratchet <ratchet@localhost> / Ratchet <ratchet@localhost>');
  });

  it("uses git's own identity when it has one", async () => {
    git(['config', 'user.name', 'Ada Lovelace']);
    git(['config', 'user.email', 'ada@example.com']);

    await commitPatchToBranch(dir, await fixPatch(), 'ratchet/fix', 'Fix', { env });

    expect(git(['log', '-1', '--format=%an <%ae> / %cn <%ce>', 'ratchet/fix']).trim()).toBe('Ada Lovelace <ada@example.com> / Ada Lovelace <ada@example.com>');
  });

  it('works from a directory inside the repository, whose paths are relative to it', async () => {
    const workspace = path.join(dir, 'src');
    const start = await collectWorkspace(workspace);
    const { patch } = makePatch(start.files, [{ path: 'util.py', content: 'def double(x):\n    return 2 * x\n' }]);

    await commitPatchToBranch(workspace, patch, 'ratchet/util', 'Tidy', { env });

    expect(git(['show', 'ratchet/util:src/util.py'])).toBe('def double(x):\n    return 2 * x\n');
    expect(git(['show', 'ratchet/util:calc.py'])).toBe('def add(a, b):\n    return a - b\n');
  });

  it('refuses a branch that exists, and leaves it where it was', async () => {
    git(['branch', 'ratchet/fix']);
    const before = git(['rev-parse', 'ratchet/fix']);

    const error = await failure(commitPatchToBranch(dir, await fixPatch(), 'ratchet/fix', 'Fix', { env }));

    expect(error.code).toBe(ErrorCode.ALREADY_EXISTS);
    expect(error.message).toContain('branch ratchet/fix already exists');
    expect(git(['rev-parse', 'ratchet/fix'])).toBe(before);
  });

  it('refuses when a file the patch touches differs from HEAD', async () => {
    await put('calc.py', 'def add(a, b):\n    return a - b  # uncommitted\n');
    const start = await collectWorkspace(dir);
    const { patch } = makePatch(start.files, [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b  # uncommitted\n' }]);

    const error = await failure(commitPatchToBranch(dir, patch, 'ratchet/fix', 'Fix', { env }));

    expect(error.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(error.message).toContain('differ from HEAD');
    expect(error.message).toContain('calc.py');
    expect(git(['branch', '--list', 'ratchet/fix'])).toBe('');
  });

  it('refuses a patch that touches .git/hooks/pre-commit or .git/config (in any spelling), creating no branch and no hook', async () => {
    const marker = path.join(scratch, 'hook-ran');
    const configBefore = await readFile(path.join(dir, '.git', 'config'), 'utf8');
    const patches = [
      `diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch ${marker}\n`,
      `--- /dev/null\n+++ b/.Git./config\n@@ -0,0 +1,2 @@\n+[core]\n+\tfsmonitor = touch ${marker}\n`,
      `--- /dev/null\n+++ b/HEAD\n@@ -0,0 +1,1 @@\n+ref: refs/heads/main\n`,
    ];
    for (const patch of patches) {
      const error = await failure(commitPatchToBranch(dir, patch, 'ratchet/fix', 'Fix', { env }));
      expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(error.message).toMatch(/inside version-control metadata|is a git HEAD/);
    }
    expect(git(['branch', '--list', 'ratchet/fix'])).toBe('');
    expect(existsSync(path.join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(await readFile(path.join(dir, '.git', 'config'), 'utf8')).toBe(configBefore);
    git(['-c', 'user.name=Dev', '-c', 'user.email=dev@example.com', 'commit', '-q', '--allow-empty', '-m', 'after']);
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses a directory outside any repository, and a bad branch name', async () => {
    const plain = path.join(scratch, 'plain');
    await put('a.txt', 'x\n', plain);
    const start = await collectWorkspace(plain);
    const { patch } = makePatch(start.files, [{ path: 'a.txt', content: 'y\n' }]);

    const notRepository = await failure(commitPatchToBranch(plain, patch, 'ratchet/fix', 'Fix', { env: { ...env, GIT_CEILING_DIRECTORIES: scratch } }));
    expect(notRepository.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(notRepository.message).toContain('is not in a git work tree');

    const badName = await failure(commitPatchToBranch(dir, await fixPatch(), 'bad..name', 'Fix', { env }));
    expect(badName.code).toBe(ErrorCode.INVALID_ARGUMENT);
    const option = await failure(commitPatchToBranch(dir, await fixPatch(), '--force', 'Fix', { env }));
    expect(option.code).toBe(ErrorCode.INVALID_ARGUMENT);
  });
});
