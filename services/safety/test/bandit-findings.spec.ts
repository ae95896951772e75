import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { banditCommand, banditCwe, parseBanditReport } from '../src';

// A report Bandit 1.6.2 wrote in the sandbox image (python3 -m bandit -f json ... over these three files).
const report = readFileSync(path.join(__dirname, 'fixtures', 'bandit-1.6.2-report.json'), 'utf8');
const sources = new Map([
  ['app.py', 'import subprocess\nimport pickle\n\n\ndef run(command):\n    return subprocess.run(command, shell=True)\n\n\ndef load(blob):\n    return pickle.loads(blob)\n'],
  ['pkg/broken.py', 'def broken(:\n    pass\n'],
  ['pkg/clean.py', 'import json\n'],
]);

describe('parseBanditReport', () => {
  it('maps each result to a finding with the test id, severity, confidence, CWE, line, snippet and a remedy', () => {
    const { detections } = parseBanditReport(report, sources);
    expect(detections.map(({ ruleId, severity, confidence, cwe, line }) => [ruleId, severity, confidence, cwe, line])).toEqual([
      ['bandit.B404', 'low', 'high', 'CWE-78', 1],
      ['bandit.B403', 'low', 'high', 'CWE-502', 2],
      ['bandit.B602', 'high', 'high', 'CWE-78', 6],
      ['bandit.B301', 'medium', 'high', 'CWE-502', 10],
    ]);
    expect(detections[2]).toEqual({
      ruleId: 'bandit.B602',
      severity: 'high',
      path: 'app.py',
      line: 6,
      column: 0,
      message: expect.stringMatching(/^subprocess call with shell=True identified, security issue\. \(B602 subprocess_popen_with_shell_equals_true\)$/),
      snippet: 'return subprocess.run(command, shell=True)',
      remediation: expect.stringContaining('Drop shell=True'),
      cwe: 'CWE-78',
      confidence: 'high',
      tool: 'bandit',
    });
  });

  it('reports the files Bandit could not scan', () => {
    expect(parseBanditReport(report, sources).errors).toEqual([{ path: 'pkg/broken.py', reason: 'syntax error while parsing AST from file' }]);
  });

  it('drops results for files it was not given, strips ./ and orders by the request', () => {
    const json = JSON.stringify({
      results: [
        { filename: './b.py', test_id: 'B105', issue_severity: 'LOW', issue_confidence: 'MEDIUM', issue_text: 'Possible hardcoded password', line_number: 1 },
        { filename: 'a.py', test_id: 'B999', issue_severity: 'UNDEFINED', issue_confidence: 'UNDEFINED', issue_text: 'new test', line_number: 2, more_info: 'https://example.test/b999' },
        { filename: 'elsewhere.py', test_id: 'B602', issue_severity: 'HIGH', issue_confidence: 'HIGH', issue_text: 'x', line_number: 1 },
      ],
    });
    const { detections } = parseBanditReport(json, new Map([['a.py', 'x\ny\n'], ['b.py', 'password = "x"\n']]));
    expect(detections.map(({ path, ruleId, severity, cwe, remediation }) => [path, ruleId, severity, cwe, remediation])).toEqual([
      ['a.py', 'bandit.B999', 'info', '', 'See https://example.test/b999'],
      ['b.py', 'bandit.B105', 'low', 'CWE-259', expect.stringContaining('environment')],
    ]);
  });

  it('throws on output that is not a Bandit report', () => {
    expect(() => parseBanditReport('Traceback (most recent call last):', sources)).toThrow();
    expect(() => parseBanditReport('{"results": [{"filename": 1}]}', sources)).toThrow();
  });

  it('has a CWE for every test of Bandit 1.6.2', () => {
    const tests = ['B101', 'B102', 'B103', 'B104', 'B105', 'B106', 'B107', 'B108', 'B110', 'B112', 'B201', ...Array.from({ length: 25 }, (_, index) => `B3${String(index + 1).padStart(2, '0')}`), ...Array.from({ length: 13 }, (_, index) => `B4${String(index + 1).padStart(2, '0')}`), 'B501', 'B502', 'B503', 'B504', 'B505', 'B506', ...Array.from({ length: 11 }, (_, index) => `B6${String(index + 1).padStart(2, '0')}`), 'B701', 'B702', 'B703'];
    expect(tests.filter((test) => !/^CWE-\d+$/.test(banditCwe[test] ?? ''))).toEqual([]);
  });
});

describe('banditCommand', () => {
  it('names the files after --, ignores # nosec and Bandit\'s default exclusions, and prints JSON', () => {
    expect(banditCommand(['app.py', '-odd.py'])).toEqual(['python3', '-I', '-m', 'bandit', '-f', 'json', '-q', '--ignore-nosec', '-n', '1', '-x', '/ratchet-no-exclusions', '--', 'app.py', '-odd.py']);
  });
});
