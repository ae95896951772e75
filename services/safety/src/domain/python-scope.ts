import type { Node } from 'web-tree-sitter';
import { decodeEscapes } from './syntax';
import { joinPaths } from './workspace-paths';

/** Classes whose instances are paths. */
const pathClasses = new Set(['Path', 'PurePath', 'PosixPath', 'WindowsPath', 'PurePosixPath', 'PureWindowsPath']);

/** How deep alias and expression chains are followed; deeper input is treated as unknown rather than risking the stack. */
export const maxDepth = 24;
/** Longest path worth computing; longer values are treated as unknown (real paths are far shorter). */
const maxPathLength = 4_096;

/** A path computed from literals, and whether it is a `pathlib` object (whose methods write) or a plain string. */
export interface LiteralPath {
  readonly value: string;
  readonly isPathObject: boolean;
}

/** The names a file binds to modules and functions, for the Python rules. */
export class Scope {
  /** Local name -> dotted name: `o` -> `os`, `run` -> `os.system`. */
  private readonly aliases = new Map<string, string>();
  /** Names assigned exactly once, to that value; null when assigned more than once. */
  private readonly assignments = new Map<string, Node | null>();
  /** literalPath of names already worked out; undefined while in progress, so cycles end. */
  private readonly pathsOfNames = new Map<string, LiteralPath | undefined>();
  /** Functions and classes the file defines at module level; they shadow builtins such as `compile` or `open`. */
  private readonly definitions = new Set<string>();

  /** `knownNames`: every dotted name a rule knows, so `from os import *` can bind the bare names. */
  constructor(root: Node, knownNames: readonly string[]) {
    for (const statement of root.namedChildren) {
      const definition = statement.type === 'decorated_definition' ? statement.childForFieldName('definition') : statement;
      const name = definition?.type === 'function_definition' || definition?.type === 'class_definition' ? definition.childForFieldName('name') : null;
      if (name !== null && name !== undefined) this.definitions.add(name.text);
    }
    for (const statement of root.descendantsOfType('import_statement')) {
      for (const child of statement.namedChildren) {
        if (child.type === 'dotted_name') {
          // `import os.path` binds `os`.
          const top = child.text.split('.')[0] ?? child.text;
          this.aliases.set(top, top);
        } else if (child.type === 'aliased_import') {
          this.bindAliased(child, '');
        }
      }
    }
    for (const statement of root.descendantsOfType('import_from_statement')) {
      const module = statement.childForFieldName('module_name');
      // Relative imports name the model's own modules.
      if (module?.type !== 'dotted_name') continue;
      for (const child of statement.namedChildren) {
        if (child.equals(module)) continue;
        if (child.type === 'dotted_name') this.aliases.set(child.text, `${module.text}.${child.text}`);
        else if (child.type === 'aliased_import') this.bindAliased(child, `${module.text}.`);
        else if (child.type === 'wildcard_import') {
          for (const known of knownNames) {
            const local = known.slice(module.text.length + 1);
            if (known.startsWith(`${module.text}.`) && !local.includes('.') && !this.aliases.has(local)) this.aliases.set(local, known);
          }
        }
      }
    }
    for (const assignment of root.descendantsOfType(['assignment', 'augmented_assignment'])) {
      const left = assignment.childForFieldName('left');
      const right = assignment.childForFieldName('right');
      if (left?.type !== 'identifier') continue;
      const seen = this.assignments.has(left.text);
      this.assignments.set(left.text, seen || assignment.type === 'augmented_assignment' || right === null ? null : right);
    }
  }

  private bindAliased(node: Node, prefix: string): void {
    const name = node.childForFieldName('name')?.text;
    const alias = node.childForFieldName('alias')?.text;
    if (name !== undefined && alias !== undefined) this.aliases.set(alias, `${prefix}${name}`);
  }

  /** True when the file imports `module` or something inside it (`flask`, `flask.app`). */
  importsModule(module: string): boolean {
    for (const target of this.aliases.values()) if (target === module || target.startsWith(`${module}.`)) return true;
    return false;
  }

  /** The value a name was assigned, when it was assigned exactly once. */
  assignedValue(name: string): Node | undefined {
    return this.assignments.get(name) ?? undefined;
  }

  /**
   * The dotted name an expression refers to (`o.system` -> `os.system`), or
   * undefined when it is not a name (a call result, a subscript, ...).
   */
  resolve(node: Node, depth = 0): string | undefined {
    if (depth > maxDepth) return undefined;
    switch (node.type) {
      case 'identifier': {
        const alias = this.aliases.get(node.text);
        if (alias !== undefined) return alias;
        if (this.definitions.has(node.text)) return `<local>.${node.text}`;
        const value = this.assignedValue(node.text);
        // `run = os.system`: follow names, never arbitrary expressions.
        if (value !== undefined && ['identifier', 'attribute', 'call', 'parenthesized_expression'].includes(value.type)) {
          return this.resolve(value, depth + 1) ?? node.text;
        }
        return node.text;
      }
      case 'attribute': {
        const object = node.childForFieldName('object');
        const attribute = node.childForFieldName('attribute');
        const base = object === null ? undefined : this.resolve(object, depth + 1);
        return base === undefined || attribute === null ? undefined : `${base}.${attribute.text}`;
      }
      case 'parenthesized_expression': {
        const inner = node.namedChildren.find((child) => child.type !== 'comment');
        return inner === undefined ? undefined : this.resolve(inner, depth + 1);
      }
      case 'call': {
        const callee = node.childForFieldName('function');
        const name = callee === null ? undefined : this.resolve(callee, depth + 1);
        const args = new Arguments(node.childForFieldName('arguments'));
        // __import__('os').system(...), importlib.import_module('os').system(...)
        if (name === '__import__' || name === 'importlib.import_module' || name === 'builtins.__import__') {
          const module = args.at(0);
          return module === undefined ? undefined : stringLiteral(module);
        }
        // getattr(os, 'system')(...)
        if (name === 'getattr' || name === 'builtins.getattr') {
          const [object, attribute] = [args.at(0), args.at(1)];
          const base = object === undefined ? undefined : this.resolve(object, depth + 1);
          const member = attribute === undefined ? undefined : stringLiteral(attribute);
          return base === undefined || member === undefined ? undefined : `${base}.${member}`;
        }
        return undefined;
      }
      default:
        return undefined;
    }
  }

  /**
   * The path an expression evaluates to when it is built from literals only:
   * `'/etc/x'`, `Path('/etc', 'x')`, `Path.home() / '.bashrc'`,
   * `os.path.join('..', 'x')`, a name assigned one of those once.
   */
  literalPath(node: Node, depth = 0): LiteralPath | undefined {
    if (depth > maxDepth) return undefined;
    switch (node.type) {
      case 'string':
      case 'concatenated_string': {
        const value = stringLiteral(node);
        return value === undefined ? undefined : { value, isPathObject: false };
      }
      case 'identifier': {
        // Each name is worked out once: `b = a / a; c = b / b; ...` would otherwise double the work per line.
        if (this.pathsOfNames.has(node.text)) return this.pathsOfNames.get(node.text);
        this.pathsOfNames.set(node.text, undefined);
        const value = this.assignedValue(node.text);
        const path = value === undefined ? undefined : this.literalPath(value, depth + 1);
        this.pathsOfNames.set(node.text, path);
        return path;
      }
      case 'parenthesized_expression': {
        const inner = node.namedChildren.find((child) => child.type !== 'comment');
        return inner === undefined ? undefined : this.literalPath(inner, depth + 1);
      }
      case 'binary_operator': {
        if (node.childForFieldName('operator')?.text !== '/') return undefined;
        const left = node.childForFieldName('left');
        const right = node.childForFieldName('right');
        const base = left === null ? undefined : this.literalPath(left, depth + 1);
        const tail = base?.isPathObject !== true || right === null ? undefined : this.literalPath(right, depth + 1);
        return base === undefined || tail === undefined ? undefined : capped({ value: joinPaths([base.value, tail.value], true), isPathObject: true });
      }
      case 'call':
        return this.literalPathOfCall(node, depth);
      default:
        return undefined;
    }
  }

  private literalPathOfCall(node: Node, depth: number): LiteralPath | undefined {
    const callee = node.childForFieldName('function');
    if (callee === null) return undefined;
    const args = new Arguments(node.childForFieldName('arguments'));
    const parts = (): string[] | undefined => {
      const values = args.positional.map((arg) => this.literalPath(arg, depth + 1)?.value);
      return args.complete && values.every((value) => value !== undefined) ? (values as string[]) : undefined;
    };
    const name = this.resolve(callee, depth + 1);
    const last = name?.split('.').pop();
    const isPathClass = name !== undefined && last !== undefined && pathClasses.has(last) && (name === last || name === `pathlib.${last}`);
    if (isPathClass) {
      const values = parts();
      return values === undefined ? undefined : capped({ value: values.length === 0 ? '.' : joinPaths(values, true), isPathObject: true });
    }
    if (name !== undefined && /^(pathlib\.)?Path\.home$/.test(name)) return { value: '~', isPathObject: true };
    // The scratch directory: what the sandbox gives every process (TMPDIR is not set there).
    if (name === 'tempfile.gettempdir') return { value: '/tmp', isPathObject: false };
    if (name === 'os.path.join' || name === 'posixpath.join') {
      const values = parts();
      return values === undefined ? undefined : capped({ value: joinPaths(values, true), isPathObject: false });
    }
    if (name === 'os.path.expanduser') {
      const first = args.at(0);
      return first === undefined ? undefined : this.literalPath(first, depth + 1);
    }
    // Path('x').joinpath('y'), Path('~').expanduser(), Path('a').resolve()
    if (callee.type === 'attribute') {
      const method = callee.childForFieldName('attribute')?.text;
      const object = callee.childForFieldName('object');
      const base = object === null ? undefined : this.literalPath(object, depth + 1);
      if (base?.isPathObject !== true) return undefined;
      if (method === 'expanduser' || method === 'resolve' || method === 'absolute') return base;
      if (method === 'joinpath') {
        const values = parts();
        return values === undefined ? undefined : capped({ value: joinPaths([base.value, ...values], true), isPathObject: true });
      }
    }
    return undefined;
  }
}

function capped(path: LiteralPath): LiteralPath | undefined {
  return path.value.length > maxPathLength ? undefined : path;
}

/** The arguments of a call, split into positional and keyword. */
export class Arguments {
  readonly positional: Node[] = [];
  /** False when a `*args` splat hides which positional argument is which. */
  readonly complete: boolean = true;
  private readonly keywords = new Map<string, Node>();
  private readonly splats: Node[] = [];

  constructor(list: Node | null) {
    if (list === null) return;
    // f(x for x in y) has a generator expression in place of an argument list.
    if (list.type !== 'argument_list') {
      this.positional.push(list);
      return;
    }
    for (const child of list.namedChildren) {
      if (child.type === 'comment') continue;
      if (child.type === 'keyword_argument') {
        const name = child.childForFieldName('name')?.text;
        const value = child.childForFieldName('value');
        if (name !== undefined && value !== null) this.keywords.set(name, value);
      } else if (child.type === 'dictionary_splat') {
        this.splats.push(child);
      } else if (child.type === 'list_splat') {
        this.complete = false;
      } else if (this.complete) {
        this.positional.push(child);
      }
    }
  }

  /** True when a `**kwargs` splat may set any keyword. */
  get hasSplat(): boolean {
    return this.splats.length > 0;
  }

  /** The values of the keyword arguments, in no particular order. */
  get keywordValues(): Node[] {
    return [...this.keywords.values()];
  }

  at(index: number): Node | undefined {
    return this.positional[index];
  }

  keyword(name: string): Node | undefined {
    return this.keywords.get(name);
  }

  /** True when `shell=` (directly, or in a literal `**{'shell': ...}` / `**dict(shell=...)`) may be true. */
  shellRequested(scope: Scope): boolean {
    const direct = this.keyword('shell');
    if (direct !== undefined) return mayBeTrue(direct);
    for (const splat of this.splats) {
      let value = splat.namedChildren.find((child) => child.type !== 'comment');
      if (value?.type === 'identifier') value = scope.assignedValue(value.text);
      if (value?.type === 'dictionary') {
        for (const pair of value.namedChildren) {
          const key = pair.childForFieldName('key');
          const shell = pair.childForFieldName('value');
          if (pair.type === 'pair' && key !== null && shell !== null && stringLiteral(key) === 'shell' && mayBeTrue(shell)) return true;
        }
      }
      if (value?.type === 'call' && scope.resolve(value.childForFieldName('function') ?? value) === 'dict') {
        const shell = new Arguments(value.childForFieldName('arguments')).keyword('shell');
        if (shell !== undefined && mayBeTrue(shell)) return true;
      }
    }
    return false;
  }
}

/** Anything but a literal False, 0, None or empty string may be true at run time. */
export function mayBeTrue(node: Node): boolean {
  if (node.type === 'false' || node.type === 'none') return false;
  if (node.type === 'integer' && Number(node.text) === 0) return false;
  return stringLiteral(node) !== '';
}

/**
 * The value of a string literal without interpolation: a plain, raw or bytes
 * string, an f-string without `{}` fields, or implicitly concatenated
 * literals (`'a' 'b'`). Undefined for anything else (f-strings with fields,
 * `'a' + b`, names).
 */
export function stringLiteral(node: Node): string | undefined {
  if (node.type === 'concatenated_string') {
    const parts = node.namedChildren.filter((child) => child.type !== 'comment').map(stringLiteral);
    return parts.every((part) => part !== undefined) ? parts.join('') : undefined;
  }
  if (node.type !== 'string') return undefined;
  let raw = false;
  let value = '';
  for (const child of node.namedChildren) {
    if (child.type === 'interpolation') return undefined;
    if (child.type === 'string_start') raw = /r/i.test(child.text);
    if (child.type === 'string_content') value += child.text;
  }
  return raw ? value : decodeEscapes(value);
}

