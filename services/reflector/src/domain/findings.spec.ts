import { describe, expect, it } from '@jest/globals';
import { describeChange } from './change';
import { auditFindingBlocks, fromScanner, normalizeCwe, orderFindings, owaspCategoryOf, parseSeverity, placeFinding, reviewFindingBlocks, severitySchema, type Finding } from './findings';

const change = describeChange(
  [
    { path: 'pkg/util.py', content: 'A = 1\n' },
    { path: 'helpers.py', content: 'X = 1\nY = 2\n' },
  ],
  [
    { path: 'pkg/util.py', content: 'A = 2\nB = 3\nC = 4\n' },
    { path: 'helpers.py', content: 'X = 1\nY = 2\n' },
    { path: 'app.py', content: 'print(1)\n' },
  ],
);

describe('severity', () => {
  it('reads the five names in any case and common synonyms, and nothing else', () => {
    expect(parseSeverity(' High ')).toBe('high');
    expect(parseSeverity('CRITICAL')).toBe('critical');
    expect(parseSeverity('moderate')).toBe('medium');
    expect(parseSeverity('Minor')).toBe('low');
    expect(parseSeverity('informational')).toBe('info');
    expect(parseSeverity('blocker')).toBe('critical');
    expect(parseSeverity('urgent')).toBeUndefined();
    expect(severitySchema.safeParse('Major').data).toBe('high');
    expect(severitySchema.safeParse('urgent').success).toBe(false);
  });
});

describe('normalizeCwe and owaspCategoryOf', () => {
  it('writes CWE ids one way and maps the ones the auditor is told about to their OWASP category', () => {
    expect(normalizeCwe('CWE-89')).toBe('CWE-89');
    expect(normalizeCwe('cwe 78')).toBe('CWE-78');
    expect(normalizeCwe('22')).toBe('CWE-22');
    expect(normalizeCwe('CWE-502: Deserialization of Untrusted Data')).toBe('CWE-502');
    expect(normalizeCwe('')).toBe('');
    expect(normalizeCwe('n/a')).toBe('');
    expect(owaspCategoryOf('CWE-89')).toBe('A03:2021-Injection');
    expect(owaspCategoryOf('CWE-22')).toBe('A01:2021-Broken Access Control');
    expect(owaspCategoryOf('CWE-918')).toBe('A10:2021-Server-Side Request Forgery');
    expect(owaspCategoryOf('CWE-1')).toBe('');
  });
});

describe('placeFinding', () => {
  it('keeps a changed path, strips diff prefixes, and clamps the line to the file', () => {
    expect(placeFinding('pkg/util.py', 2, change)).toEqual({ path: 'pkg/util.py', line: 2, outsideChange: false });
    expect(placeFinding('b/pkg/util.py', 99, change)).toEqual({ path: 'pkg/util.py', line: 3, outsideChange: false });
    expect(placeFinding('./app.py', -4, change)).toEqual({ path: 'app.py', line: 0, outsideChange: false });
  });

  it('re-points a path by its tail to the one changed file ending in it, else to the change as a whole', () => {
    expect(placeFinding('util.py', 1, change)).toEqual({ path: 'pkg/util.py', line: 1, outsideChange: false });
    expect(placeFinding('src/nowhere.py', 3, change)).toEqual({ path: '', line: 0, outsideChange: false, unknownPath: 'src/nowhere.py' });
    expect(placeFinding('', 7, change)).toEqual({ path: '', line: 0, outsideChange: false });
  });

  it('marks a file the change does not touch', () => {
    expect(placeFinding('helpers.py', 2, change)).toEqual({ path: 'helpers.py', line: 2, outsideChange: true });
  });
});

describe('blocking rules', () => {
  it('review: high and critical block; a flagged medium correctness finding blocks; nothing else, and nothing outside the change', () => {
    const rule = (severity: 'info' | 'low' | 'medium' | 'high' | 'critical', category: string, flagged: boolean, outsideChange = false) => reviewFindingBlocks({ severity, category, flagged, outsideChange });
    expect(rule('critical', 'style', false)).toBe(true);
    expect(rule('high', 'design', false)).toBe(true);
    expect(rule('medium', 'correctness', true)).toBe(true);
    expect(rule('medium', 'correctness', false)).toBe(false);
    expect(rule('medium', 'design', true)).toBe(false);
    expect(rule('low', 'correctness', true)).toBe(false);
    expect(rule('high', 'correctness', true, true)).toBe(false);
  });

  it('audit: high and critical block unless outside the change or judged a false positive', () => {
    expect(auditFindingBlocks({ severity: 'high', outsideChange: false })).toBe(true);
    expect(auditFindingBlocks({ severity: 'critical', outsideChange: false, real: true })).toBe(true);
    expect(auditFindingBlocks({ severity: 'critical', outsideChange: false, real: false })).toBe(false);
    expect(auditFindingBlocks({ severity: 'medium', outsideChange: false, real: true })).toBe(false);
    expect(auditFindingBlocks({ severity: 'high', outsideChange: true })).toBe(false);
  });

  it('a scanner finding keeps its rule id as source and says what the auditor made of it', () => {
    const scanner = { ruleId: 'py.subprocess-shell', tool: 'ratchet', severity: 'high' as const, path: 'app.py', line: 1, cwe: 'CWE-78', message: 'shell=True with a variable', remediation: 'pass a list' };
    expect(fromScanner(scanner, { real: true, reason: 'the name comes from the request' }, change)).toEqual({
      severity: 'high',
      path: 'app.py',
      line: 1,
      category: 'A03:2021-Injection',
      cwe: 'CWE-78',
      message: 'shell=True with a variable Auditor: a real issue: the name comes from the request',
      suggestion: 'pass a list',
      blocking: true,
      source: 'py.subprocess-shell',
    });
    expect(fromScanner(scanner, { real: false, reason: 'a constant' }, change)).toMatchObject({ blocking: false, message: expect.stringContaining('a false positive: a constant') });
    expect(fromScanner(scanner, undefined, change)).toMatchObject({ blocking: true, message: expect.stringContaining('(not judged by the auditor)') });
  });
});

describe('orderFindings', () => {
  it('puts the most severe first, blocking before non-blocking, and drops exact repeats', () => {
    const finding = (severity: Finding['severity'], blocking: boolean, path: string, message = 'm'): Finding => ({ severity, path, line: 1, category: 'correctness', cwe: '', message, suggestion: '', blocking, source: 'reviewer' });
    const ordered = orderFindings([finding('low', false, 'a.py'), finding('medium', false, 'b.py'), finding('medium', true, 'c.py'), finding('critical', true, 'd.py'), finding('low', false, 'a.py')]);
    expect(ordered.map((entry) => `${entry.severity}:${entry.path}`)).toEqual(['critical:d.py', 'medium:c.py', 'medium:b.py', 'low:a.py']);
  });
});
