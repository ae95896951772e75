import { describe, expect, it } from '@jest/globals';
import { actionOf, applyPolicy, CodeAction, Confidence, defaultCodePolicy, Severity, Tool, Verdict, verdictOf, type CodePolicy, type Detection } from '../src';

const detection = (overrides: Partial<Detection> = {}): Detection => ({
  ruleId: 'bandit.B602',
  severity: Severity.HIGH,
  path: 'app.py',
  line: 3,
  column: 0,
  message: 'm',
  snippet: 's',
  remediation: 'r',
  cwe: 'CWE-78',
  confidence: Confidence.HIGH,
  tool: Tool.BANDIT,
  ...overrides,
});

describe('the default code policy', () => {
  it.each<[string, Partial<Detection>, CodeAction]>([
    ['HIGH severity, HIGH confidence', {}, CodeAction.BLOCK],
    ['CRITICAL, MEDIUM confidence', { severity: Severity.CRITICAL, confidence: Confidence.MEDIUM }, CodeAction.BLOCK],
    ['HIGH severity, LOW confidence', { confidence: Confidence.LOW }, CodeAction.WARN],
    ['MEDIUM severity', { severity: Severity.MEDIUM, ruleId: 'bandit.B307' }, CodeAction.WARN],
    ['LOW severity, LOW confidence', { severity: Severity.LOW, confidence: Confidence.LOW, ruleId: 'bandit.B311' }, CodeAction.WARN],
    ['INFO', { severity: Severity.INFO, ruleId: 'scanner-skipped' }, CodeAction.ALLOW],
    ['assert in a pytest file', { ruleId: 'bandit.B101', severity: Severity.LOW, path: 'tests/test_app.py' }, CodeAction.IGNORE],
    ['assert in a test module at the root', { ruleId: 'bandit.B101', severity: Severity.LOW, path: 'test_app.py' }, CodeAction.IGNORE],
    ['assert in conftest.py deep down', { ruleId: 'bandit.B101', severity: Severity.LOW, path: 'pkg/sub/conftest.py' }, CodeAction.IGNORE],
    ['assert in application code', { ruleId: 'bandit.B101', severity: Severity.LOW, path: 'app/core.py' }, CodeAction.WARN],
    ['import subprocess', { ruleId: 'bandit.B404', severity: Severity.LOW }, CodeAction.IGNORE],
    ['subprocess without a shell', { ruleId: 'bandit.B603', severity: Severity.LOW }, CodeAction.IGNORE],
    ['a made-up password in a test', { ruleId: 'py.hardcoded-password', severity: Severity.MEDIUM, confidence: Confidence.MEDIUM, path: 'tests/test_login.py' }, CodeAction.IGNORE],
    ['a password in application code', { ruleId: 'py.hardcoded-password', severity: Severity.MEDIUM, confidence: Confidence.MEDIUM }, CodeAction.WARN],
    ['object injection (noise)', { ruleId: 'eslint.security/detect-object-injection', severity: Severity.LOW, tool: Tool.ESLINT, path: 'a.ts' }, CodeAction.IGNORE],
  ])('%s -> %s', (_name, overrides, action) => {
    expect(actionOf(defaultCodePolicy, detection(overrides))).toBe(action);
  });

  it('never lets a rule hide a HIGH danger: every default rule names LOW or MEDIUM noise, or tests', () => {
    for (const rule of defaultCodePolicy.rules) expect(rule.ids.every((id) => !/B60[25]|dynamic-eval|subprocess-shell/.test(id))).toBe(true);
  });
});

describe('rules', () => {
  const policy = (rules: CodePolicy['rules']): CodePolicy => ({ ...defaultCodePolicy, rules });

  it('match ids exactly or with *, and the first match wins', () => {
    const rules = policy([
      { ids: ['bandit.B60*'], paths: ['scripts/**'], action: CodeAction.WARN },
      { ids: ['bandit.B6*'], action: CodeAction.ALLOW },
      { ids: ['bandit.B602'], action: CodeAction.BLOCK },
    ]);
    expect(actionOf(rules, detection({ path: 'scripts/deploy/run.py' }))).toBe(CodeAction.WARN);
    expect(actionOf(rules, detection({ path: 'app.py' }))).toBe(CodeAction.ALLOW);
    expect(actionOf(rules, detection({ ruleId: 'bandit.B501' }))).toBe(CodeAction.BLOCK);
    // `.` is literal, not any character.
    expect(actionOf(policy([{ ids: ['py.eval'], action: CodeAction.IGNORE }]), detection({ ruleId: 'pyXeval' }))).toBe(CodeAction.BLOCK);
  });

  it('match file globs: * within a directory, ** across, a bare name anywhere', () => {
    const rules = policy([{ ids: ['*'], paths: ['src/*.py', 'gen/**', 'setup.py'], action: CodeAction.IGNORE }]);
    expect(actionOf(rules, detection({ path: 'src/a.py' }))).toBe(CodeAction.IGNORE);
    expect(actionOf(rules, detection({ path: 'src/pkg/a.py' }))).toBe(CodeAction.BLOCK);
    expect(actionOf(rules, detection({ path: 'gen/x/y/z.py' }))).toBe(CodeAction.IGNORE);
    expect(actionOf(rules, detection({ path: 'tools/setup.py' }))).toBe(CodeAction.IGNORE);
  });

  it('turn detections into findings with actions, dropping the ignored, and the verdict is the most severe action', () => {
    const rules = policy([{ ids: ['bandit.B404'], action: CodeAction.IGNORE }]);
    const findings = applyPolicy(rules, [detection({ ruleId: 'bandit.B404', severity: Severity.LOW }), detection({ severity: Severity.MEDIUM }), detection({ severity: Severity.INFO })]);
    expect(findings.map((found) => [found.severity, found.action])).toEqual([
      [Severity.MEDIUM, Verdict.WARN],
      [Severity.INFO, Verdict.ALLOW],
    ]);
    expect(verdictOf(findings)).toBe(Verdict.WARN);
  });

  it('use the thresholds for what no rule matches', () => {
    const strict: CodePolicy = { rules: [], block: { severity: Severity.MEDIUM, confidence: Confidence.LOW }, warn: { severity: Severity.INFO, confidence: Confidence.LOW } };
    expect(actionOf(strict, detection({ severity: Severity.MEDIUM, confidence: Confidence.LOW }))).toBe(CodeAction.BLOCK);
    expect(actionOf(strict, detection({ severity: Severity.INFO }))).toBe(CodeAction.WARN);
  });
});
