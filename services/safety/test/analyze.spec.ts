import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ErrorCode } from '@ratchet/errors';
import { analyzeFiles, defaultLimits, loadParsers, RuleId, Severity, Verdict, type Parsers } from '../src';

let parsers: Parsers;
beforeAll(async () => {
  parsers = await loadParsers();
});
afterAll(() => parsers.close());

describe('file paths', () => {
  it.each(['/etc/cron.d/x.py', '../x.py', 'a/../../b.py', 'src/../x.py', 'C:/x.py', 'C:\\x.py', 'a\\b.py', './a.py', 'a/./b.py', 'a//b.py', 'a/', '', '~/x.py', 'a\u0000.py', `${'d/'.repeat(200)}x.py`, '.git/config', '.git/hooks/pre-commit', 'src/.GIT /hooks/post-checkout', 'GIT~1/config', '.hg/hgrc'])(
    'blocks %j as CRITICAL without analysing its content',
    (path) => {
      const result = analyzeFiles(parsers, [{ path, content: 'import os\nos.system("x")\n' }]);
      expect(result.verdict).toBe(Verdict.BLOCK);
      expect(result.findings).toEqual([expect.objectContaining({ ruleId: RuleId.PATH_OUTSIDE_WORKSPACE, severity: Severity.CRITICAL, line: 0, column: 0, message: expect.stringMatching(/.+/) })]);
    },
  );

  it.each(['app.py', 'src/pkg/mod.py', 'a..b.py', '.github/workflows/ci.yml', 'tests/test_x.py', 'web/App.tsx', '.gitignore', '.gitmodules', '.gitattributes'])('accepts %j', (path) => {
    expect(analyzeFiles(parsers, [{ path, content: 'x = 1\n' }]).findings).toEqual([]);
  });

  it('only path-checks files without a known grammar', () => {
    const files = [
      { path: 'README.md', content: 'Run `os.system("x")` and `eval(input())` and `require("child_process")`.' },
      { path: 'data.json', content: '{"code": "eval(x)"}' },
      { path: 'setup.cfg', content: '[x]\nexec = eval(x)' },
    ];
    expect(analyzeFiles(parsers, files)).toEqual({ verdict: Verdict.ALLOW, findings: [] });
  });

  it('parses an executable script without an extension by its #! line', () => {
    expect(analyzeFiles(parsers, [{ path: 'bin/tool', content: '#!/usr/bin/env python3\nimport os\nos.system("id")\n' }]).findings.map((found) => found.ruleId)).toEqual([RuleId.PYTHON_OS_COMMAND]);
  });

  it('picks the grammar per file, whatever the other files are', () => {
    const result = analyzeFiles(parsers, [
      { path: 'main.py', content: 'import subprocess\nsubprocess.run(c, shell=True)\n' },
      { path: 'web/app.js', content: "require('child_process').exec(command);\n" },
      { path: 'web/view.tsx', content: 'export const V = (p: { code: string }) => <div>{eval(p.code)}</div>;\n' },
    ]);
    expect(result.findings.map(({ ruleId, path }) => [path, ruleId])).toEqual([
      ['main.py', RuleId.PYTHON_SUBPROCESS_SHELL],
      ['web/app.js', RuleId.JS_SHELL_COMMAND],
      ['web/view.tsx', RuleId.JS_DYNAMIC_EVAL],
    ]);
  });
});

describe('parse errors', () => {
  it('warns about a Python file that does not parse, at its first error, without blocking', () => {
    const result = analyzeFiles(parsers, [{ path: 'tests/test_x.py', content: 'def ok():\n    pass\n\ndef broken(:\n    pass\n' }]);
    expect(result.verdict).toBe(Verdict.WARN);
    expect(result.findings).toEqual([expect.objectContaining({ ruleId: RuleId.PARSE_ERROR, severity: Severity.LOW, line: 4, snippet: 'def broken(:', message: expect.stringContaining('Python syntax error') })]);
  });

  it('warns about a TypeScript file that does not parse and still runs the rules on the rest', () => {
    const result = analyzeFiles(parsers, [{ path: 'src/a.ts', content: "const ok: number = 1;\nconst broken = (;\nimport { exec } from 'child_process'; exec(command);\n" }]);
    expect(result.verdict).toBe(Verdict.BLOCK);
    expect(result.findings.map(({ ruleId, line }) => [ruleId, line])).toEqual([
      [RuleId.PARSE_ERROR, 2],
      [RuleId.JS_SHELL_COMMAND, 3],
    ]);
  });

  it('reads TypeScript syntax in a .js file as an error, since the grammar follows the extension', () => {
    const result = analyzeFiles(parsers, [{ path: 'a.js', content: 'const x: number = 1;\n' }]);
    expect(result.findings.map((found) => found.ruleId)).toEqual([RuleId.PARSE_ERROR]);
  });
});

describe('odd input', () => {
  it('allows an empty list of files', () => {
    expect(analyzeFiles(parsers, [])).toEqual({ verdict: Verdict.ALLOW, findings: [] });
  });

  it.each(['empty.py', 'empty.ts', 'empty.tsx', 'empty.js'])('allows an empty %s', (path) => {
    expect(analyzeFiles(parsers, [{ path, content: '' }])).toEqual({ verdict: Verdict.ALLOW, findings: [] });
    expect(analyzeFiles(parsers, [{ path, content: ' \n\t\n' }])).toEqual({ verdict: Verdict.ALLOW, findings: [] });
  });

  it('never blocks or throws on binary-looking or malformed text', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const noise = (length: number) => Array.from({ length }, () => String.fromCharCode(Math.floor(random() * 0x3000))).join('');
    const contents = ['\u0000\u0001\u0002', '\ud800\udfff\ud800', '\uFEFFx = 1', noise(5_000), noise(20_000), 'def f(:\n' + noise(100)];
    for (const path of ['a.py', 'a.js', 'a.ts', 'a.tsx', 'data.bin']) {
      for (const content of contents) {
        const result = analyzeFiles(parsers, [{ path, content }]);
        expect(result.verdict).not.toBe(Verdict.BLOCK);
        for (const found of result.findings) expect(found.ruleId).toBe(RuleId.PARSE_ERROR);
      }
    }
  });

  it('survives deeply nested and very long expressions without overflowing the stack', () => {
    const deep = 100_000;
    const files = [
      { path: 'nested.py', content: `x = ${'('.repeat(deep)}1${')'.repeat(deep)}\n` },
      { path: 'nested.js', content: `x = ${'['.repeat(deep)}${']'.repeat(deep)};\n` },
      { path: 'unclosed.ts', content: `x = ${'{'.repeat(deep)}\n` },
      { path: 'chain.py', content: `import os\nos${'.path'.repeat(deep)}.system(x)\nos.system(x)\n` },
      { path: 'chain.js', content: `const fs = require('fs');\nfs${'.x'.repeat(deep)}.writeFileSync('/etc/x');\nfs.writeFileSync('/etc/x');\n` },
    ];
    const result = analyzeFiles(parsers, files);
    expect(result.findings.filter((found) => found.ruleId !== RuleId.PARSE_ERROR).map(({ path, line }) => [path, line])).toEqual([
      ['chain.py', 3],
      ['chain.js', 3],
    ]);
  });

  it('works out each name once, so doubling chains stay cheap, cycles end and very deep chains count as unknown', () => {
    const chain = (length: number, first: string, step: (name: string, previous: string) => string) =>
      Array.from({ length }, (_, index) => (index === 0 ? first : step(`p${index}`, `p${index - 1}`)));
    const python = (length: number) => ['from pathlib import Path', ...chain(length, "p0 = Path('/etc')", (name, previous) => `${name} = ${previous} / ${previous}`), `p${length - 1}.write_text('x')`].join('\n');
    const javascript = (length: number) => ["const fs = require('fs');", ...chain(length, "const p0 = '/x';", (name, previous) => `const ${name} = ${previous} + ${previous};`), `fs.writeFileSync(p${length - 1}, '');`].join('\n');
    const result = analyzeFiles(parsers, [
      { path: 'short.py', content: python(8) },
      { path: 'long.py', content: python(200) },
      { path: 'cycle.py', content: "a = b\nb = a\nopen(a, 'w')" },
      { path: 'short.js', content: javascript(8) },
      { path: 'long.js', content: javascript(200) },
      { path: 'cycle.js', content: "const fs = require('fs');\nlet a = b;\nlet b = a;\nfs.writeFileSync(a, '');" },
    ]);
    expect(result.findings.map(({ path, ruleId }) => [path, ruleId])).toEqual([
      ['short.py', RuleId.WRITE_OUTSIDE_WORKSPACE],
      ['short.js', RuleId.WRITE_OUTSIDE_WORKSPACE],
    ]);
  });
});

describe('limits', () => {
  it('refuses a file over 1 MB, naming the file, its size and the limit', () => {
    expect(() => analyzeFiles(parsers, [{ path: 'ok.py', content: '' }, { path: 'big.py', content: 'x'.repeat(1_000_001) }])).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringMatching(/^big\.py is 1000001 bytes; .* at most 1000000 bytes/) }),
    );
  });

  it('counts UTF-8 bytes, not characters, and accepts a file of exactly the limit', () => {
    expect(() => analyzeFiles(parsers, [{ path: 'wide.py', content: 'é'.repeat(500_001) }])).toThrow(/wide\.py is 1000002 bytes/);
    expect(analyzeFiles(parsers, [{ path: 'edge.txt', content: 'x'.repeat(1_000_000) }]).verdict).toBe(Verdict.ALLOW);
  });

  it('refuses more than 200 files', () => {
    const files = (count: number) => Array.from({ length: count }, (_, index) => ({ path: `f${index}.py`, content: '' }));
    expect(() => analyzeFiles(parsers, files(201))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('201 files sent; the safety check takes at most 200 files') }));
    expect(analyzeFiles(parsers, files(200)).verdict).toBe(Verdict.ALLOW);
  });

  it('refuses more than the total size', () => {
    const files = Array.from({ length: 3 }, (_, index) => ({ path: `f${index}.py`, content: 'x'.repeat(400) }));
    expect(() => analyzeFiles(parsers, files, { ...defaultLimits, maxTotalBytes: 1_000 })).toThrow(/total 1200 bytes; .* at most 1000 bytes per call/);
  });

  it('quotes a file name with odd characters in the error', () => {
    expect(() => analyzeFiles(parsers, [{ path: 'a\nb.py', content: 'x'.repeat(11) }], { ...defaultLimits, maxFileBytes: 10 })).toThrow('"a\\nb.py" is 11 bytes');
  });

  it('caps the findings listed but blocks on all of them', () => {
    const content = `${'print(1)\n'.repeat(3)}${'eval(x)\n'.repeat(10)}`;
    const result = analyzeFiles(parsers, [{ path: 'a.py', content: 'def broken(:\n' }, { path: 'b.py', content }], { ...defaultLimits, maxFindings: 4 });
    expect(result.verdict).toBe(Verdict.BLOCK);
    expect(result.findings.map(({ ruleId, line }) => [ruleId, line])).toEqual([
      [RuleId.PYTHON_DYNAMIC_EVAL, 4],
      [RuleId.PYTHON_DYNAMIC_EVAL, 5],
      [RuleId.PYTHON_DYNAMIC_EVAL, 6],
      [RuleId.FINDINGS_TRUNCATED, 0],
    ]);
    expect(result.findings[3]!.message).toContain('8 more findings');
  });

  it('checks a large realistic file (a sanity check of the whole path, not a timing)', () => {
    const block = ['def handler_{n}(request):', '    data = json.loads(request.body)', '    return {"id": {n}, "items": [x * 2 for x in data["items"]]}', ''].join('\n');
    const body = Array.from({ length: 6_000 }, (_, index) => block.replaceAll('{n}', String(index))).join('\n');
    const content = `import json\nimport os\n${body}\nos.system(cmd)\n`;
    expect(Buffer.byteLength(content)).toBeGreaterThan(600_000);
    const result = analyzeFiles(parsers, [{ path: 'big/handlers.py', content }]);
    expect(result.findings).toEqual([expect.objectContaining({ ruleId: RuleId.PYTHON_OS_COMMAND, line: content.split('\n').length - 1 })]);
  });
});
