import { describe, expect, it } from '@jest/globals';
import { countTokens } from '@ratchet/agent';
import { describeChange, lineCount } from './change';

const base = [
  { path: 'calc.py', content: 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n' },
  { path: 'helpers.py', content: 'X = 1\n' },
  { path: 'removed.py', content: 'gone = True\n' },
];

describe('describeChange', () => {
  it('shows a modified file as a unified diff whose lines carry their number in the new file, and a new file whole', () => {
    const after = [
      { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n' },
      { path: 'helpers.py', content: 'X = 1\n' },
      { path: 'tests/test_calc.py', content: 'from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n' },
    ];
    const change = describeChange(base, after);
    expect(change.files).toEqual([
      { path: 'calc.py', kind: 'modified', lines: 6 },
      { path: 'tests/test_calc.py', kind: 'added', lines: 4 },
    ]);
    expect(change.text).toBe(
      [
        '2 files changed (+ added, - removed; the number is the line in the new file):',
        '',
        '--- a/calc.py',
        '+++ b/calc.py',
        '@@ -1,5 +1,5 @@',
        '     1 | def add(a, b):',
        '-      |     return a - b',
        '+    2 |     return a + b',
        '     3 | ',
        '     4 | ',
        '     5 | def sub(a, b):',
        '',
        '+++ b/tests/test_calc.py (new file, 4 lines)',
        '+    1 | from calc import add',
        '+    2 | ',
        '+    3 | def test_add():',
        '+    4 |     assert add(1, 2) == 3',
      ].join('\n'),
    );
    // Unchanged files are not in the change but are known, for findings that point at them; a file only in the base is taken as unchanged.
    expect(change.existing.get('helpers.py')).toBe(1);
    expect(change.existing.get('removed.py')).toBe(1);
    expect(change.text).not.toContain('helpers.py');
    expect(change.text).not.toContain('removed.py');
    expect(change.leftOut).toEqual([]);
  });

  it('says so when nothing changed', () => {
    const change = describeChange(base, base);
    expect(change.files).toEqual([]);
    expect(change.text).toBe('(no change)');
  });

  it('keeps a large change within its budget: a file that does not fit is cut and the rest are listed', () => {
    const big = Array.from({ length: 6 }, (_, index) => ({ path: `module_${index}.py`, content: `def f_${index}(value):\n    return value\n`.repeat(400) }));
    const change = describeChange([], big, 8_000);
    expect(countTokens(change.text)).toBeLessThanOrEqual(8_000 + 100);
    expect(change.files).toHaveLength(6);
    expect(change.leftOut.length).toBeGreaterThan(0);
    expect(change.text).toContain(`more changed file${change.leftOut.length === 1 ? '' : 's'} not shown, over the review's budget: ${change.leftOut.join(', ')}`);
    expect(change.text).toContain('+    1 | def f_0(value):');
  });
});

describe('lineCount', () => {
  it('counts lines with or without a final newline', () => {
    expect(lineCount('')).toBe(0);
    expect(lineCount('a')).toBe(1);
    expect(lineCount('a\n')).toBe(1);
    expect(lineCount('a\nb')).toBe(2);
    expect(lineCount('a\n\n')).toBe(2);
  });
});
