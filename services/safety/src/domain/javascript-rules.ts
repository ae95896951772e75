import type { Node } from 'web-tree-sitter';
import { RuleId, type FileFindings } from './findings';
import { decodeEscapes } from './syntax';
import { escapesWorkspace, joinPaths } from './workspace-paths';

/** Module names without their `node:` prefix. */
const childProcessModule = 'child_process';
const fsModules = new Set(['fs', 'fs/promises', 'fs-extra', 'graceful-fs']);
const withSync = (names: readonly string[]) => names.flatMap((name) => [name, `${name}Sync`]);
/** fs (and fs-extra) functions whose first argument is a path they create, change or delete. */
const fsPathWriters = new Set(
  withSync([
    'writeFile',
    'appendFile',
    'mkdir',
    'mkdtemp',
    'rm',
    'rmdir',
    'unlink',
    'truncate',
    'chmod',
    'lchmod',
    'chown',
    'lchown',
    'utimes',
    'lutimes',
    'outputFile',
    'outputJson',
    'outputJSON',
    'writeJson',
    'writeJSON',
    'remove',
    'emptyDir',
    'emptydir',
    'ensureDir',
    'ensureFile',
    'mkdirp',
    'mkdirs',
  ]).concat(['createWriteStream']),
);
/** fs functions that remove their source and write their destination: both paths count. */
const fsMovers = new Set(withSync(['rename', 'move']));
/** fs functions whose second argument is the path they write. */
const fsCopiers = new Set(withSync(['copyFile', 'cp', 'copy', 'symlink', 'link', 'ensureSymlink', 'ensureLink']));
/** fs functions that write only when their flags say so. */
const fsOpeners = new Set(withSync(['open']));
const vmRunners = new Set(['runInNewContext', 'runInThisContext', 'runInContext', 'compileFunction']);
const vmConstructors = new Set(['Script', 'SourceTextModule', 'SyntheticModule']);
/** Names of the global object, through which `eval` and `Function` are also reachable. */
const globalObjects = new Set(['globalThis', 'window', 'global', 'self']);
/** Internal bindings that spawn processes without child_process. */
const spawnBindings = new Set(['spawn_sync', 'process_wrap']);

const maxDepth = 24;
/** Longest path worth computing; longer values are treated as unknown (real paths are far shorter). */
const maxPathLength = 4_096;

/** What a local name or expression refers to: a module (`fs`), or one of its exports (`fs` + `writeFileSync`). */
interface ModuleRef {
  readonly module: string;
  readonly member?: string;
}

/**
 * Runs the JavaScript/TypeScript rules over one parsed file: child_process in
 * any import form, eval of non-literal strings, the Function constructor, the
 * vm module, and literal fs writes outside the workspace. Names are resolved
 * through imports, `require`, dynamic `import()`, destructuring and simple
 * re-bindings (`const { promises: fsp } = require('fs')`). Type-only imports
 * are ignored: they vanish at compile time. Only syntax nodes are inspected,
 * so the same words in comments and strings never match.
 */
export function checkJavaScript(root: Node, out: FileFindings): void {
  const scope = new Scope();
  // Bindings first, so a function that uses `fs` above its `require('fs')` still resolves.
  for (const node of root.descendantsOfType(['import_statement', 'export_statement', 'variable_declarator', 'assignment_expression'])) {
    if (node.type === 'import_statement') scope.bindImport(node, out);
    else if (node.type === 'variable_declarator') scope.bindDeclaration(node.childForFieldName('name'), node.childForFieldName('value'));
    else if (node.type === 'assignment_expression') scope.bindDeclaration(node.childForFieldName('left'), node.childForFieldName('right'));
    else {
      const module = stringValue(node.childForFieldName('source'));
      if (module !== undefined && normalize(module) === childProcessModule && !hasKeyword(node, 'type')) {
        out.add(RuleId.JS_CHILD_PROCESS, node.startPosition, `re-exports ${module}, which runs programs on the host`);
      }
    }
  }
  for (const call of root.descendantsOfType(['call_expression', 'new_expression'])) checkCall(call, scope, out);
}

function checkCall(call: Node, scope: Scope, findings: FileFindings): void {
  const isNew = call.type === 'new_expression';
  const callee = call.childForFieldName(isNew ? 'constructor' : 'function');
  if (callee === null) return;
  const args = argumentsOf(call);
  // Checked only when something matched: walking up for every call would cost depth x calls.
  const out = { add: (...finding: Parameters<FileFindings['add']>) => (inTypePosition(call) ? undefined : findings.add(...finding)) };

  const loaded = loadedModule(call);
  if (loaded !== undefined && normalize(loaded) === childProcessModule) {
    out.add(RuleId.JS_CHILD_PROCESS, call.startPosition, `loads ${loaded}, which runs programs on the host`);
    return;
  }
  const bindingName = stringValue(args[0]);
  if (!isNew && bindingName !== undefined && spawnBindings.has(bindingName) && isMember(callee, ['process'], 'binding')) {
    out.add(RuleId.JS_CHILD_PROCESS, call.startPosition, `process.binding(${JSON.stringify(bindingName)}) reaches the internals that spawn processes`);
    return;
  }
  if (!isNew && isGlobal(callee, 'eval')) {
    const code = args[0];
    if (code !== undefined && stringValue(code) === undefined) {
      out.add(RuleId.JS_DYNAMIC_EVAL, call.startPosition, `eval() runs code built at run time (${describeArgument(code)}), which lets data become code`);
    }
    return;
  }
  if (isGlobal(callee, 'Function')) {
    out.add(RuleId.JS_FUNCTION_CONSTRUCTOR, call.startPosition, `${isNew ? 'new ' : ''}Function(...) compiles a function from strings at run time, which lets data become code`);
    return;
  }

  const target = scope.refOf(callee);
  if (target?.member === undefined) return;
  // `fs.writeFileSync()`, plus how the code spelled it when an alias was resolved.
  const qualified = `${target.module}.${target.member}`;
  const shown = () => `${qualified}()${callee.text === qualified ? '' : ` (called as ${abbreviate(callee.text)})`}`;
  if (target.module === 'vm' && (isNew ? vmConstructors : vmRunners).has(target.member)) {
    out.add(RuleId.JS_VM, call.startPosition, `${isNew ? 'new ' : ''}${shown()} compiles and runs code from strings`);
    return;
  }
  if (!fsModules.has(target.module) || isNew) return;
  for (const path of writtenPaths(target.member, args, scope)) {
    if (escapesWorkspace(path)) out.add(RuleId.WRITE_OUTSIDE_WORKSPACE, call.startPosition, `${shown()} writes to ${JSON.stringify(path)}, outside the workspace`);
  }
}

function writtenPaths(member: string, args: readonly Node[], scope: Scope): string[] {
  const paths = (...nodes: (Node | undefined)[]) => nodes.flatMap((node) => (node === undefined ? [] : [scope.literalPath(node)].filter((path) => path !== undefined)));
  if (fsPathWriters.has(member)) return paths(args[0]);
  if (fsMovers.has(member)) return paths(args[0], args[1]);
  if (fsCopiers.has(member)) return paths(args[1]);
  if (fsOpeners.has(member)) {
    const flags = args[1];
    const flagText = stringValue(flags);
    const writes = flagText !== undefined ? /[wa+]/.test(flagText) : flags !== undefined && /\bO_(WRONLY|RDWR|CREAT|APPEND|TRUNC)\b/.test(flags.text);
    return writes ? paths(args[0]) : [];
  }
  return [];
}

/** The names a file binds to modules and their exports. */
class Scope {
  private readonly bindings = new Map<string, ModuleRef>();
  /** Names bound exactly once, to that value; null when bound more than once. */
  private readonly constants = new Map<string, Node | null>();
  /** literalPath of names already worked out; undefined while in progress, so cycles end. */
  private readonly pathsOfNames = new Map<string, string | undefined>();

  bindImport(statement: Node, out: FileFindings): void {
    // `import type ... from 'child_process'` vanishes at compile time.
    if (hasKeyword(statement, 'type')) return;
    const requireClause = statement.namedChildren.find((child) => child.type === 'import_require_clause');
    const source = statement.childForFieldName('source') ?? requireClause?.childForFieldName('source') ?? null;
    const spelled = stringValue(source);
    if (spelled === undefined) return;
    const module = normalize(spelled);
    const specifiers = statement.descendantsOfType('import_specifier');
    const typeOnly = specifiers.length > 0 && specifiers.every((specifier) => hasKeyword(specifier, 'type')) && !hasDefaultOrNamespace(statement);
    if (module === childProcessModule && !typeOnly) {
      out.add(RuleId.JS_CHILD_PROCESS, statement.startPosition, `imports ${spelled}, which runs programs on the host`);
    }
    // import cp = require('child_process')
    const requireName = requireClause?.namedChildren.find((child) => child.type === 'identifier');
    if (requireName !== undefined) this.bind(requireName.text, { module });
    const clause = statement.namedChildren.find((child) => child.type === 'import_clause');
    for (const child of clause?.namedChildren ?? []) {
      // import fs from 'fs'
      if (child.type === 'identifier') this.bind(child.text, { module });
      // import * as fs from 'fs'
      if (child.type === 'namespace_import') {
        const name = child.namedChildren.find((part) => part.type === 'identifier');
        if (name !== undefined) this.bind(name.text, { module });
      }
    }
    // import { writeFileSync as write, promises } from 'fs'
    for (const specifier of specifiers) {
      if (hasKeyword(specifier, 'type')) continue;
      const name = specifier.childForFieldName('name');
      const alias = specifier.childForFieldName('alias') ?? name;
      if (name !== null && alias !== null) this.bind(alias.text, memberOf({ module }, stringValue(name) ?? name.text));
    }
  }

  /** `const x = require('fs')`, `const { writeFileSync: w } = require('fs')`, `const p = '/etc/x'`, `x = fs.promises`. */
  bindDeclaration(target: Node | null, value: Node | null): void {
    if (target === null) return;
    if (target.type === 'identifier') {
      this.constants.set(target.text, this.constants.has(target.text) || value === null ? null : value);
    }
    const ref = value === null ? undefined : this.refOf(value);
    if (ref === undefined) return;
    if (target.type === 'identifier') {
      this.bind(target.text, ref);
      return;
    }
    if (target.type !== 'object_pattern' || ref.member !== undefined) return;
    for (const property of target.namedChildren) {
      if (property.type === 'shorthand_property_identifier_pattern') this.bind(property.text, memberOf(ref, property.text));
      if (property.type === 'pair_pattern') {
        const key = property.childForFieldName('key');
        const local = property.childForFieldName('value');
        const keyName = key === null ? undefined : (stringValue(key) ?? (key.type === 'property_identifier' ? key.text : undefined));
        if (keyName !== undefined && local?.type === 'identifier') this.bind(local.text, memberOf(ref, keyName));
      }
    }
  }

  private bind(name: string, ref: ModuleRef): void {
    this.bindings.set(name, ref);
  }

  /** The module or export an expression refers to: `fs`, `fs.promises.writeFile`, `require('fs').rmSync`, a bound name. */
  refOf(node: Node, depth = 0): ModuleRef | undefined {
    if (depth > maxDepth) return undefined;
    switch (node.type) {
      case 'identifier':
        return this.bindings.get(node.text);
      case 'call_expression': {
        const loaded = loadedModule(node);
        return loaded === undefined ? undefined : { module: normalize(loaded) };
      }
      case 'member_expression':
      case 'subscript_expression': {
        const object = node.childForFieldName('object');
        const key = node.type === 'member_expression' ? node.childForFieldName('property')?.text : stringValue(node.childForFieldName('index'));
        const base = object === null ? undefined : this.refOf(object, depth + 1);
        return base === undefined || key === undefined || base.member !== undefined ? undefined : memberOf(base, key);
      }
      case 'await_expression':
      case 'parenthesized_expression':
      case 'as_expression':
      case 'satisfies_expression':
      case 'non_null_expression': {
        const inner = node.namedChildren.find((child) => child.type !== 'comment');
        return inner === undefined ? undefined : this.refOf(inner, depth + 1);
      }
      default:
        return undefined;
    }
  }

  /**
   * The path an expression evaluates to when it is built from literals only:
   * `'/etc/x'`, `` `../x` ``, `'/etc/' + 'x'`, `path.join('..', 'x')`,
   * `path.join(os.homedir(), '.ssh')`, a name bound once to one of those.
   */
  literalPath(node: Node, depth = 0): string | undefined {
    if (depth > maxDepth) return undefined;
    const literal = stringValue(node);
    if (literal !== undefined) return literal;
    switch (node.type) {
      case 'identifier': {
        // Each name is worked out once: `const b = a + a, c = b + b, ...` would otherwise double the work per name.
        if (this.pathsOfNames.has(node.text)) return this.pathsOfNames.get(node.text);
        this.pathsOfNames.set(node.text, undefined);
        const value = this.constants.get(node.text);
        const path = value === null || value === undefined ? undefined : this.literalPath(value, depth + 1);
        this.pathsOfNames.set(node.text, path);
        return path;
      }
      case 'binary_expression': {
        const left = node.childForFieldName('left');
        const right = node.childForFieldName('right');
        if (node.childForFieldName('operator')?.text !== '+' || left === null || right === null) return undefined;
        const head = this.literalPath(left, depth + 1);
        const tail = head === undefined ? undefined : this.literalPath(right, depth + 1);
        return head === undefined || tail === undefined || head.length + tail.length > maxPathLength ? undefined : head + tail;
      }
      case 'parenthesized_expression':
      case 'as_expression':
      case 'satisfies_expression':
      case 'non_null_expression': {
        const inner = node.namedChildren.find((child) => child.type !== 'comment');
        return inner === undefined ? undefined : this.literalPath(inner, depth + 1);
      }
      case 'call_expression': {
        const callee = node.childForFieldName('function');
        const ref = callee === null ? undefined : this.refOf(callee);
        if (ref?.module === 'os' && ref.member === 'homedir') return '~';
        if ((ref?.module === 'path' || ref?.module === 'path/posix') && (ref.member === 'join' || ref.member === 'resolve')) {
          const parts = argumentsOf(node).map((arg) => (arg.type === 'spread_element' ? undefined : this.literalPath(arg, depth + 1)));
          if (parts.length === 0 || parts.some((part) => part === undefined)) return undefined;
          const joined = joinPaths(parts as string[], ref.member === 'resolve');
          return joined.length > maxPathLength ? undefined : joined;
        }
        return undefined;
      }
      default:
        return undefined;
    }
  }
}

/** TypeScript type positions, where `typeof import('child_process')` describes a type and runs nothing. */
const typeContexts = new Set(['type_query', 'type_annotation', 'type_alias_declaration', 'type_arguments', 'type_parameters', 'interface_declaration', 'ambient_declaration', 'lookup_type', 'index_type_query']);

function inTypePosition(node: Node): boolean {
  for (let parent = node.parent; parent !== null; parent = parent.parent) if (typeContexts.has(parent.type)) return true;
  return false;
}

/** `fs` + `promises` is the `fs/promises` module; anything else is an export of the module. */
function memberOf(ref: ModuleRef, member: string): ModuleRef {
  if (member === 'default') return ref;
  if (member === 'promises' && (ref.module === 'fs' || ref.module === 'graceful-fs')) return { module: 'fs/promises' };
  if (member === 'posix' && ref.module === 'path') return { module: 'path/posix' };
  return { module: ref.module, member };
}

function normalize(module: string): string {
  return module.startsWith('node:') ? module.slice('node:'.length) : module;
}

/** The literal module a call loads: `require('m')`, `module.require('m')`, `import('m')`, `createRequire(...)('m')`. */
function loadedModule(call: Node): string | undefined {
  if (call.type !== 'call_expression') return undefined;
  const callee = call.childForFieldName('function');
  if (callee === null) return undefined;
  const loads =
    callee.type === 'import' ||
    (callee.type === 'identifier' && callee.text === 'require') ||
    (callee.type === 'member_expression' && callee.childForFieldName('property')?.text === 'require') ||
    (callee.type === 'call_expression' && /(^|\.)createRequire$/.test(callee.childForFieldName('function')?.text ?? ''));
  return loads ? stringValue(argumentsOf(call)[0]) : undefined;
}

/** `name`, `globalThis.name` (or window/global/self), `(0, name)`: the global `name` however it is reached. */
function isGlobal(callee: Node, name: string): boolean {
  if (callee.type === 'identifier') return callee.text === name;
  if (callee.type === 'member_expression') return isMember(callee, [...globalObjects], name);
  if (callee.type === 'subscript_expression') {
    const object = callee.childForFieldName('object');
    return object !== null && globalObjects.has(object.text) && stringValue(callee.childForFieldName('index')) === name;
  }
  if (callee.type === 'parenthesized_expression') {
    const inner = callee.namedChildren.find((child) => child.type !== 'comment');
    if (inner?.type === 'sequence_expression') {
      const last = inner.namedChildren.filter((child) => child.type !== 'comment').pop();
      return last !== undefined && isGlobal(last, name);
    }
    return inner !== undefined && isGlobal(inner, name);
  }
  return false;
}

function isMember(node: Node, objects: readonly string[], property: string): boolean {
  if (node.type !== 'member_expression') return false;
  const object = node.childForFieldName('object');
  return object?.type === 'identifier' && objects.includes(object.text) && node.childForFieldName('property')?.text === property;
}

/** True when `node` has the anonymous keyword token `word` as a direct child (`import type`, `export type`, `{ type X }`). */
function hasKeyword(node: Node, word: string): boolean {
  for (const child of node.children) if (child !== null && !child.isNamed && child.type === word) return true;
  return false;
}

function hasDefaultOrNamespace(statement: Node): boolean {
  const clause = statement.namedChildren.find((child) => child.type === 'import_clause');
  return clause?.namedChildren.some((child) => child.type === 'identifier' || child.type === 'namespace_import') ?? false;
}

function argumentsOf(call: Node): Node[] {
  const list = call.childForFieldName('arguments');
  // Tagged templates (fn`x`) pass a template, not an argument list.
  if (list === null || list.type !== 'arguments') return [];
  return list.namedChildren.filter((child) => child.type !== 'comment');
}

/** The value of a string literal or of a template string without `${}` substitutions; undefined for anything else. */
function stringValue(node: Node | null | undefined): string | undefined {
  if (node === null || node === undefined) return undefined;
  if (node.type !== 'string' && node.type !== 'template_string') return undefined;
  let value = '';
  for (const child of node.namedChildren) {
    if (child.type === 'template_substitution') return undefined;
    if (child.type === 'string_fragment') value += child.text;
    if (child.type === 'escape_sequence') value += decodeEscapes(child.text);
  }
  return value;
}

function describeArgument(node: Node): string {
  if (node.type === 'template_string') return 'a template with substitutions';
  if (node.type === 'binary_expression') return 'a concatenation';
  if (node.type === 'identifier') return `the variable ${abbreviate(node.text)}`;
  return `a ${node.type.replace(/_/g, ' ')}`;
}

function abbreviate(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length > 60 ? `${oneLine.slice(0, 57)}...` : oneLine;
}
