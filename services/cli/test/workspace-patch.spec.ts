import { describe, expect, it } from '@jest/globals';
import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { applyPatch, parsePatch } from 'diff';
import { FileChangeKind, makePatch, parseWorkspacePatch, patchedContent } from '../src/workspace/patch';

const before: SourceFile[] = [
  { path: 'calc.py', content: 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n' },
  { path: 'README.md', content: 'Calculator\n' },
  { path: 'old/notes.txt', content: 'to be removed\n' },
  { path: 'windows.txt', content: 'one\r\ntwo\r\n' },
  { path: 'no-newline.txt', content: 'last line' },
];

const after: SourceFile[] = [
  { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n' },
  { path: 'README.md', content: 'Calculator\n' },
  { path: 'tests/test_calc.py', content: 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n' },
  { path: 'windows.txt', content: 'one\r\nTWO\r\n' },
  { path: 'no-newline.txt', content: 'last line, changed' },
];

function thrown(action: () => unknown): AppError {
  try {
    action();
  } catch (error) {
    if (AppError.is(error)) return error;
    throw error;
  }
  throw new Error('expected an AppError');
}

describe('makePatch', () => {
  it('writes a git-style diff with /dev/null for added and deleted files, and leaves identical files out', () => {
    const { patch, summary } = makePatch(before, after, ['old/notes.txt']);

    expect(summary).toEqual({ changed: 3, added: 1, deleted: 1, insertions: 3 + 5, deletions: 3 + 1 });
    expect(patch).not.toContain('README.md');
    expect(patch).toContain('diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n');
    expect(patch).toContain('diff --git a/tests/test_calc.py b/tests/test_calc.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_calc.py\n@@ -0,0 +1,5 @@\n');
    expect(patch).toContain('diff --git a/old/notes.txt b/old/notes.txt\ndeleted file mode 100644\n--- a/old/notes.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-to be removed\n');
    expect(patch).toContain('\\ No newline at end of file');
    // No blank line between files: git apply would read it as context.
    expect(patch).not.toMatch(/\n\n(diff|---)/);
  });

  it('round-trips: applying each file of the patch to the old content gives the new content', () => {
    const { patch } = makePatch(before, after, ['old/notes.txt']);
    const oldContent = new Map(before.map((file) => [file.path, file.content]));
    const expected = new Map([...oldContent, ...after.map((file) => [file.path, file.content] as const)]);
    expected.delete('old/notes.txt');

    // With jsdiff's own applyPatch, file by file.
    const result = new Map(oldContent);
    for (const filePatch of parsePatch(patch)) {
      const name = (filePatch.newFileName === '/dev/null' ? filePatch.oldFileName : filePatch.newFileName)!.slice(2);
      const applied = applyPatch(result.get(name) ?? '', filePatch);
      expect(applied).not.toBe(false);
      if (filePatch.newFileName === '/dev/null') result.delete(name);
      else result.set(name, applied as string);
    }
    expect(result).toEqual(expected);

    // And through parseWorkspacePatch/patchedContent, which the directory and git appliers use.
    const viaModule = new Map(oldContent);
    for (const change of parseWorkspacePatch(patch)) {
      const content = patchedContent(change, viaModule.get(change.path));
      if (change.kind === FileChangeKind.DELETED) viaModule.delete(change.path);
      else viaModule.set(change.path, content);
    }
    expect(viaModule).toEqual(expected);
  });

  it('is empty when nothing changed, and treats files missing from `after` as unchanged', () => {
    expect(makePatch(before, [])).toEqual({ patch: '', summary: { changed: 0, added: 0, deleted: 0, insertions: 0, deletions: 0 } });
    expect(makePatch(before, before).patch).toBe('');
    expect(makePatch(before, [], ['never-existed.txt']).patch).toBe('');
  });

  it('handles empty files and paths with spaces and non-ASCII letters', () => {
    const { patch, summary } = makePatch([{ path: 'docs/empty.txt', content: '' }], [{ path: 'my notes/café.md', content: 'bonjour\n' }, { path: 'new-empty.txt', content: '' }], ['docs/empty.txt']);
    expect(summary).toEqual({ changed: 0, added: 2, deleted: 1, insertions: 1, deletions: 0 });
    const changes = parseWorkspacePatch(patch);
    expect(changes.map((change) => [change.path, change.kind])).toEqual([
      ['docs/empty.txt', 'deleted'],
      ['my notes/café.md', 'added'],
      ['new-empty.txt', 'added'],
    ]);
    expect(patchedContent(changes[1]!, undefined)).toBe('bonjour\n');
    expect(patchedContent(changes[2]!, undefined)).toBe('');
    expect(patchedContent(changes[0]!, '')).toBe('');
  });

  it('refuses bad paths and a file both written and deleted', () => {
    expect(thrown(() => makePatch([], [{ path: '../escape.txt', content: 'x' }])).code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(thrown(() => makePatch([], [{ path: '/etc/passwd', content: 'x' }])).code).toBe(ErrorCode.INVALID_ARGUMENT);
    const both = thrown(() => makePatch(before, [{ path: 'calc.py', content: 'x' }], ['calc.py']));
    expect(both.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(both.message).toContain('both written and deleted');
  });
});

describe('repository metadata in a patch', () => {
  const hook = '#!/bin/sh\ntouch /tmp/x\n';
  const hookPatch = `diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch /tmp/x\n`;

  it('makePatch refuses a result that writes or deletes inside .git, however it is spelled', () => {
    for (const filePath of ['.git/hooks/pre-commit', '.git/config', '.GIT./config', 'sub/.git', 'git~1/config', '.svn/wc.db']) {
      const error = thrown(() => makePatch(before, [...after, { path: filePath, content: hook }]));
      expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(error.message).toContain('inside version-control metadata');
    }
    expect(thrown(() => makePatch(before, after, ['.git/index'])).message).toContain('inside version-control metadata');
  });

  it('makePatch refuses a new or changed file git would take for a HEAD, and keeps one the workspace already had', () => {
    expect(thrown(() => makePatch(before, [...after, { path: 'HEAD', content: 'ref: refs/heads/main\n' }])).message).toContain('is a git HEAD');
    const fixture = { path: 'fixtures/bare/HEAD', content: 'ref: refs/heads/main\n' };
    expect(makePatch([...before, fixture], [...after, fixture]).patch).not.toContain('fixtures/bare/HEAD');
  });

  it('parseWorkspacePatch refuses a patch touching .git/hooks/pre-commit, .GIT/config or a HEAD it turns into a git HEAD', () => {
    expect(thrown(() => parseWorkspacePatch(hookPatch)).message).toContain('the patch: path ".git/hooks/pre-commit" is inside version-control metadata');
    const folded = '--- a/.GIT/config\n+++ b/.GIT/config\n@@ -1,1 +1,2 @@\n [core]\n+\tfsmonitor = touch /tmp/x\n';
    expect(thrown(() => parseWorkspacePatch(folded)).message).toContain('inside version-control metadata');
    const created = '--- /dev/null\n+++ b/HEAD\n@@ -0,0 +1,1 @@\n+ref: refs/heads/main\n';
    expect(thrown(() => parseWorkspacePatch(created)).message).toContain('is a git HEAD');
    const changed = '--- a/HEAD\n+++ b/HEAD\n@@ -1,1 +1,1 @@\n-the HEAD request\n+0123456789abcdef0123456789abcdef01234567\n';
    expect(thrown(() => parseWorkspacePatch(changed)).message).toContain('is a git HEAD');
    const plain = '--- a/HEAD\n+++ b/HEAD\n@@ -1,1 +1,1 @@\n-the HEAD request\n+the HEAD method\n';
    expect(parseWorkspacePatch(plain).map((change) => change.path)).toEqual(['HEAD']);
  });
});

describe('parseWorkspacePatch and patchedContent', () => {
  it('refuses paths outside the workspace, renames and binary changes', () => {
    const escape = '--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1,1 +1,1 @@\n-a\n+b\n';
    expect(thrown(() => parseWorkspacePatch(escape)).message).toContain('leaves the workspace');
    const absolute = '--- /dev/null\n+++ /etc/cron.d/job\n@@ -0,0 +1,1 @@\n+x\n';
    expect(thrown(() => parseWorkspacePatch(absolute)).message).toContain('is absolute');
    const rename = 'diff --git a/x.txt b/y.txt\nsimilarity index 100%\nrename from x.txt\nrename to y.txt\n';
    expect(thrown(() => parseWorkspacePatch(rename)).message).toContain('renames a file');
    const binary = 'diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n';
    expect(thrown(() => parseWorkspacePatch(binary)).message).toContain('binary');
  });

  it('accepts git diff output and refuses content the patch was not made from', () => {
    const fromGit = 'diff --git a/calc.py b/calc.py\nindex 3b18e51..a5c1966 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n';
    const [change] = parseWorkspacePatch(fromGit);
    expect(change?.path).toBe('calc.py');
    expect(patchedContent(change!, 'def add(a, b):\n    return a - b\n')).toBe('def add(a, b):\n    return a + b\n');
    const edited = thrown(() => patchedContent(change!, 'def add(a, b):\n    return b - a\n'));
    expect(edited.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(edited.message).toContain('does not fit calc.py');
    expect(thrown(() => patchedContent(change!, undefined)).message).toContain('does not exist');
  });
});
