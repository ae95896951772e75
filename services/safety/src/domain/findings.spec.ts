import { describe, expect, it } from '@jest/globals';
import { capFindings, Confidence, FileFindings, maxSnippetLength, RuleId, ruleTexts, Severity, Tool, Verdict, verdictOf, type Finding } from './findings';

describe('verdictOf', () => {
  it.each<[string, Verdict[], Verdict]>([
    ['no findings', [], Verdict.ALLOW],
    ['only allowed ones', [Verdict.ALLOW, Verdict.ALLOW], Verdict.ALLOW],
    ['a warning among allowed ones', [Verdict.ALLOW, Verdict.WARN], Verdict.WARN],
    ['one block among lower ones', [Verdict.WARN, Verdict.BLOCK, Verdict.ALLOW], Verdict.BLOCK],
  ])('%s -> %s', (_name, actions, verdict) => {
    expect(verdictOf(actions.map((action) => ({ action })))).toBe(verdict);
  });
});

describe('FileFindings', () => {
  it('reports 1-based lines and columns, the trimmed source line and the rule severity, confidence, CWE and remedy', () => {
    const out = new FileFindings('a.py', 'x = 1\r\n    os.system(cmd)  \r\n');
    out.add(RuleId.PYTHON_OS_COMMAND, { row: 1, column: 4 }, 'msg');
    expect(out.findings).toEqual([
      {
        ruleId: 'py.os-command',
        severity: Severity.HIGH,
        path: 'a.py',
        line: 2,
        column: 5,
        snippet: 'os.system(cmd)',
        message: 'msg',
        remediation: expect.stringMatching(/.+/),
        cwe: 'CWE-78',
        confidence: Confidence.HIGH,
        tool: Tool.RATCHET,
      },
    ]);
  });

  it('gives every built-in rule a remedy, and a CWE to every rule about a weakness', () => {
    for (const [rule, text] of Object.entries(ruleTexts)) {
      expect([rule, text.remediation.length > 20]).toEqual([rule, true]);
      if (text.severity !== Severity.INFO && rule !== RuleId.PARSE_ERROR) expect([rule, text.cwe]).toEqual([rule, expect.stringMatching(/^CWE-\d+$/)]);
    }
  });

  it('caps long snippets', () => {
    const out = new FileFindings('a.js', `eval(${'x'.repeat(1_000)})`);
    out.add(RuleId.JS_DYNAMIC_EVAL, { row: 0, column: 0 }, 'msg');
    expect(out.findings[0]!.snippet).toHaveLength(maxSnippetLength);
    expect(out.findings[0]!.snippet.endsWith('...')).toBe(true);
  });
});

describe('capFindings', () => {
  const finding = (line: number, severity: Severity, action: Verdict = Verdict.WARN): Finding => ({
    ruleId: RuleId.PARSE_ERROR,
    severity,
    path: 'a.py',
    line,
    column: 1,
    message: '',
    snippet: '',
    remediation: '',
    cwe: '',
    confidence: Confidence.HIGH,
    tool: Tool.RATCHET,
    action,
  });

  it('keeps everything under the cap', () => {
    const all = [finding(1, Severity.LOW), finding(2, Severity.HIGH)];
    expect(capFindings(all, 2)).toEqual(all);
  });

  it('keeps the most severe in source order and says how many were left out', () => {
    const all = [finding(1, Severity.LOW), finding(2, Severity.HIGH), finding(3, Severity.LOW), finding(4, Severity.CRITICAL), finding(5, Severity.HIGH)];
    const capped = capFindings(all, 3);
    expect(capped.map((found) => found.line)).toEqual([2, 4, 0]);
    expect(capped[2]).toMatchObject({ ruleId: RuleId.FINDINGS_TRUNCATED, severity: Severity.INFO, action: Verdict.ALLOW, message: expect.stringContaining('3 more findings') });
  });

  it('keeps blocking findings over more severe ones the policy only warns about', () => {
    const all = [finding(1, Severity.CRITICAL, Verdict.WARN), finding(2, Severity.MEDIUM, Verdict.BLOCK), finding(3, Severity.HIGH, Verdict.ALLOW)];
    expect(capFindings(all, 2).map((found) => found.line)).toEqual([2, 0]);
  });
});
