import { describe, expect, it } from '@jest/globals';
import { createEslintScanner, detectionOfEslintMessage, RuleId } from '../src';

const scanner = createEslintScanner();
const scan = (path: string, content: string) => scanner.scan({ path, content });
const brief = (path: string, content: string) => scan(path, content).map(({ ruleId, line, column, severity }) => [ruleId, line, column, severity]);

describe('eslint-plugin-security in-process', () => {
  it('reports the plugin rules on JavaScript with positions, CWE and tool', () => {
    const code = "const cp = require('child_process');\nfunction run(x) {\n  cp.exec('ls ' + x);\n  eval(x);\n  return /(a+)+$/.test(x);\n}\n";
    expect(brief('a.js', code)).toEqual([
      ['eslint.security/detect-child-process', 3, 3, 'high'],
      ['eslint.security/detect-eval-with-expression', 4, 3, 'high'],
      ['eslint.security/detect-unsafe-regex', 5, 10, 'medium'],
    ]);
    expect(scan('a.js', code)[0]).toMatchObject({ cwe: 'CWE-78', tool: 'eslint-plugin-security', snippet: "cp.exec('ls ' + x);", confidence: 'medium' });
  });

  it('scans TypeScript with its types stripped, positions unchanged', () => {
    const code = "import { exec } from 'node:child_process';\nexport function run(branch: string): void {\n  const cmd: string = `git checkout ${branch}`;\n  exec(cmd);\n}\n";
    expect(brief('src/git.ts', code)).toEqual([['eslint.security/detect-child-process', 4, 3, 'high']]);
  });

  it('scans TypeScript that needs transforming (enums, namespaces) and maps positions back', () => {
    const code = "enum Mode { Fast, Slow }\nnamespace Tools { export const x = 1; }\nexport function run(code: string, mode: Mode): unknown {\n  return mode === Mode.Fast ? eval(code) : Tools.x;\n}\n";
    expect(brief('src/run.ts', code)).toEqual([['eslint.security/detect-eval-with-expression', 4, 31, 'high']]);
  });

  it('says why it skipped a file it cannot read, without blocking', () => {
    expect(scan('src/view.tsx', 'export const V = () => <div />;\n')).toEqual([expect.objectContaining({ ruleId: RuleId.SCANNER_SKIPPED, severity: 'info', message: expect.stringContaining('TSX') })]);
    expect(scan('src/bad.ts', 'const x = (;\n')).toEqual([expect.objectContaining({ ruleId: RuleId.SCANNER_SKIPPED, message: expect.stringContaining('type stripping could not read') })]);
    expect(scan('src/bad.js', 'const x = (;\n')).toEqual([expect.objectContaining({ ruleId: RuleId.SCANNER_SKIPPED, message: expect.stringContaining('could not parse') })]);
  });

  it('reads CommonJS that is not valid as a module, and leaves other languages alone', () => {
    expect(brief('legacy.js', 'with (obj) { eval(code); }\n')).toEqual([['eslint.security/detect-eval-with-expression', 1, 14, 'high']]);
    expect(scan('app.py', 'eval(x)\n')).toEqual([]);
    expect(scan('README.md', 'eval(x)\n')).toEqual([]);
  });

  it('finds nothing in ordinary code', () => {
    const code = "import { readFile } from 'node:fs/promises';\nexport async function load(): Promise<unknown> {\n  const res = await fetch('https://example.com/data.json');\n  return JSON.parse(await readFile('config.json', 'utf8')) ?? res.json();\n}\n";
    expect(brief('src/load.ts', code)).toEqual([]);
  });
});

describe('detectionOfEslintMessage', () => {
  it('rates a bare require of child_process LOW: it runs nothing', () => {
    const detection = detectionOfEslintMessage('a.js', ["require('child_process');"], { ruleId: 'security/detect-child-process', message: 'Found require("child_process")', line: 1, column: 1 });
    expect(detection).toMatchObject({ ruleId: 'eslint.security/detect-child-process', severity: 'low', confidence: 'low' });
  });

  it('ignores messages of other rules and parse errors', () => {
    expect(detectionOfEslintMessage('a.js', [], { ruleId: null, message: 'Parsing error', line: 1, column: 1 })).toBeUndefined();
    expect(detectionOfEslintMessage('a.js', [], { ruleId: 'no-eval', message: 'x', line: 1, column: 1 })).toBeUndefined();
  });
});
