import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { analyzeFiles, loadParsers, RuleId, Severity, Verdict, type Parsers } from '../src';

let parsers: Parsers;
beforeAll(async () => {
  parsers = await loadParsers();
});
afterAll(() => parsers.close());

const check = (content: string, path = 'app.py') => analyzeFiles(parsers, [{ path, content }]);
const rulesOf = (content: string) => check(content).findings.map((found) => found.ruleId);

describe('py.dynamic-eval', () => {
  it.each([
    ['eval of input()', 'x = eval(input())'],
    ['exec of an f-string', 'exec(f"print({name})")'],
    ['compile of a concatenation', "code = compile('a' + b, 'f', 'exec')"],
    ['eval of a variable', 'def calc(expression):\n    return eval(expression)'],
    ['builtins.eval', 'import builtins\nbuiltins.eval(expr)'],
    ['an aliased builtin', 'from builtins import exec as ex\nex(code)'],
    ['eval re-bound to a name', 'run = eval\nrun(data)'],
  ])('flags %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([RuleId.PYTHON_DYNAMIC_EVAL]);
  });

  it.each([
    ['eval of a literal', 'x = eval("1 + 1")'],
    ['exec of implicitly concatenated literals', "exec('print(1)\\n' 'print(2)')"],
    ['a raw or bytes literal', "eval(r'1'); exec(b'x = 1')"],
    ['re.compile', 'import re\npattern = re.compile(user_pattern)'],
    ['compile imported from re', 'from re import compile\ncompile(p)'],
    ['a local function named compile', 'def compile(source):\n    return source\n\ncompile(text)'],
    ['a method named eval', 'calculator.eval(expression)'],
  ])('allows %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([]);
  });
});

describe('py.os-command', () => {
  it.each([
    ['os.system', 'import os\nos.system("ls " + d)'],
    ['os.system of a literal (any shell command)', 'import os\nos.system("ls")'],
    ['os.popen through a module alias', 'import os as o\no.popen("ls")'],
    ['from os import system', 'from os import system\nsystem(cmd)'],
    ['from os import system as run', 'from os import system as run\nrun(cmd)'],
    ['from os import *', 'from os import *\nsystem("id")'],
    ['__import__', "__import__('os').system('id')"],
    ['importlib.import_module', "import importlib\nimportlib.import_module('os').popen('id')"],
    ['getattr', "import os\ngetattr(os, 'system')('id')"],
    ['a function re-bound to a name', 'import os\nrun = os.system\nrun("id")'],
    ['os.execv', 'import os\nos.execv("/bin/sh", ["sh"])'],
    ['os.execlp', 'import os\nos.execlp("sh", "sh")'],
    ['os.spawnlp', 'import os\nos.spawnlp(os.P_WAIT, "ls", "ls")'],
    ['os.posix_spawn', 'import os\nos.posix_spawn("/bin/ls", ["ls"], {})'],
    ['pty.spawn', 'import pty\npty.spawn("/bin/sh")'],
    ['a parenthesised callee', 'import os\n(os.system)(cmd)'],
  ])('flags %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([RuleId.PYTHON_OS_COMMAND]);
  });

  it.each([
    ['importing os only', 'import os\nprint(os.getcwd(), os.path.join("a", "b"), os.environ.get("HOME"))'],
    ['a method named system on another object', 'class Shell:\n    def system(self, c):\n        return c\n\nShell().system("x")'],
    ['a local function named system', 'def system(c):\n    return c\n\nsystem("x")'],
    ['an unrelated module with the same attribute', 'import platform\nprint(platform.system())'],
  ])('allows %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([]);
  });
});

describe('py.subprocess-shell', () => {
  it.each([
    ['subprocess.run(shell=True)', 'import subprocess\nsubprocess.run(cmd, shell=True)'],
    ['Popen through a module alias', 'import subprocess as sp\nsp.Popen("ls | wc -l", shell=True)'],
    ['an aliased function', 'from subprocess import run as r\nr(c, shell=True)'],
    ['shell set from a variable', 'from subprocess import check_output as co\nco(cmd, shell=flag)'],
    ['shell in a **dict', "import subprocess\nsubprocess.call(cmd, **{'shell': True})"],
    ['shell in **dict()', 'import subprocess\nsubprocess.call(cmd, **dict(shell=1))'],
    ['__import__', "__import__('subprocess').run(c, shell=True)"],
    ['getoutput, which always uses a shell', 'import subprocess\nsubprocess.getoutput("ls")'],
    ['asyncio.create_subprocess_shell', 'import asyncio\nawait asyncio.create_subprocess_shell(cmd)'],
  ])('flags %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([RuleId.PYTHON_SUBPROCESS_SHELL]);
  });

  it.each([
    ['shell=False', 'import subprocess\nsubprocess.run(["ls", "-l"], shell=False)'],
    ['no shell argument', 'import subprocess\nsubprocess.run(["pytest", "-q"], check=True, capture_output=True)'],
    ['shell=None and shell=0', 'import subprocess\nsubprocess.run(["ls"], shell=None)\nsubprocess.run(["ls"], shell=0)'],
    ['a shell keyword on another call', 'def run(cmd, shell=False):\n    return cmd\n\nrun("x", shell=True)'],
  ])('allows %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([]);
  });
});

describe('write-outside-workspace (Python)', () => {
  it.each([
    ['open for appending to /etc', "with open('/etc/passwd', 'a') as f:\n    f.write('x')"],
    ['open climbing out, mode as keyword', "open('../../secrets.txt', mode='w')"],
    ['open with both as keywords', "open(file='/var/tmp/x', mode='wb')"],
    ['a path that climbs out of /tmp', "open('/tmp/../etc/cron.d/x', 'w')"],
    ['open for update in the home directory', "open('~/.bashrc', 'r+')"],
    ['io.open', "import io\nio.open('/etc/x', 'x')"],
    ['a module-level constant path', "OUT = '/etc/cron.d/job'\nwith open(OUT, 'w') as f:\n    f.write(x)"],
    ['os.open with write flags', "import os\nos.open('/etc/x', os.O_WRONLY | os.O_CREAT)"],
    ['Path.write_text', "from pathlib import Path\nPath('/opt/x').write_text('hi')"],
    ['pathlib.Path(...).mkdir with several parts', "import pathlib\npathlib.Path('..', '..', 'x').mkdir()"],
    ['Path.home().joinpath(...)', "from pathlib import Path\nPath.home().joinpath('.ssh', 'authorized_keys').write_text(key)"],
    ['a path built with / and kept in a name', "from pathlib import Path\ntarget = Path.home() / '.bashrc'\ntarget.write_text('x')"],
    ['Path.open for writing', "from pathlib import Path\nwith Path('/etc/hosts').open('w') as f:\n    f.write(x)"],
    ['shutil.rmtree of home', "import shutil\nshutil.rmtree('~/')"],
    ['os.remove of an absolute path', "import os\nos.remove('/var/log/syslog')"],
    ['os.makedirs of os.path.join', "import os\nos.makedirs(os.path.join('/opt', 'app'))"],
    ['shutil.copy to outside', "import shutil\nshutil.copy('data.txt', '/usr/local/bin/tool')"],
    ['os.rename of a file outside', "import os\nos.rename('/etc/hosts', 'hosts')"],
    ['an aliased os.remove with a Windows path', "from os import remove as rm\nrm('C:\\\\Windows\\\\win.ini')"],
  ])('flags %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([RuleId.WRITE_OUTSIDE_WORKSPACE]);
  });

  it.each([
    ['reading outside the workspace', "with open('/etc/hostname') as f:\n    print(f.read())"],
    ['reading in binary mode', "open('/etc/hostname', 'rb').read()"],
    ['writing inside the workspace', "with open('data/todo.json', 'w') as f:\n    f.write('[]')"],
    ['a path that climbs and comes back', "open('a/../b.txt', 'w')"],
    ['writing to /dev/null', "open('/dev/null', 'w').write('x')"],
    ['non-literal paths', "import os\nopen(path, 'w').write(data)\nos.remove(os.path.join(tmp, 'x'))"],
    ['pathlib inside the workspace', "from pathlib import Path\nPath('out/report.txt').write_text(text)"],
    ['pathlib reads outside', "from pathlib import Path\nprint(Path('/etc/hostname').read_text())"],
    ['a str method that shares a Path method name', "s = '/etc/hosts'.replace('hosts', 'x')"],
    ['copying from outside to inside', "import shutil\nshutil.copy('/etc/hostname', 'copy.txt')"],
    ['a name assigned twice', "OUT = '/etc/x'\nOUT = 'out.txt'\nopen(OUT, 'w')"],
    ['writing to the scratch directory /tmp, private to the sandbox', "open('/tmp/report.txt', 'w').write(x)\nfrom pathlib import Path\nPath('/tmp/cache').mkdir(exist_ok=True)"],
    ['writing below tempfile.gettempdir()', "import os, tempfile\nwith open(os.path.join(tempfile.gettempdir(), 'x.json'), 'w') as f:\n    f.write('{}')"],
  ])('allows %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([]);
  });
});

describe('Python findings come from the syntax tree', () => {
  it('ignores the same words in comments, strings and docstrings', () => {
    const code = [
      '"""Never call os.system(cmd) or eval(input()) here."""',
      '# os.system("rm -rf /") would be bad',
      '# subprocess.run(cmd, shell=True)',
      'help = "never call eval(input()) or os.system"',
      "note = '''",
      'subprocess.run(cmd, shell=True)',
      'open("/etc/passwd", "w")',
      "'''",
      'def f():',
      '    """exec(code) is forbidden; so is __import__("os").system("id")."""',
      '    return f"{help}: os.popen(x)"',
    ].join('\n');
    expect(check(code)).toEqual({ verdict: Verdict.ALLOW, findings: [] });
  });

  it('reports rule, severity, 1-based line and column, the source line, a message and a remedy', () => {
    const [found] = check('import os\n\ndef go(d):\n    os.system("ls " + d)\n', 'pkg/run.py').findings;
    expect(found).toEqual({
      ruleId: RuleId.PYTHON_OS_COMMAND,
      severity: Severity.HIGH,
      path: 'pkg/run.py',
      line: 4,
      column: 5,
      message: expect.stringContaining('os.system()'),
      snippet: 'os.system("ls " + d)',
      remediation: expect.stringContaining('subprocess.run'),
      cwe: 'CWE-78',
      confidence: 'high',
      tool: 'ratchet',
      action: Verdict.BLOCK,
    });
  });

  it('names the alias the code used', () => {
    const [found] = check('from os import system as run\nrun(cmd)').findings;
    expect(found!.message).toContain('os.system() (called as run)');
    expect(found).toMatchObject({ line: 2, column: 1, snippet: 'run(cmd)' });
  });

  it('reports every finding of a file in source order', () => {
    const code = ['import os, subprocess', 'eval(x)', 'if x:', '    subprocess.run(c, shell=True); os.system(c)', "open('/etc/x', 'w')"].join('\n');
    expect(check(code).findings.map(({ ruleId, line, column }) => [ruleId, line, column])).toEqual([
      [RuleId.PYTHON_DYNAMIC_EVAL, 2, 1],
      [RuleId.PYTHON_SUBPROCESS_SHELL, 4, 5],
      [RuleId.PYTHON_OS_COMMAND, 4, 36],
      [RuleId.WRITE_OUTSIDE_WORKSPACE, 5, 1],
    ]);
  });

  it('counts columns in UTF-16 code units, as editors do, and handles CRLF line ends', () => {
    // The emoji is 4 bytes, 2 UTF-16 code units and 1 code point: only UTF-16 gives column 14.
    const [found] = check('import os\r\nname = "😀"; os.system(name)\r\n').findings;
    expect(found).toMatchObject({ line: 2, column: 14, snippet: 'name = "😀"; os.system(name)' });
  });
});
