import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, SafetyServiceDefinition, SafetyVerdict } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { hostService } from '@ratchet/runtime';
import { analyzeFiles, createSafetyService, loadParsers, RuleId, type Parsers } from '../src';

let parsers: Parsers;
beforeAll(async () => {
  parsers = await loadParsers();
});
afterAll(() => parsers.close());


describe('Python rules', () => {
  const blocked: [string, string, RuleId][] = [
    ['eval of input', 'x = eval(input())', RuleId.PYTHON_DYNAMIC_EVAL],
    ['exec of an f-string', 'exec(f"print({name})")', RuleId.PYTHON_DYNAMIC_EVAL],
    ['compile of a concatenation', "code = compile('a' + b, 'f', 'exec')", RuleId.PYTHON_DYNAMIC_EVAL],
    ['os.system', 'import os\nos.system("ls " + d)', RuleId.PYTHON_OS_COMMAND],
    ['os.popen through an alias', 'import os as o\no.popen("ls")', RuleId.PYTHON_OS_COMMAND],
    ['from os import system', 'from os import system\nsystem(cmd)', RuleId.PYTHON_OS_COMMAND],
    ['from os import system as run', 'from os import system as run\nrun(cmd)', RuleId.PYTHON_OS_COMMAND],
    ['__import__', "__import__('os').system('id')", RuleId.PYTHON_OS_COMMAND],
    ['os.execv', 'import os\nos.execv("/bin/sh", ["sh"])', RuleId.PYTHON_OS_COMMAND],
    ['subprocess shell=True', 'import subprocess\nsubprocess.run(cmd, shell=True)', RuleId.PYTHON_SUBPROCESS_SHELL],
    ['aliased subprocess shell', 'from subprocess import check_output as co\nco(cmd, shell=flag)', RuleId.PYTHON_SUBPROCESS_SHELL],
    ['open for writing outside', "with open('/etc/passwd', 'a') as f:\n    f.write('x')", RuleId.WRITE_OUTSIDE_WORKSPACE],
    ['open climbing out', "open('../../secrets.txt', mode='w')", RuleId.WRITE_OUTSIDE_WORKSPACE],
    ['pathlib write', "from pathlib import Path\nPath('/tmp/x').write_text('hi')", RuleId.WRITE_OUTSIDE_WORKSPACE],
    ['shutil.rmtree home', "import shutil\nshutil.rmtree('~/')", RuleId.WRITE_OUTSIDE_WORKSPACE],
    ['os.remove absolute', "import os\nos.remove('/var/log/syslog')", RuleId.WRITE_OUTSIDE_WORKSPACE],
  ];
  it.each(blocked)('blocks %s', (_name, code, rule) => {
    const result = analyzeFiles(parsers, [{ path: 'app.py', content: code }]);
    expect(result.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
    expect(result.findings.map((found) => found.ruleId)).toContain(rule);
  });

  const allowed: [string, string][] = [
    ['eval of a literal', 'x = eval("1 + 1")'],
    ['subprocess without a shell', 'import subprocess\nsubprocess.run(["ls", "-l"], shell=False)'],
    ['importing os only', 'import os\nprint(os.getcwd())'],
    ['words in comments and strings', '# os.system("rm -rf /") would be bad\nhelp = "never call eval(input()) or os.system"\n'],
    ['reading outside the workspace', "with open('/etc/hostname') as f:\n    print(f.read())"],
    ['writing inside the workspace', "with open('data/todo.json', 'w') as f:\n    f.write('[]')"],
    ['a method named system on another object', 'class Shell:\n    def system(self, c):\n        return c\nShell().system("x")'],
    ['non-literal paths', "open(path, 'w').write(data)"],
  ];
  it.each(allowed)('allows %s', (_name, code) => {
    expect(analyzeFiles(parsers, [{ path: 'app.py', content: code }])).toEqual({ verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW, findings: [] });
  });

  it('reports rule, 1-based line and column, the source line and a remedy', () => {
    const [found] = analyzeFiles(parsers, [{ path: 'pkg/run.py', content: 'import os\n\ndef go(d):\n    os.system("ls " + d)\n' }]).findings;
    expect(found).toMatchObject({ ruleId: RuleId.PYTHON_OS_COMMAND, path: 'pkg/run.py', line: 4, column: 5, snippet: 'os.system("ls " + d)', message: expect.stringContaining('os.system()') });
    expect(found!.remediation).not.toBe('');
  });
});

describe('JavaScript and TypeScript rules', () => {
  const blocked: [string, string, string, RuleId][] = [
    ['import child_process', 'a.js', "import { exec } from 'child_process';", RuleId.JS_CHILD_PROCESS],
    ['node: prefix in TypeScript', 'a.ts', "import * as cp from 'node:child_process';\nconst x: number = 1;", RuleId.JS_CHILD_PROCESS],
    ['require', 'a.cjs', "const cp = require('child_process');\ncp.execSync('id');", RuleId.JS_CHILD_PROCESS],
    ['dynamic import', 'a.mjs', "const cp = await import('node:child_process');", RuleId.JS_CHILD_PROCESS],
    ['eval of a variable', 'a.js', 'eval(userInput);', RuleId.JS_DYNAMIC_EVAL],
    ['eval of a template with substitutions', 'a.ts', 'eval(`run(${x})`);', RuleId.JS_DYNAMIC_EVAL],
    ['new Function', 'a.ts', "const f = new Function('a', 'return a');", RuleId.JS_FUNCTION_CONSTRUCTOR],
    ['Function()', 'a.js', "const f = Function('return 1');", RuleId.JS_FUNCTION_CONSTRUCTOR],
    ['vm', 'a.js', "import vm from 'node:vm';\nvm.runInNewContext(code);", RuleId.JS_VM],
    ['fs write outside', 'a.ts', "import fs from 'node:fs';\nfs.writeFileSync('/etc/hosts', 'x');", RuleId.WRITE_OUTSIDE_WORKSPACE],
    ['fs.promises write outside', 'a.js', "const fs = require('fs');\nawait fs.promises.writeFile('../../x', 'y');", RuleId.WRITE_OUTSIDE_WORKSPACE],
    ['destructured fs write', 'a.tsx', "import { rmSync as remove } from 'fs';\nexport const App = () => { remove('/home', { recursive: true }); return <div/>; };", RuleId.WRITE_OUTSIDE_WORKSPACE],
    ['copy to outside', 'a.js', "const { copyFileSync } = require('node:fs');\ncopyFileSync('a.txt', '/tmp/stolen');", RuleId.WRITE_OUTSIDE_WORKSPACE],
  ];
  it.each(blocked)('blocks %s', (_name, path, code, rule) => {
    const result = analyzeFiles(parsers, [{ path, content: code }]);
    expect(result.findings.map((found) => found.ruleId)).toContain(rule);
    expect(result.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
  });

  const allowed: [string, string, string][] = [
    ['eval of a literal', 'a.js', "eval('1 + 1');"],
    ['words in comments and strings', 'a.ts', "// require('child_process') is forbidden\nconst note: string = \"new Function('x') and eval(x)\";"],
    ['fs writes inside the workspace', 'a.ts', "import { writeFileSync } from 'node:fs';\nwriteFileSync('out/data.json', '{}');"],
    ['reading outside', 'a.js', "const fs = require('fs');\nfs.readFileSync('/etc/hostname', 'utf8');"],
    ['typed TypeScript', 'a.ts', 'interface Item { text: string; done: boolean }\nexport function add(items: Item[], text: string): Item[] { return [...items, { text, done: false }]; }\n'],
  ];
  it.each(allowed)('allows %s', (_name, path, code) => {
    expect(analyzeFiles(parsers, [{ path, content: code }])).toEqual({ verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW, findings: [] });
  });
});

describe('paths, parse errors and limits', () => {
  it('blocks file paths outside the workspace as CRITICAL', () => {
    for (const path of ['/etc/cron.d/x', '../x.py', 'a/../../b.py', 'C:/x.py', 'a\\b.py', './a.py', '']) {
      const result = analyzeFiles(parsers, [{ path, content: 'x = 1' }]);
      expect(result.findings.map((found) => found.ruleId)).toEqual([RuleId.PATH_OUTSIDE_WORKSPACE]);
      expect(result.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
    }
  });

  it('warns about a file that does not parse, at its first error, without blocking', () => {
    const result = analyzeFiles(parsers, [{ path: 'tests/test_x.py', content: 'def ok():\n    pass\n\ndef broken(:\n    pass\n' }]);
    expect(result.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_WARN);
    expect(result.findings[0]).toMatchObject({ ruleId: RuleId.PARSE_ERROR, line: 4 });
  });

  it('handles empty input, binary-looking content and other file types', () => {
    expect(analyzeFiles(parsers, []).verdict).toBe(SafetyVerdict.SAFETY_VERDICT_ALLOW);
    expect(analyzeFiles(parsers, [{ path: 'empty.py', content: '' }]).findings).toEqual([]);
    expect(analyzeFiles(parsers, [{ path: 'data.bin', content: '\u0000\u0001os.system("x")' }]).findings).toEqual([]);
    expect(analyzeFiles(parsers, [{ path: 'weird.js', content: '\u0000\u0001\u0002' }]).verdict).not.toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
  });

  it('refuses oversized input with the limit and the file', () => {
    expect(() => analyzeFiles(parsers, [{ path: 'big.py', content: 'x'.repeat(1_000_001) }])).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('big.py is 1000001 bytes') }));
    expect(() => analyzeFiles(parsers, Array.from({ length: 201 }, (_, index) => ({ path: `f${index}.py`, content: '' })))).toThrow(/at most 200/);
  });
});

describe('CheckCode over the in-process bus', () => {
  it('answers with the verdict and findings', async () => {
    const transport = new InProcessTransport();
    const service = await createSafetyService();
    const running = hostService({ name: 'safety', version: 'test', definition: SafetyServiceDefinition, implementation: service.implementation }, { transport });
    try {
      const client = createClient(transport, SafetyServiceDefinition);
      const response = await client.checkCode({ taskId: 't', iteration: 1, language: Language.LANGUAGE_PYTHON, files: [{ path: 'a.py', content: 'import os\nos.system("x")\n' }] });
      expect(response.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
      expect(response.findings[0]?.ruleId).toBe(RuleId.PYTHON_OS_COMMAND);
    } finally {
      await running.stop(100);
      await service.close();
    }
  });
});
