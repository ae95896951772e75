import type { Node } from 'web-tree-sitter';
import { RuleId, type FileFindings } from './findings';
import { Arguments, Scope, stringLiteral } from './python-scope';
import { checkPythonSecurity, securityKnownNames } from './python-security-rules';
import { escapesWorkspace } from './workspace-paths';

const execFunctions = ['system', 'popen', 'execl', 'execle', 'execlp', 'execlpe', 'execv', 'execve', 'execvp', 'execvpe'];
const spawnFunctions = ['spawnl', 'spawnle', 'spawnlp', 'spawnlpe', 'spawnv', 'spawnve', 'spawnvp', 'spawnvpe', 'posix_spawn', 'posix_spawnp', 'startfile'];
/** Calls that run a shell command or replace/spawn a process (`posix` and `nt` are what `os` re-exports). */
const osCommands = new Set([
  ...['os', 'posix', 'nt'].flatMap((module) => [...execFunctions, ...spawnFunctions].map((name) => `${module}.${name}`)),
  'pty.spawn',
  'platform.popen',
  'commands.getoutput',
  'commands.getstatusoutput',
]);
/** Calls that always go through a shell, whatever their arguments. */
const alwaysShell = new Set(['subprocess.getoutput', 'subprocess.getstatusoutput', 'asyncio.create_subprocess_shell', 'asyncio.subprocess.create_subprocess_shell']);
/** Calls that run code given as a string. */
const evaluators = new Set(['eval', 'exec', 'compile', 'builtins.eval', 'builtins.exec', 'builtins.compile']);
const openers = new Set(['open', 'io.open', 'builtins.open', 'codecs.open']);
/** Calls whose first argument (or `path=`) is a path they create, change or delete. */
const pathWriters = new Set([
  ...['remove', 'unlink', 'rmdir', 'removedirs', 'mkdir', 'makedirs', 'chmod', 'chown', 'lchown', 'truncate', 'utime', 'mkfifo', 'mknod'].map((name) => `os.${name}`),
  'shutil.rmtree',
  'shutil.chown',
]);
/** Calls that remove their source and write their destination: both paths count. */
const movers = new Set(['os.rename', 'os.renames', 'os.replace', 'shutil.move']);
/** Calls whose second argument (or `dst=`) is the path they write. */
const copiers = new Set(['os.symlink', 'os.link', 'shutil.copy', 'shutil.copy2', 'shutil.copyfile', 'shutil.copytree', 'shutil.copymode', 'shutil.copystat']);
/** Methods of a `pathlib.Path` that create, change or delete the file it names. */
const pathlibWriters = new Set(['write_text', 'write_bytes', 'mkdir', 'unlink', 'rmdir', 'touch', 'chmod', 'lchmod', 'symlink_to', 'hardlink_to']);
/** `Path` methods that also write their first argument. */
const pathlibMovers = new Set(['rename', 'replace']);
const subprocessCalls = ['run', 'call', 'check_call', 'check_output', 'Popen'].map((name) => `subprocess.${name}`);
/** Every dotted name a rule knows, so `from os import *` can bind the bare names. */
const knownNames = [...osCommands, ...alwaysShell, ...pathWriters, ...movers, ...copiers, ...subprocessCalls, ...securityKnownNames];
/** Programs that run their `-c` argument as a shell script. */
const shells = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'fish', 'csh', 'tcsh', 'cmd', 'cmd.exe', 'powershell', 'pwsh']);
/** Expressions that read what the program did not write itself: the user, the environment, files, the network. */
const inputSources = /\b(input|raw_input)\s*\(|\bsys\.(argv|stdin)\b|\bos\.(environ|getenv)\b|\.(read|readline|readlines|recv|recvfrom|read_text|read_bytes)\s*\(|\brequest\.|\burlopen\s*\(|\brequests\./;

/**
 * Runs the Python rules over one parsed file: dynamic eval/exec/compile,
 * os-level command execution, subprocess with a shell, literal writes
 * outside the workspace, and the security rules of
 * python-security-rules.ts (weak crypto, TLS, deserialization, SQL, ...).
 * Names are resolved through imports (`import os as o`, `from os import
 * system as run`, `from os import *`), single assignments (`run =
 * os.system`), `__import__('os')`, `importlib.import_module('os')` and
 * `getattr(os, 'system')`. Only syntax nodes are inspected, so the same
 * words in comments and strings never match.
 */
export function checkPython(root: Node, out: FileFindings): void {
  const scope = new Scope(root, knownNames);
  for (const call of root.descendantsOfType('call')) {
    const callee = call.childForFieldName('function');
    if (callee === null) continue;
    const args = new Arguments(call.childForFieldName('arguments'));
    const name = scope.resolve(callee);
    if (name !== undefined) checkNamedCall(call, name, () => displayName(name, callee), args, scope, out);
    for (const written of writtenPaths(name, callee, args, scope)) {
      if (escapesWorkspace(written.path)) {
        out.add(RuleId.WRITE_OUTSIDE_WORKSPACE, call.startPosition, `${written.call} writes to ${JSON.stringify(written.path)}, outside the workspace`);
      }
    }
  }
  checkPythonSecurity(root, scope, out);
}

/** The rules that depend only on which function a call resolves to. */
function checkNamedCall(call: Node, name: string, shown: () => string, args: Arguments, scope: Scope, out: FileFindings): void {
  if (evaluators.has(name)) {
    const source = args.at(0) ?? args.keyword('source');
    if (source === undefined || stringLiteral(source) !== undefined) return;
    if (isBuiltLocally(source)) {
      out.add(RuleId.PYTHON_EVAL_BUILT_STRING, call.startPosition, `${shown()} runs ${source.text.slice(0, 40)}, a string this function builds itself; building source text and evaluating it is fragile and easy to turn into code injection`);
    } else {
      out.add(RuleId.PYTHON_DYNAMIC_EVAL, call.startPosition, `${shown()} runs code built at run time (${describeArgument(source)}), which lets data become code`);
    }
  } else if (osCommands.has(name)) {
    out.add(RuleId.PYTHON_OS_COMMAND, call.startPosition, `${shown()} runs a shell command or another program on the host`);
  } else if (alwaysShell.has(name)) {
    out.add(RuleId.PYTHON_SUBPROCESS_SHELL, call.startPosition, `${shown()} always runs its command through a shell`);
  } else if (name.startsWith('subprocess.') && args.shellRequested(scope)) {
    out.add(RuleId.PYTHON_SUBPROCESS_SHELL, call.startPosition, `${shown()} with shell=True runs its command through a shell, where quoting mistakes become command injection`);
  } else if (subprocessCalls.includes(name) || name === 'asyncio.create_subprocess_exec') {
    const script = shellScript(name === 'asyncio.create_subprocess_exec' ? args.positional : listItems(args.at(0) ?? args.keyword('args')));
    if (script !== undefined) out.add(RuleId.PYTHON_SUBPROCESS_SHELL, call.startPosition, `${shown()} runs a shell on ${describeArgument(script)} (-c with a string built at run time), where quoting mistakes become command injection`);
  }
}

/** The items of a literal list or tuple argument; empty for anything else. */
function listItems(node: Node | undefined): Node[] {
  if (node === undefined || (node.type !== 'list' && node.type !== 'tuple')) return [];
  return node.namedChildren.filter((child) => child.type !== 'comment');
}

/** For `[shell, '-c', script]` with a script that is not a literal: the script. */
function shellScript(items: readonly Node[]): Node | undefined {
  const program = items[0] === undefined ? undefined : stringLiteral(items[0]);
  if (program === undefined || !shells.has(program.slice(program.lastIndexOf('/') + 1))) return undefined;
  const flag = items.findIndex((item) => ['-c', '/c', '-Command'].includes(stringLiteral(item) ?? ''));
  const script = flag < 0 ? undefined : items[flag + 1];
  return script !== undefined && stringLiteral(script) === undefined ? script : undefined;
}

/**
 * True for a local variable of the enclosing function that every assignment
 * builds with string operations (concatenation, %, f-strings, str(),
 * join, format) from nothing read from outside (input, argv, environment,
 * files, network): `expression = str(a[0]); expression += op + str(b)`.
 * Parameters, module-level names and anything else are not.
 */
function isBuiltLocally(node: Node): boolean {
  if (node.type !== 'identifier') return false;
  let function_ = node.parent;
  while (function_ !== null && function_.type !== 'function_definition') function_ = function_.parent;
  const body = function_?.childForFieldName('body');
  if (function_ === null || body === null || body === undefined) return false;
  const parameters = function_.childForFieldName('parameters');
  if (parameters?.descendantsOfType('identifier').some((parameter) => parameter.text === node.text)) return false;
  const values: Node[] = [];
  for (const binding of body.descendantsOfType('identifier')) {
    if (binding.text !== node.text || binding.parent === null) continue;
    const parent = binding.parent;
    if ((parent.type === 'assignment' || parent.type === 'augmented_assignment') && parent.childForFieldName('left')?.equals(binding)) {
      const right = parent.childForFieldName('right');
      if (right === null) return false;
      values.push(right);
    } else if (bindsName(parent, binding)) {
      // Bound by a for loop, tuple unpacking, `with ... as`, `:=` or `global`: not a string this function built.
      return false;
    }
  }
  return values.length > 0 && values.every((value) => isStringBuilding(value) && !inputSources.test(value.text));
}

/** Nodes whose identifier children bind a name other than by plain assignment. */
const otherBindings = new Set(['pattern_list', 'tuple_pattern', 'list_pattern', 'as_pattern_target', 'global_statement', 'nonlocal_statement', 'list_splat_pattern']);

/** True when `identifier`, a child of `parent`, is a name `parent` binds (not one it reads). */
function bindsName(parent: Node, identifier: Node): boolean {
  if (parent.type === 'for_statement' || parent.type === 'for_in_clause') return parent.childForFieldName('left')?.equals(identifier) ?? false;
  if (parent.type === 'named_expression') return parent.childForFieldName('name')?.equals(identifier) ?? false;
  return otherBindings.has(parent.type);
}

function isStringBuilding(node: Node): boolean {
  if (node.type === 'string' || node.type === 'concatenated_string') return true;
  if (node.type === 'binary_operator') return ['+', '%'].includes(node.childForFieldName('operator')?.text ?? '');
  if (node.type === 'call') {
    const callee = node.childForFieldName('function');
    if (callee?.type === 'identifier') return ['str', 'repr', 'format'].includes(callee.text);
    return callee?.type === 'attribute' && ['join', 'format'].includes(callee.childForFieldName('attribute')?.text ?? '');
  }
  return false;
}

/** `os.system()`, plus how the code spelled it when an alias was resolved: `os.system() (called as run)`. */
function displayName(name: string, callee: Node): string {
  const spelled = callee.text.length > 60 ? `${callee.text.slice(0, 57)}...` : callee.text;
  return spelled === name ? `${name}()` : `${name}() (called as ${spelled.replace(/\s+/g, ' ')})`;
}

function describeArgument(node: Node): string {
  if (node.type === 'string') return 'an f-string';
  if (node.type === 'binary_operator') return 'a concatenation';
  if (node.type === 'identifier') return `the variable ${node.text.slice(0, 40)}`;
  return `a ${node.type.replace(/_/g, ' ')}`;
}

/** The paths a call writes, with the name to report, when they are computed from literals. */
function writtenPaths(name: string | undefined, callee: Node, args: Arguments, scope: Scope): { call: string; path: string }[] {
  const pathOf = (node: Node | undefined) => (node === undefined ? undefined : scope.literalPath(node)?.value);
  const written = (call: string, ...nodes: (Node | undefined)[]) =>
    nodes.map(pathOf).flatMap((path) => (path === undefined ? [] : [{ call, path }]));

  if (name !== undefined && openers.has(name)) {
    const mode = args.at(1) ?? args.keyword('mode');
    const modeText = mode === undefined ? undefined : stringLiteral(mode);
    return modeText !== undefined && /[wax+]/.test(modeText) ? written(`${name}(..., ${JSON.stringify(modeText)})`, args.at(0) ?? args.keyword('file')) : [];
  }
  if (name === 'os.open') {
    const flags = args.at(1) ?? args.keyword('flags');
    return flags !== undefined && /\bO_(WRONLY|RDWR|CREAT|APPEND|TRUNC)\b/.test(flags.text) ? written('os.open()', args.at(0) ?? args.keyword('path')) : [];
  }
  if (name !== undefined && pathWriters.has(name)) return written(`${name}()`, args.at(0) ?? args.keyword('path') ?? args.keyword('name'));
  if (name !== undefined && movers.has(name)) return written(`${name}()`, args.at(0) ?? args.keyword('src'), args.at(1) ?? args.keyword('dst'));
  if (name !== undefined && copiers.has(name)) return written(`${name}()`, args.at(1) ?? args.keyword('dst'));

  // Path('/etc/x').write_text(...), Path.home().joinpath('x').unlink(), p.open('w')
  if (callee.type !== 'attribute') return [];
  const method = callee.childForFieldName('attribute')?.text;
  const object = callee.childForFieldName('object');
  const target = object === null ? undefined : scope.literalPath(object);
  if (method === undefined || target?.isPathObject !== true) return [];
  const call = `Path(${JSON.stringify(target.value)}).${method}()`;
  if (pathlibWriters.has(method)) return [{ call, path: target.value }];
  if (pathlibMovers.has(method)) return [{ call, path: target.value }, ...written(call, args.at(0) ?? args.keyword('target'))];
  if (method === 'open') {
    const mode = args.at(0) ?? args.keyword('mode');
    const modeText = mode === undefined ? undefined : stringLiteral(mode);
    return modeText !== undefined && /[wax+]/.test(modeText) ? [{ call, path: target.value }] : [];
  }
  return [];
}
