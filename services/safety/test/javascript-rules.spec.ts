import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { analyzeFiles, loadParsers, RuleId, Severity, Verdict, type Parsers } from '../src';

let parsers: Parsers;
beforeAll(async () => {
  parsers = await loadParsers();
});
afterAll(() => parsers.close());

const check = (path: string, content: string) => analyzeFiles(parsers, [{ path, content }]);
const rulesOf = (path: string, content: string) => check(path, content).findings.map((found) => found.ruleId);

describe('child_process: what a call runs, not what a file imports', () => {
  it.each([
    ['exec of a template with substitutions', 'a.js', "import { exec } from 'child_process';\nexec(`git checkout ${branch}`);"],
    ['execSync of a concatenation, through require', 'a.cjs', "const cp = require('child_process');\ncp.execSync('ls ' + dir);"],
    ['exec of a variable with the node: prefix in typed TypeScript', 'a.ts', "import * as cp from 'node:child_process';\nconst run = (command: string): void => { cp.exec(command); };"],
    ['a destructured execSync', 'a.js', "const { execSync } = require('node:child_process');\nexecSync(userInput);"],
    ['a promisified exec', 'a.ts', "import { exec } from 'node:child_process';\nimport { promisify } from 'node:util';\nconst run = promisify(exec);\nawait run(`npm view ${name}`);"],
    ['a dynamic import', 'a.mjs', "const cp = await import('node:child_process');\ncp.exec(command);"],
    ['TypeScript import = require', 'a.ts', "import cp = require('child_process');\ncp.exec(command);"],
    ['module.require', 'a.js', "module.require('child_process').exec(command);"],
    ['createRequire', 'a.mjs', "import { createRequire } from 'node:module';\nconst cp = createRequire(import.meta.url)('child_process');\ncp.execSync(command);"],
    ['spawn with shell: true and a built command', 'a.ts', "import { spawn } from 'node:child_process';\nspawn(`grep ${pattern} *.log`, { shell: true });"],
    ['execFileSync with shell: true and built arguments', 'a.js', "const { execFileSync } = require('child_process');\nexecFileSync('grep', [pattern, file], { shell: true });"],
    ['spawn of bash -c with a built script', 'a.js', "const { spawn } = require('child_process');\nspawn('bash', ['-c', `tar czf ${out} .`]);"],
    ['shell: true in an options constant', 'a.ts', "import { spawnSync } from 'node:child_process';\nconst options = { shell: true };\nspawnSync(command, options);"],
  ])('blocks %s (js.shell-command)', (_name, path, code) => {
    expect(rulesOf(path, code)).toEqual([RuleId.JS_SHELL_COMMAND]);
    expect(check(path, code).verdict).toBe(Verdict.BLOCK);
  });

  it('blocks process.binding of the spawn internals (js.process-internals)', () => {
    expect(rulesOf('a.js', "const spawn = process.binding('spawn_sync');")).toEqual([RuleId.JS_PROCESS_INTERNALS]);
  });

  it.each([
    ['exec of a fixed command', 'a.js', "const { exec } = require('child_process');\nexec('ls -l', (error, out) => console.log(out));", RuleId.JS_SHELL_LITERAL],
    ['spawn of a fixed command with shell: true', 'a.ts', "import { spawn } from 'child_process';\nspawn('npm test', { shell: true });", RuleId.JS_SHELL_LITERAL],
    ['execFile of a program chosen at run time', 'a.ts', "import { execFile } from 'node:child_process';\nexecFile(tool, ['--version']);", RuleId.JS_PROCESS_SPAWN],
  ])('warns about %s', (_name, path, code, rule) => {
    expect(rulesOf(path, code)).toEqual([rule]);
    expect(check(path, code).verdict).toBe(Verdict.WARN);
  });

  it.each([
    ['execFile of git with literal arguments', 'a.ts', "import { execFile } from 'node:child_process';\nexecFile('git', ['log', '-1'], (error, stdout) => console.log(stdout));"],
    ['execFileSync with arguments built at run time, no shell', 'a.js', "const { execFileSync } = require('child_process');\nexecFileSync('git', ['checkout', branch], { encoding: 'utf8' });"],
    ['spawn with shell: false', 'a.ts', "import { spawn } from 'child_process';\nspawn('node', [script], { shell: false, stdio: 'inherit' });"],
    ['spawnSync of a shell with a fixed script', 'a.js', "const { spawnSync } = require('child_process');\nspawnSync('sh', ['-c', 'echo hello']);"],
    ['fork of a literal module', 'a.js', "const { fork } = require('child_process');\nfork('./worker.js', [String(id)]);"],
    ['importing child_process alone', 'a.js', "import { exec } from 'child_process';\nconst cp = require('child_process');\nexport { exec, cp };"],
    ['a re-export', 'a.ts', "export { execFile } from 'child_process';"],
    ['a type-only import', 'a.ts', "import type { ChildProcess } from 'child_process';\nlet p: ChildProcess | undefined;"],
    ['inline type-only specifiers', 'a.ts', "import { type SpawnOptions } from 'node:child_process';"],
    ['a module with a similar name', 'a.js', "import { exec } from './child_process_helpers.js';\nexec(command);"],
    ['an exec method of another object', 'a.js', "const re = /a+/;\nre.exec(input);\ndb.exec(statement);"],
  ])('allows %s', (_name, path, code) => {
    expect(rulesOf(path, code)).toEqual([]);
  });
});

describe('js.dynamic-eval and js.function-constructor', () => {
  it.each([
    ['eval of a variable', 'a.js', 'eval(userInput);', RuleId.JS_DYNAMIC_EVAL],
    ['eval of a template with substitutions', 'a.ts', 'eval(`run(${x})`);', RuleId.JS_DYNAMIC_EVAL],
    ['eval of a concatenation', 'a.js', "eval('return ' + body);", RuleId.JS_DYNAMIC_EVAL],
    ['globalThis.eval', 'a.ts', 'const result: unknown = globalThis.eval(code as string);', RuleId.JS_DYNAMIC_EVAL],
    ['indirect eval', 'a.js', '(0, eval)(code);', RuleId.JS_DYNAMIC_EVAL],
    ['optional-call eval', 'a.js', 'eval?.(code);', RuleId.JS_DYNAMIC_EVAL],
    ['new Function', 'a.ts', "const f = new Function('a', 'return a');", RuleId.JS_FUNCTION_CONSTRUCTOR],
    ['Function()', 'a.js', "const f = Function('return 1');", RuleId.JS_FUNCTION_CONSTRUCTOR],
    ['new globalThis.Function', 'a.js', 'const f = new globalThis.Function(body);', RuleId.JS_FUNCTION_CONSTRUCTOR],
  ])('flags %s', (_name, path, code, rule) => {
    expect(rulesOf(path, code)).toEqual([rule]);
  });

  it.each([
    ['eval of a literal', 'a.js', "eval('1 + 1');"],
    ['eval of a template without substitutions', 'a.js', 'eval(`2 * 3`);'],
    ['a method named eval', 'a.ts', 'const value: number = calculator.eval(expression);'],
    ['a Function type annotation', 'a.ts', 'const run: Function = () => 1;\nfunction call(f: Function): void { f(); }'],
    ['Function.prototype', 'a.js', 'const bound = Function.prototype.bind.call(f, null);'],
  ])('allows %s', (_name, path, code) => {
    expect(rulesOf(path, code)).toEqual([]);
  });
});

describe('js.vm', () => {
  it.each([
    ['vm.runInNewContext', 'a.js', "import vm from 'node:vm';\nvm.runInNewContext(code);"],
    ['a destructured runInThisContext', 'a.cjs', "const { runInThisContext } = require('vm');\nrunInThisContext(code);"],
    ['new vm.Script', 'a.ts', "import * as vm from 'vm';\nconst script = new vm.Script(code);"],
    ['a named import', 'a.ts', "import { compileFunction } from 'node:vm';\ncompileFunction(body, []);"],
  ])('flags %s', (_name, path, code) => {
    expect(rulesOf(path, code)).toEqual([RuleId.JS_VM]);
  });

  it('allows other vm functions and unrelated objects', () => {
    expect(rulesOf('a.js', "import vm from 'vm';\nvm.isContext({});\nconst other = { runInNewContext() {} };\nother.runInNewContext('x');")).toEqual([]);
  });
});

describe('write-outside-workspace (JavaScript/TypeScript)', () => {
  it.each([
    ['fs.writeFileSync', 'a.ts', "import fs from 'node:fs';\nfs.writeFileSync('/etc/hosts', 'x');"],
    ['fs.promises.writeFile', 'a.js', "const fs = require('fs');\nawait fs.promises.writeFile('../../x', 'y');"],
    ['a destructured and renamed rmSync in TSX', 'a.tsx', "import { rmSync as remove } from 'fs';\nexport const App = () => { remove('/home', { recursive: true }); return <div/>; };"],
    ['copyFileSync to outside', 'a.js', "const { copyFileSync } = require('node:fs');\ncopyFileSync('a.txt', '/var/tmp/stolen');"],
    ['fs/promises to the home directory', 'a.mts', "import { writeFile } from 'node:fs/promises';\nawait writeFile('~/.npmrc', token);"],
    ['a namespace import of fs/promises', 'a.ts', "import * as fsp from 'fs/promises';\nawait fsp.appendFile('/var/log/app.log', line);"],
    ['require(...) called directly', 'a.js', "require('fs').mkdirSync('/opt/app', { recursive: true });"],
    ['createWriteStream with a Windows path', 'a.js', "const fs = require('fs');\nfs.createWriteStream('C:\\\\temp\\\\x.log');"],
    ['renameSync of a file outside', 'a.js', "const fs = require('fs');\nfs.renameSync('/etc/hosts', 'hosts');"],
    ['path.join(os.homedir(), ...)', 'a.ts', "import fs from 'fs';\nimport os from 'os';\nimport path from 'path';\nfs.writeFileSync(path.join(os.homedir(), '.ssh', 'config'), x);"],
    ['a const path', 'a.ts', "import { writeFileSync } from 'fs';\nconst TARGET: string = '/etc/cron.d/job';\nwriteFileSync(TARGET, job);"],
    ['openSync for writing', 'a.js', "const fs = require('fs');\nfs.openSync('/etc/x', 'w');"],
    ['fs-extra', 'a.js', "const fse = require('fs-extra');\nfse.outputFileSync('/etc/x', 'y');"],
    ['promises destructured from fs', 'a.js', "const { promises: fsp } = require('fs');\nawait fsp.rm('/', { recursive: true });"],
    ['a template literal without substitutions', 'a.js', "import { unlinkSync } from 'fs';\nunlinkSync(`/etc/motd`);"],
    ['a use above the require', 'a.js', "function save() { fs.writeFileSync('/etc/x', 'y'); }\nconst fs = require('fs');"],
  ])('flags %s', (_name, path, code) => {
    expect(rulesOf(path, code)).toEqual([RuleId.WRITE_OUTSIDE_WORKSPACE]);
  });

  it.each([
    ['writes inside the workspace', 'a.ts', "import { writeFileSync } from 'node:fs';\nwriteFileSync('out/data.json', '{}');"],
    ['reading outside', 'a.js', "const fs = require('fs');\nfs.readFileSync('/etc/hostname', 'utf8');\nfs.openSync('/etc/hostname');\nfs.openSync('/etc/hostname', 'r');"],
    ['a non-literal path', 'a.ts', "import fs from 'fs';\nfs.writeFileSync(target, data);\nfs.writeFileSync(`${dir}/x`, data);"],
    ['copying from outside to inside', 'a.js', "const fs = require('fs');\nfs.copyFileSync('/etc/hostname', 'hostname.txt');"],
    ['an object that is not fs', 'a.js', "const store = makeStore();\nstore.writeFileSync('/etc/x', 'y');"],
    ['a temporary directory from os.tmpdir()', 'a.js', "const fs = require('fs');\nconst os = require('os');\nconst path = require('path');\nfs.mkdtempSync(path.join(os.tmpdir(), 'x-'));"],
    ['writing to the scratch directory /tmp, private to the sandbox', 'a.ts', "import { writeFileSync, mkdirSync } from 'node:fs';\nmkdirSync('/tmp/cache', { recursive: true });\nwriteFileSync('/tmp/cache/out.json', '{}');"],
  ])('allows %s', (_name, path, code) => {
    expect(rulesOf(path, code)).toEqual([]);
  });
});

describe('JavaScript/TypeScript findings come from the syntax tree', () => {
  it('ignores the same words in comments, strings, templates, JSX text and type positions', () => {
    const code = [
      "// require('child_process') is forbidden",
      "/* eval(userInput); new Function('x'); fs.writeFileSync('/etc/hosts', 'x') */",
      'const note: string = "new Function(\'x\') and eval(x)";',
      "const template = `import('child_process') ${note}`;",
      "type Exec = typeof import('child_process');",
      "export const Help = (): JSX.Element => <p>never call eval(input) or require('child_process')</p>;",
    ].join('\n');
    expect(check('help.tsx', code)).toEqual({ verdict: Verdict.ALLOW, findings: [] });
  });

  it('reports rule, severity, 1-based line and column, the source line, a message and a remedy', () => {
    const [found] = check('src/make.ts', "const a: number = 1;\n  const f = new Function('x', 'return x');\n").findings;
    expect(found).toEqual({
      ruleId: RuleId.JS_FUNCTION_CONSTRUCTOR,
      severity: Severity.HIGH,
      path: 'src/make.ts',
      line: 2,
      column: 13,
      message: expect.stringContaining('new Function(...)'),
      snippet: "const f = new Function('x', 'return x');",
      remediation: expect.stringMatching(/write the function in the source/),
      cwe: 'CWE-95',
      confidence: 'high',
      tool: 'ratchet',
      action: Verdict.BLOCK,
    });
  });

  it('counts columns in UTF-16 code units and names the alias the code used', () => {
    const [found] = check('a.js', "const { writeFileSync: put } = require('fs');\nconst s = '😀'; put('/etc/x', s);").findings;
    expect(found).toMatchObject({ line: 2, column: 17, message: expect.stringContaining('fs.writeFileSync() (called as put) writes to "/etc/x"') });
  });

  it('parses typed TypeScript and TSX without findings', () => {
    const ts = 'interface Item { text: string; done: boolean }\nexport function add<T extends Item>(items: readonly T[], item: T): T[] { return [...items, item as T]; }\nenum Color { Red }\n';
    const tsx = "import { useState } from 'react';\nexport function Counter({ start }: { start: number }) {\n  const [n, setN] = useState<number>(start);\n  return <button onClick={() => setN(n + 1)}>{n}</button>;\n}\n";
    expect(check('src/items.ts', ts)).toEqual({ verdict: Verdict.ALLOW, findings: [] });
    expect(check('src/counter.tsx', tsx)).toEqual({ verdict: Verdict.ALLOW, findings: [] });
  });
});
