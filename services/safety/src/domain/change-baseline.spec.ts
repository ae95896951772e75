import { describe, expect, it } from '@jest/globals';
import { markPreExisting, touchedLines } from './change-baseline';
import { Confidence, Severity, Tool, Verdict, type Finding } from './findings';

const finding = (path: string, ruleId: string, line: number, message = 'm'): Finding => ({
  ruleId,
  severity: Severity.HIGH,
  path,
  line,
  column: 1,
  message,
  snippet: '',
  remediation: '',
  cwe: '',
  confidence: Confidence.HIGH,
  tool: Tool.RATCHET,
  action: Verdict.BLOCK,
});

describe('touchedLines', () => {
  it('names the lines the change added or rewrote, not the ones that moved', () => {
    expect([...touchedLines('a\nb\nc\n', 'a\nB\nc\n')]).toEqual([2]);
    expect([...touchedLines('a\nb\nc\n', 'x\ny\na\nb\nc\n')]).toEqual([1, 2]);
    expect([...touchedLines('a\nb\nc\n', 'a\nc\n')]).toEqual([]);
    expect([...touchedLines('', 'a\nb\n')]).toEqual([1, 2]);
  });
});

describe('markPreExisting', () => {
  const before = 'import os\nos.system(x)\nassert y\n';
  const after = 'import os\n\n# a comment\nos.system(x)\nassert y\nos.system(z)\n';

  it('marks a finding the original had on an untouched line with the same text, even after it moved', () => {
    const marked = markPreExisting(
      [finding('a.py', 'py.os-command', 4), finding('a.py', 'bandit.B101', 5), finding('a.py', 'py.os-command', 6)],
      [finding('a.py', 'py.os-command', 2), finding('a.py', 'bandit.B101', 3)],
      [{ path: 'a.py', content: after }],
      [{ path: 'a.py', content: before }],
    );
    expect(marked.map((found) => [found.line, found.preExisting === true])).toEqual([
      [4, true],
      [5, true],
      [6, false],
    ]);
  });

  it('counts: one finding of the original matches one finding of the change', () => {
    const marked = markPreExisting(
      [finding('a.py', 'r', 1), finding('a.py', 'r', 2)],
      [finding('a.py', 'r', 1)],
      [{ path: 'a.py', content: 'x()\nx()\n' }],
      [{ path: 'a.py', content: 'x()\n' }],
    );
    expect(marked.map((found) => found.preExisting === true)).toEqual([true, false]);
  });

  it('judges a line the change rewrote as the change, even with the old finding', () => {
    const marked = markPreExisting([finding('a.py', 'r', 1)], [finding('a.py', 'r', 1)], [{ path: 'a.py', content: 'x(1)  # edited\n' }], [{ path: 'a.py', content: 'x(1)\n' }]);
    expect(marked[0]?.preExisting).toBeUndefined();
  });

  it('leaves new files, other rules and other files as the change', () => {
    const marked = markPreExisting(
      [finding('new.py', 'r', 1), finding('a.py', 'other', 1), finding('a.py', 'file-rule', 0, 'same')],
      [finding('a.py', 'r', 1), finding('a.py', 'file-rule', 0, 'same')],
      [
        { path: 'new.py', content: 'x()\n' },
        { path: 'a.py', content: 'x()\n' },
      ],
      [{ path: 'a.py', content: 'x()\n' }],
    );
    expect(marked.map((found) => found.preExisting === true)).toEqual([false, false, true]);
  });
});
