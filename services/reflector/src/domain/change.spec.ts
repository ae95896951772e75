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

  it('keeps a large change within its budget: every file shows its first hunks whole and names the lines it leaves out', () => {
    const big = Array.from({ length: 6 }, (_, index) => ({ path: `module_${index}.py`, content: `def f_${index}(value):\n    return value\n`.repeat(400) }));
    const change = describeChange([], big, 8_000);
    expect(countTokens(change.text)).toBeLessThanOrEqual(8_000);
    expect(change.files).toHaveLength(6);
    expect(change.leftOut).toEqual([]);
    for (let index = 0; index < 6; index += 1) {
      expect(change.text).toContain(`+++ b/module_${index}.py (new file, 800 lines)\n+    1 | def f_${index}(value):`);
      expect(change.text).toMatch(new RegExp(`\\.\\.\\. \\(over the review's budget, not shown: new lines \\d+-800 of module_${index}\\.py\\)`));
    }
  });

  it('shows the hunks of a modified file in order, never one cut in its middle, and lists the files that get too little room', () => {
    const base = `${'def keep(value):\n    return value\n\n'.repeat(300)}`;
    const lines = base.split('\n');
    for (const at of [100, 400, 700]) lines[at] = `    return value + ${at}`;
    const modified = { path: 'calc.py', content: lines.join('\n') };
    const change = describeChange([{ path: 'calc.py', content: base }], [modified], 190);
    expect(countTokens(change.text)).toBeLessThanOrEqual(190);
    expect(change.text).toContain('+  101 |     return value + 100');
    expect(change.text).not.toContain('return value + 700');
    expect(change.text).toMatch(/\.\.\. \(over the review's budget, not shown: new lines 398-404, 698-704 of calc\.py\)$/);

    const many = Array.from({ length: 60 }, (_, index) => ({ path: `m_${String(index).padStart(2, '0')}.py`, content: `def f_${index}(value):\n    return value\n`.repeat(40) }));
    const crowded = describeChange([], many, 2_000);
    expect(countTokens(crowded.text)).toBeLessThanOrEqual(2_000);
    expect(crowded.leftOut.length).toBeGreaterThan(0);
    expect(crowded.text).toContain('+++ b/m_00.py (new file, 80 lines)\n+    1 | def f_0(value):');
    expect(crowded.text).toContain(`more changed files not shown, over the review's budget: ${crowded.leftOut.join(', ')})`);
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
