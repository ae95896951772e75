import { describe, expect, it } from '@jest/globals';
import { diffFiles } from './file-diff';

describe('diffFiles', () => {
  it('lists the files that changed, were added or removed, with numbered hunks', () => {
    const before = [
      { path: 'todo.py', content: 'def load(path):\n    with open(path) as f:\n        return json.load(f)\n' },
      { path: 'old.py', content: 'x = 1\n' },
      { path: 'same.py', content: 'y = 2\n' },
    ];
    const after = [
      { path: 'todo.py', content: 'def load(path):\n    if not os.path.exists(path):\n        return []\n    with open(path) as f:\n        return json.load(f)\n' },
      { path: 'same.py', content: 'y = 2\n' },
      { path: 'tests/test_todo.py', content: 'def test_x():\n    pass\n' },
    ];
    const diffs = diffFiles(before, after);
    expect(diffs.map(({ path, change, added, removed }) => ({ path, change, added, removed }))).toEqual([
      { path: 'old.py', change: 'removed', added: 0, removed: 1 },
      { path: 'tests/test_todo.py', change: 'added', added: 2, removed: 0 },
      { path: 'todo.py', change: 'changed', added: 2, removed: 0 },
    ]);
    const todo = diffs[2]!;
    expect(todo.hunks[0]?.header).toBe('@@ -1,3 +1,5 @@');
    expect(todo.hunks[0]?.lines.slice(0, 3)).toEqual([
      { kind: 'context', text: 'def load(path):', oldLine: 1, newLine: 1 },
      { kind: 'added', text: '    if not os.path.exists(path):', newLine: 2 },
      { kind: 'added', text: '        return []', newLine: 3 },
    ]);
  });

  it('finds nothing between equal snapshots, and treats no snapshot as empty', () => {
    expect(diffFiles([{ path: 'a.py', content: 'a\n' }], [{ path: 'a.py', content: 'a\n' }])).toEqual([]);
    expect(diffFiles([], [{ path: 'a.py', content: 'a' }])[0]).toMatchObject({ change: 'added', added: 1 });
  });
});
