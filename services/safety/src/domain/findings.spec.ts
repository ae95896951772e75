import { describe, expect, it } from '@jest/globals';
import { capFindings, FileFindings, maxSnippetLength, RuleId, Severity, Verdict, verdictOf, type Finding } from './findings';

const at = (severity: Severity) => ({ severity });

describe('verdictOf', () => {
  it.each<[string, Severity[], Verdict]>([
    ['no findings', [], Verdict.ALLOW],
    ['only INFO', [Severity.INFO], Verdict.WARN],
    ['LOW and MEDIUM', [Severity.LOW, Severity.MEDIUM], Verdict.WARN],
    ['one HIGH among lower ones', [Severity.LOW, Severity.HIGH, Severity.INFO], Verdict.BLOCK],
    ['CRITICAL', [Severity.CRITICAL], Verdict.BLOCK],
  ])('%s -> %s', (_name, severities, verdict) => {
    expect(verdictOf(severities.map(at))).toBe(verdict);
  });
});

describe('FileFindings', () => {
  it('reports 1-based lines and columns, the trimmed source line and the rule severity and remedy', () => {
    const out = new FileFindings('a.py', 'x = 1\r\n    os.system(cmd)  \r\n');
    out.add(RuleId.PYTHON_OS_COMMAND, { row: 1, column: 4 }, 'msg');
    expect(out.findings).toEqual([
      expect.objectContaining({ ruleId: 'py.os-command', severity: Severity.HIGH, path: 'a.py', line: 2, column: 5, snippet: 'os.system(cmd)', message: 'msg', remediation: expect.stringMatching(/.+/) }),
    ]);
  });

  it('caps long snippets', () => {
    const out = new FileFindings('a.js', `eval(${'x'.repeat(1_000)})`);
    out.add(RuleId.JS_DYNAMIC_EVAL, { row: 0, column: 0 }, 'msg');
    expect(out.findings[0]!.snippet).toHaveLength(maxSnippetLength);
    expect(out.findings[0]!.snippet.endsWith('...')).toBe(true);
  });
});

describe('capFindings', () => {
  const finding = (line: number, severity: Severity): Finding => ({ ruleId: RuleId.PARSE_ERROR, severity, path: 'a.py', line, column: 1, message: '', snippet: '', remediation: '' });

  it('keeps everything under the cap', () => {
    const all = [finding(1, Severity.LOW), finding(2, Severity.HIGH)];
    expect(capFindings(all, 2)).toEqual(all);
  });

  it('keeps the most severe in source order and says how many were left out', () => {
    const all = [finding(1, Severity.LOW), finding(2, Severity.HIGH), finding(3, Severity.LOW), finding(4, Severity.CRITICAL), finding(5, Severity.HIGH)];
    const capped = capFindings(all, 3);
    expect(capped.map((found) => found.line)).toEqual([2, 4, 0]);
    expect(capped[2]).toMatchObject({ ruleId: RuleId.FINDINGS_TRUNCATED, severity: Severity.INFO, message: expect.stringContaining('3 more findings') });
  });
});
