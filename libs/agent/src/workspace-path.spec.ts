import { describe, expect, it } from '@jest/globals';
import { ErrorCode } from '@ratchet/errors';
import { checkWorkspaceFile, checkWorkspacePath, isRepositoryMetadata, workspaceFileProblem, workspacePathProblem } from './workspace-path';

describe('workspacePathProblem', () => {
  it.each(['src/app.py', 'a/b/c.txt', 'README', '.gitignore', '.gitattributes', '.gitmodules', 'sub/.gitignore', '.github/workflows/ci.yml', '.hgignore', '.hgsub', 'git/config', 'hg/x', 'docs/.git-blame-ignore-revs', 'x.git', '.git-rewrite/x', '.gitkeep', 'src/cvs.py', 'repo/x', 'src/repo.py', 'jj.txt', 'HEAD', 'refs/heads/main', 'GIT~A', 'foo~1'])(
    'accepts the project file %j',
    (filePath) => {
      expect(workspacePathProblem(filePath)).toBeUndefined();
    },
  );

  it.each([
    '.git/config',
    '.git',
    '.git/hooks/pre-commit',
    'sub/.git/config',
    'sub/.git',
    '.GIT/config',
    '.Git/HEAD',
    '.git /config',
    '.git./config',
    '.git. . /config',
    '.git::$INDEX_ALLOCATION/config',
    '.git:$DATA',
    'GIT~1/config',
    'git~2/hooks/post-checkout',
    '.g\u200cit/config',
    '\ufeff.git/config',
    '.hg/hgrc',
    '.HG/hgrc',
    'HG~1/hgrc',
    '.sl/config',
    '.svn/wc.db',
    '.bzr/branch/branch.conf',
    '_darcs/prefs/defaults',
    'CVS/Root',
    'lib/cvs/Checkin.prog',
    '.jj/repo/config.toml',
    '.pijul/config',
    '.fslckout',
    '_FOSSIL_',
    '.repo/repo/main.py',
    '.ſvn/wc.db',
  ])('refuses %j, inside version-control metadata', (filePath) => {
    expect(workspacePathProblem(filePath)).toMatch(/^is inside version-control metadata/);
  });

  it('accepts metadata paths only when asked to, for reading a repository that is already there', () => {
    expect(workspacePathProblem('.git/HEAD', { allowRepositoryMetadata: true })).toBeUndefined();
    expect(workspacePathProblem('.git/../x', { allowRepositoryMetadata: true })).toBe('leaves the workspace (..)');
    expect(checkWorkspacePath('.git/HEAD', 'read', { allowRepositoryMetadata: true })).toBe('.git/HEAD');
  });

  it('tells a walk which entries are metadata to leave out', () => {
    expect(['.git', 'sub/.hg', 'CVS', '.gitignore', 'src/app.py'].filter((entry) => isRepositoryMetadata(entry))).toEqual(['.git', 'sub/.hg', 'CVS']);
  });

  it('still refuses what it refused before', () => {
    expect(workspacePathProblem('../x')).toBe('leaves the workspace (..)');
    expect(workspacePathProblem('/etc/passwd')).toBe('is absolute');
    expect(workspacePathProblem('a\u0000b')).toBe('contains control characters');
  });

  it('names the component, the origin and what to do when it throws', () => {
    expect(() => checkWorkspacePath('src/.GIT/hooks/pre-commit', "the coder's reply")).toThrow(
      expect.objectContaining({
        code: ErrorCode.INVALID_ARGUMENT,
        message: `the coder's reply: path "src/.GIT/hooks/pre-commit" is inside version-control metadata (".GIT"), which only the user's own tools may write; use a relative path inside the workspace such as src/app.py`,
      }),
    );
  });
});

describe('workspaceFileProblem', () => {
  it('refuses a file named HEAD that git would take for a repository HEAD', () => {
    expect(workspaceFileProblem('HEAD', 'ref: refs/heads/main\n')).toMatch(/is a git HEAD/);
    expect(workspaceFileProblem('vendor/x/head', 'ref:refs/heads/main')).toMatch(/is a git HEAD/);
    expect(workspaceFileProblem('HEAD', `${'a'.repeat(40)}\n`)).toMatch(/is a git HEAD/);
    expect(workspaceFileProblem('HEAD.', `${'A'.repeat(40)}junk`)).toMatch(/is a git HEAD/);
    expect(() => checkWorkspaceFile({ path: 'HEAD', content: 'ref: refs/heads/x' }, 'the patch')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('the patch: path "HEAD" is a git HEAD') }));
  });

  it('accepts other files named HEAD, and HEAD-like content under other names', () => {
    expect(workspaceFileProblem('HEAD', 'Notes about the HEAD request\n')).toBeUndefined();
    expect(workspaceFileProblem('docs/HEAD.md', 'ref: refs/heads/main')).toBeUndefined();
    expect(workspaceFileProblem('ref.txt', 'ref: refs/heads/main')).toBeUndefined();
  });

  it('checks the path first', () => {
    expect(workspaceFileProblem('.git/config', '[core]\n\tfsmonitor = touch /tmp/x\n')).toMatch(/^is inside version-control metadata/);
  });
});
