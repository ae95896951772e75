import type { SafetyFinding } from '@ratchet/contracts';
import type { Node } from 'web-tree-sitter';
import { escapesWorkspace, finding, RuleId } from './findings';

const osCommands = new Set(['os.system', 'os.popen', 'posix.system', 'posix.popen', 'pty.spawn', 'commands.getoutput', 'commands.getstatusoutput']);
const osCommandPrefixes = ['os.exec', 'os.spawn', 'os.posix_spawn'];
const evalBuiltins = new Set(['eval', 'exec', 'compile', 'builtins.eval', 'builtins.exec', 'builtins.compile']);
/** Calls whose first argument is a path they modify. */
const pathWriters = new Set(['os.remove', 'os.unlink', 'os.rmdir', 'os.removedirs', 'os.mkdir', 'os.makedirs', 'os.chmod', 'os.chown', 'os.truncate', 'shutil.rmtree']);
/** Calls whose last positional argument is the path they write. */
const destinationWriters = new Set(['os.rename', 'os.replace', 'os.symlink', 'os.link', 'shutil.copy', 'shutil.copy2', 'shutil.copyfile', 'shutil.copytree', 'shutil.move']);
const pathlibWriters = new Set(['write_text', 'write_bytes', 'mkdir', 'unlink', 'rmdir', 'touch', 'rename', 'replace', 'symlink_to', 'chmod']);

/** Findings of the Python rules in one parsed file. */
export function checkPython(root: Node, path: string, source: string): SafetyFinding[] {
  const aliases = importAliases(root);
  const findings: SafetyFinding[] = [];
  for (const call of root.descendantsOfType('call')) {
    const callee = call.childForFieldName('function');
    const args = call.childForFieldName('arguments');
    if (callee === null) continue;
    const name = resolve(callee, aliases);
    const positional = args === null ? [] : args.namedChildren.filter((child) => child.type !== 'keyword_argument' && child.type !== 'comment');
    if (name !== undefined && evalBuiltins.has(name)) {
      const first = positional[0];
      if (first === undefined || !isPlainString(first)) {
        findings.push(finding(RuleId.PYTHON_DYNAMIC_EVAL, path, call.startPosition, `${name.replace('builtins.', '')}() of a string built at run time executes arbitrary code`, source));
      }
    }
    if (name !== undefined && (osCommands.has(name) || osCommandPrefixes.some((prefix) => name.startsWith(prefix)))) {
      findings.push(finding(RuleId.PYTHON_OS_COMMAND, path, call.startPosition, `${name}() runs a shell command or replaces the process`, source));
    }
    if (name !== undefined && name.startsWith('subprocess.') && keywordIsTrue(args, 'shell')) {
      findings.push(finding(RuleId.PYTHON_SUBPROCESS_SHELL, path, call.startPosition, `${name}(..., shell=True) runs its command through a shell`, source));
    }
    const written = writtenPath(name, callee, positional, args, aliases);
    if (written !== undefined && escapesWorkspace(written)) {
      findings.push(finding(RuleId.WRITE_OUTSIDE_WORKSPACE, path, call.startPosition, `writes to ${JSON.stringify(written)}, outside the workspace`, source));
    }
  }
  return findings;
}

/** Local names bound by imports to dotted module paths: `o` -> `os`, `system` -> `os.system`. */
function importAliases(root: Node): Map<string, string> {
  const aliases = new Map<string, string>();
  for (const statement of root.descendantsOfType('import_statement')) {
    for (const child of statement.namedChildren) {
      if (child.type === 'dotted_name') aliases.set(child.text.split('.')[0] ?? child.text, child.text.split('.')[0] ?? child.text);
      if (child.type === 'aliased_import') {
        const name = child.childForFieldName('name')?.text;
        const alias = child.childForFieldName('alias')?.text;
        if (name !== undefined && alias !== undefined) aliases.set(alias, name);
      }
    }
  }
  for (const statement of root.descendantsOfType('import_from_statement')) {
    const module = statement.childForFieldName('module_name')?.text;
    if (module === undefined) continue;
    for (const child of statement.namedChildren.slice(1)) {
      if (child.type === 'dotted_name') aliases.set(child.text, `${module}.${child.text}`);
      if (child.type === 'aliased_import') {
        const name = child.childForFieldName('name')?.text;
        const alias = child.childForFieldName('alias')?.text;
        if (name !== undefined && alias !== undefined) aliases.set(alias, `${module}.${name}`);
      }
    }
  }
  return aliases;
}

/** The dotted name a callee refers to, with import aliases and `__import__('x')` resolved. */
function resolve(node: Node, aliases: ReadonlyMap<string, string>): string | undefined {
  if (node.type === 'identifier') return aliases.get(node.text) ?? node.text;
  if (node.type === 'attribute') {
    const object = node.childForFieldName('object');
    const attribute = node.childForFieldName('attribute');
    if (object === null || attribute === null) return undefined;
    const base = resolve(object, aliases);
    return base === undefined ? undefined : `${base}.${attribute.text}`;
  }
  if (node.type === 'call') {
    // __import__('os').system(...) and importlib.import_module('os').system(...)
    const callee = node.childForFieldName('function');
    const name = callee === null ? undefined : resolve(callee, aliases);
    if (name === '__import__' || name === 'importlib.import_module') {
      const first = node.childForFieldName('arguments')?.namedChildren[0];
      if (first !== undefined && isPlainString(first)) return stringValue(first);
    }
  }
  return undefined;
}

function writtenPath(name: string | undefined, callee: Node, positional: readonly Node[], args: Node | null, aliases: ReadonlyMap<string, string>): string | undefined {
  const literal = (node: Node | undefined) => (node !== undefined && isPlainString(node) ? stringValue(node) : undefined);
  if (name === 'open' || name === 'io.open' || name === 'builtins.open' || name === 'codecs.open') {
    const mode = literal(positional[1]) ?? literal(keyword(args, 'mode'));
    if (mode !== undefined && /[wax+]/.test(mode)) return literal(positional[0]) ?? literal(keyword(args, 'file'));
    return undefined;
  }
  if (name !== undefined && pathWriters.has(name)) return literal(positional[0]);
  if (name !== undefined && destinationWriters.has(name)) return literal(positional[positional.length - 1]);
  // Path('/etc/x').write_text(...), pathlib.Path('..', 'x').mkdir()
  if (callee.type === 'attribute') {
    const method = callee.childForFieldName('attribute')?.text;
    const object = callee.childForFieldName('object');
    if (method !== undefined && pathlibWriters.has(method) && object?.type === 'call') {
      const constructor = object.childForFieldName('function');
      const constructed = constructor === null ? undefined : resolve(constructor, aliases);
      if (constructed === 'pathlib.Path' || constructed === 'Path' || constructed === 'pathlib.PurePath') {
        const parts = (object.childForFieldName('arguments')?.namedChildren ?? []).map((part) => literal(part));
        if (parts.length > 0 && parts.every((part) => part !== undefined)) return parts.join('/');
      }
    }
  }
  return undefined;
}

function keyword(args: Node | null, name: string): Node | undefined {
  for (const child of args?.namedChildren ?? []) {
    if (child.type === 'keyword_argument' && child.childForFieldName('name')?.text === name) return child.childForFieldName('value') ?? undefined;
  }
  return undefined;
}

function keywordIsTrue(args: Node | null, name: string): boolean {
  const value = keyword(args, name);
  // Anything but a literal False may be true at run time.
  return value !== undefined && value.type !== 'false' && value.text !== '0' && value.text !== 'None';
}

/** A string literal without interpolation (not an f-string, not a concatenation). */
function isPlainString(node: Node): boolean {
  return node.type === 'string' && !node.namedChildren.some((child) => child.type === 'interpolation');
}

function stringValue(node: Node): string {
  const content = node.namedChildren.filter((child) => child.type === 'string_content').map((child) => child.text);
  return content.join('');
}
