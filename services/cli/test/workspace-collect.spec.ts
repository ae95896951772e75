import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ErrorCode } from '@ratchet/errors';
import { failure } from './helpers';
import { collectWorkspace } from '../src/workspace/collect';
import { fingerprintOf } from '../src/workspace/rules';
import { defaultWorkspaceSettings, type WorkspaceSettings } from '../src/workspace/settings';

// Real files in temporary directories, and real git to check the ignore rules against.
// A liveness bound, not a speed target: the tests run real git, whose processes
// took over jest's 5 s default in a test of workspace-git.spec.ts on a saturated 2-core CI host.
jest.setTimeout(30_000);
const gitEnv = { PATH: process.env['PATH'] ?? '', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull, LC_ALL: 'C' };

let scratch: string;
let dir: string;

beforeEach(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'ratchet-workspace-collect-'));
  dir = path.join(scratch, 'project');
  await mkdir(dir);
});

afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function put(relative: string, content: string | Uint8Array): Promise<void> {
  await mkdir(path.dirname(path.join(dir, relative)), { recursive: true });
  await writeFile(path.join(dir, relative), content);
}

function git(args: string[], cwd = dir): string {
  return execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' });
}

function settings(overrides: Partial<WorkspaceSettings>): WorkspaceSettings {
  return { ...defaultWorkspaceSettings, ...overrides };
}

describe('collectWorkspace: ignore rules', () => {
  it('honours nested .gitignore files, negation and .git/info/exclude exactly as git does', async () => {
    git(['init', '-q', '.']);
    await put('.gitignore', '*.log\nbuild/\n/only-top.txt\n');
    await put('.git/info/exclude', 'excluded.txt\n');
    await put('app.py', 'print(1)\n');
    await put('debug.log', 'noise\n');
    await put('excluded.txt', 'x\n');
    await put('only-top.txt', 'x\n');
    await put('build/out.js', 'x\n');
    await put('src/build/out.js', 'x\n');
    await put('src/only-top.txt', 'kept: the pattern is anchored to the top\n');
    await put('keep/.gitignore', '!important.log\n');
    await put('keep/important.log', 'kept by negation\n');
    await put('keep/other.log', 'still ignored\n');
    await put('keep/deeper/.gitignore', '*.txt\n!wanted.txt\n');
    await put('keep/deeper/dropped.txt', 'x\n');
    await put('keep/deeper/wanted.txt', 'x\n');

    const collected = await collectWorkspace(dir);

    const listedByGit = git(['ls-files', '--others', '--exclude-standard']).split('\n').filter(Boolean).sort();
    expect(collected.files.map((file) => file.path)).toEqual(listedByGit);
    expect(collected.files.map((file) => file.path)).toEqual([
      '.gitignore',
      'app.py',
      'keep/.gitignore',
      'keep/deeper/.gitignore',
      'keep/deeper/wanted.txt',
      'keep/important.log',
      'src/only-top.txt',
    ]);
    expect(collected.isGitRepository).toBe(true);
    // Ignored files are the user's own choice and are not reported.
    expect(collected.skipped).toEqual([]);
  });

  it('always skips .git and node_modules, and the workspace.alwaysSkip list is configurable', async () => {
    git(['init', '-q', '.']);
    await put('index.js', 'x\n');
    await put('node_modules/left-pad/index.js', 'x\n');
    await put('web/node_modules/react/index.js', 'x\n');
    await put('vendor/lib.js', 'x\n');

    expect((await collectWorkspace(dir)).files.map((file) => file.path)).toEqual(['index.js', 'vendor/lib.js']);
    // .git stays out even when the list leaves it out.
    const custom = await collectWorkspace(dir, settings({ alwaysSkip: ['vendor/'] }));
    expect(custom.files.map((file) => file.path)).toEqual(['index.js', 'node_modules/left-pad/index.js', 'web/node_modules/react/index.js']);
  });

  it('honours the .gitignore files above a workspace inside a repository', async () => {
    git(['init', '-q', '.']);
    await put('.gitignore', '*.tmp\n');
    await put('packages/.gitignore', 'dist/\n');
    await put('packages/api/main.ts', 'x\n');
    await put('packages/api/cache.tmp', 'x\n');
    await put('packages/api/dist/main.js', 'x\n');

    const collected = await collectWorkspace(path.join(dir, 'packages', 'api'));
    expect(collected.files.map((file) => file.path)).toEqual(['main.ts']);
    expect(collected.isGitRepository).toBe(true);
  });

  it('honours .gitignore in a directory that is no git repository', async () => {
    await put('.gitignore', 'out/\n');
    await put('main.py', 'x\n');
    await put('out/result.txt', 'x\n');

    const collected = await collectWorkspace(dir);
    expect(collected.files.map((file) => file.path)).toEqual(['.gitignore', 'main.py']);
    expect(collected.isGitRepository).toBe(false);
  });
});

describe('collectWorkspace: what is never sent', () => {
  it('leaves out credential files and names each with the pattern it matched', async () => {
    await put('main.py', 'x\n');
    await put('.env', 'API_KEY=1\n');
    await put('config/.env.local', 'API_KEY=2\n');
    await put('deploy/server.pem', 'x\n');
    await put('deploy/server.KEY', 'x\n');
    await put('home/id_rsa', 'x\n');
    await put('home/id_ed25519.pub', 'x\n');
    await put('credentials-prod.json', '{}\n');
    await put('.npmrc', '//registry/:_authToken=x\n');
    await put('secrets.yaml', 'x: 1\n');

    const collected = await collectWorkspace(dir);

    expect(collected.files.map((file) => file.path)).toEqual(['main.py']);
    expect(collected.skipped).toEqual([
      { path: '.env', reason: 'secret (matches workspace.secretPatterns: .env)' },
      { path: '.npmrc', reason: 'secret (matches workspace.secretPatterns: .npmrc)' },
      { path: 'config/.env.local', reason: 'secret (matches workspace.secretPatterns: .env.*)' },
      { path: 'credentials-prod.json', reason: 'secret (matches workspace.secretPatterns: credentials*.json)' },
      { path: 'deploy/server.KEY', reason: 'secret (matches workspace.secretPatterns: *.key)' },
      { path: 'deploy/server.pem', reason: 'secret (matches workspace.secretPatterns: *.pem)' },
      { path: 'home/id_ed25519.pub', reason: 'secret (matches workspace.secretPatterns: id_ed25519*)' },
      { path: 'home/id_rsa', reason: 'secret (matches workspace.secretPatterns: id_rsa*)' },
      { path: 'secrets.yaml', reason: 'secret (matches workspace.secretPatterns: secrets.*)' },
    ]);
  });

  it('collects files that are not text as data files (bytes as they are), keeps text exactly (BOM and CRLF included)', async () => {
    await put('image.png', Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00]));
    await put('latin1.txt', Uint8Array.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    await put('bom.txt', '\uFEFFhello\r\nworld\r\n');
    await put('unicode.md', 'naïve café — ✓\n');

    const collected = await collectWorkspace(dir);

    expect(collected.files).toEqual([
      { path: 'bom.txt', content: '\uFEFFhello\r\nworld\r\n' },
      { path: 'unicode.md', content: 'naïve café — ✓\n' },
    ]);
    expect(collected.dataFiles).toEqual([
      { path: 'image.png', content: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00]) },
      { path: 'latin1.txt', content: Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]) },
    ]);
    expect(collected.skipped).toEqual([]);
    expect(collected.totalBytes).toBe(Buffer.byteLength('\uFEFFhello\r\nworld\r\n') + Buffer.byteLength('naïve café — ✓\n') + 10 + 5);
    // A changed data file changes the fingerprint, so --apply sees the directory changed.
    const before = collected.fingerprint;
    await put('latin1.txt', Uint8Array.from([0x63, 0x61, 0x66, 0xe8, 0x0a]));
    expect((await collectWorkspace(dir)).fingerprint).not.toBe(before);
  });

  it('skips a text file over workspace.maxFileBytes and says how to raise it', async () => {
    await put('small.txt', 'x\n');
    await put('big.txt', 'y'.repeat(100));

    const collected = await collectWorkspace(dir, settings({ maxFileBytes: 50 }));

    expect(collected.files.map((file) => file.path)).toEqual(['small.txt']);
    expect(collected.skipped).toHaveLength(1);
    expect(collected.skipped[0]?.path).toBe('big.txt');
    expect(collected.skipped[0]?.reason).toContain('too large (100 bytes');
    expect(collected.skipped[0]?.reason).toContain('workspace.maxFileBytes');
    expect(collected.skipped[0]?.reason).toContain('RATCHET_WORKSPACE_MAX_FILE_BYTES');
  });

  it('never follows a symlink, to a file or to a directory, inside or outside the workspace', async () => {
    await put('main.py', 'x\n');
    await symlink('/etc/passwd', path.join(dir, 'passwd'));
    await symlink('/etc', path.join(dir, 'etc'));
    await symlink('main.py', path.join(dir, 'alias.py'));

    const collected = await collectWorkspace(dir);

    expect(collected.files).toEqual([{ path: 'main.py', content: 'x\n' }]);
    expect(collected.skipped).toEqual([
      { path: 'alias.py', reason: 'symlink' },
      { path: 'etc', reason: 'symlink' },
      { path: 'passwd', reason: 'symlink' },
    ]);
  });

  it('skips paths a workspace path cannot carry', async () => {
    await put('ok.txt', 'x\n');
    await put('back\\slash.txt', 'x\n');

    const collected = await collectWorkspace(dir);

    expect(collected.files.map((file) => file.path)).toEqual(['ok.txt']);
    expect(collected.skipped).toEqual([{ path: 'back\\slash.txt', reason: 'path contains a backslash' }]);
  });

  /**
   * Runs `work` as an unprivileged user would: root reads anything, so as
   * root it runs with nobody's effective ids (65534), restored after.
   */
  async function unprivileged<T>(work: () => Promise<T>): Promise<T> {
    if (process.getuid?.() !== 0) return work();
    // The test's temporary directories are root's own (0700): let nobody in.
    for (const directory of [path.dirname(dir), dir]) await chmod(directory, 0o755);
    process.setegid?.(65534);
    process.seteuid?.(65534);
    try {
      return await work();
    } finally {
      process.seteuid?.(0);
      process.setegid?.(0);
    }
  }

  it('reports unreadable files and directories instead of failing', async () => {
    await put('ok.txt', 'x\n');
    await put('locked.txt', 'x\n');
    await put('closed/inner.txt', 'x\n');
    await chmod(path.join(dir, 'locked.txt'), 0o000);
    await chmod(path.join(dir, 'closed'), 0o000);
    try {
      const collected = await unprivileged(() => collectWorkspace(dir));
      expect(collected.files.map((file) => file.path)).toEqual(['ok.txt']);
      expect(collected.skipped).toEqual([
        { path: 'closed', reason: 'unreadable (EACCES)' },
        { path: 'locked.txt', reason: 'unreadable (EACCES)' },
      ]);
    } finally {
      await chmod(path.join(dir, 'closed'), 0o755);
    }
  });
});

describe('collectWorkspace: limits and arguments', () => {
  it('refuses more files than workspace.maxFiles, naming the count, the limit, the key and the variable', async () => {
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await put(name, 'x\n');

    const error = await failure(collectWorkspace(dir, settings({ maxFiles: 2 })));

    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.message).toContain('has 3 files to send');
    expect(error.message).toContain('workspace.maxFiles allows (2)');
    expect(error.message).toContain('workspace.maxFiles in config/cli.yaml or RATCHET_WORKSPACE_MAX_FILES');
  });

  it('refuses more bytes than workspace.maxBytes, naming the key and the variable', async () => {
    await put('a.txt', 'x'.repeat(600));
    await put('b.txt', 'x'.repeat(600));

    const error = await failure(collectWorkspace(dir, settings({ maxBytes: 1000 })));

    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.message).toContain('has 1200 bytes');
    expect(error.message).toContain('workspace.maxBytes in config/cli.yaml or RATCHET_WORKSPACE_MAX_BYTES');
  });

  it('says clearly when the directory is missing or is a file', async () => {
    const missing = await failure(collectWorkspace(path.join(dir, 'nope')));
    expect(missing.code).toBe(ErrorCode.NOT_FOUND);
    expect(missing.message).toContain('does not exist');

    await put('file.txt', 'x\n');
    const notDirectory = await failure(collectWorkspace(path.join(dir, 'file.txt')));
    expect(notDirectory.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(notDirectory.message).toContain('is not a directory');
  });
});

describe('collectWorkspace: fingerprint', () => {
  it('changes when a file changes, appears or goes, and only then', async () => {
    await put('a.txt', 'one\n');
    await put('src/b.txt', 'two\n');
    const first = await collectWorkspace(dir);
    expect(first.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect((await collectWorkspace(dir)).fingerprint).toBe(first.fingerprint);
    expect(fingerprintOf([...first.files].reverse())).toBe(first.fingerprint);

    await put('src/b.txt', 'two!\n');
    const changed = await collectWorkspace(dir);
    expect(changed.fingerprint).not.toBe(first.fingerprint);

    await put('src/c.txt', 'three\n');
    const added = await collectWorkspace(dir);
    expect(added.fingerprint).not.toBe(changed.fingerprint);

    // Something never sent does not change what was sent.
    await put('.env', 'SECRET=1\n');
    expect((await collectWorkspace(dir)).fingerprint).toBe(added.fingerprint);
  });
});
