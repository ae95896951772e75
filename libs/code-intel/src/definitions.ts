import { createHash } from 'node:crypto';
import type { Node, Tree } from 'web-tree-sitter';

/** The grammars definitions are extracted with. */
export const SyntaxGrammar = { PYTHON: 'python', JAVASCRIPT: 'javascript', TYPESCRIPT: 'typescript', TSX: 'tsx' } as const;
export type SyntaxGrammar = (typeof SyntaxGrammar)[keyof typeof SyntaxGrammar];

/**
 * The port to tree-sitter: one parser per grammar, loaded once per process
 * (see `loadSyntaxParsers`). Parsing is synchronous.
 */
export interface SyntaxParsers {
  /** The syntax tree of `source`; the caller deletes it. Null when the parser gave up. */
  parse(grammar: SyntaxGrammar, source: string): Tree | null;
}

/** What a top-level definition is. */
export const DefinitionKind = {
  CLASS: 'class',
  FUNCTION: 'function',
  CONSTANT: 'constant',
  INTERFACE: 'interface',
  TYPE: 'type',
  ENUM: 'enum',
  NAMESPACE: 'namespace',
  /** Names a module exports without defining them here (`export { a } from`, `module.exports = {...}`). */
  EXPORT: 'export',
} as const;
export type DefinitionKind = (typeof DefinitionKind)[keyof typeof DefinitionKind];

/** One top-level definition of a file. */
export interface Definition {
  readonly kind: DefinitionKind;
  /** The defined name; `default` for an anonymous default export, empty for an export list. */
  readonly name: string;
  /** 1-based line where the definition starts: its first decorator, else the `def`/`class`/`function`/... keyword. */
  readonly line: number;
  /** The header as written, whitespace collapsed, at most 160 characters: `def add(a, b) -> int`. */
  readonly signature: string;
  /** Method names of a class, member names of an interface or enum, names of an export list. */
  readonly members: readonly string[];
}

/** The outline of one file: its definitions, or why it has none. */
export interface FileOutline {
  readonly definitions: readonly Definition[];
  /** Set when the file was not parsed, e.g. `312 KB, not outlined (limit 256 KB)`. */
  readonly note?: string;
}

/** Outlines files; the repository map calls it only for the files it shows. */
export interface DefinitionExtractor {
  outline(path: string, content: string): FileOutline;
}

/** Limits of `createDefinitionExtractor`. */
export interface DefinitionExtractorOptions {
  /** Files longer than this many characters are listed without parsing. Default 256 KiB. */
  readonly maxFileCharacters?: number;
  /** Outlines kept, keyed by path and content hash, so a map rebuilt each iteration reparses only changed files. Default 4096. */
  readonly cacheEntries?: number;
}

const defaultMaxFileCharacters = 256 * 1024;
const defaultCacheEntries = 4096;
const maxSignatureLength = 160;
// A constant's value says less than a function's parameters; keep it short.
const maxConstantLength = 80;
const maxMembers = 16;

const grammarByExtension: ReadonlyMap<string, SyntaxGrammar> = new Map(
  Object.entries({
    py: SyntaxGrammar.PYTHON,
    pyi: SyntaxGrammar.PYTHON,
    js: SyntaxGrammar.JAVASCRIPT,
    mjs: SyntaxGrammar.JAVASCRIPT,
    cjs: SyntaxGrammar.JAVASCRIPT,
    jsx: SyntaxGrammar.JAVASCRIPT,
    ts: SyntaxGrammar.TYPESCRIPT,
    mts: SyntaxGrammar.TYPESCRIPT,
    cts: SyntaxGrammar.TYPESCRIPT,
    tsx: SyntaxGrammar.TSX,
  }),
);

/** The grammar for a file from its extension (case-insensitive); undefined for other languages. */
export function grammarOfPath(path: string): SyntaxGrammar | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot > 0 ? grammarByExtension.get(name.slice(dot + 1).toLowerCase()) : undefined;
}

/**
 * The top-level definitions of a Python, JavaScript, TypeScript or TSX file:
 * classes with their method names, functions with their signature line,
 * module-level constants (Python: UPPER_CASE names; JS/TS: exported or
 * UPPER_CASE `const`s, and `const`s holding a function), TypeScript
 * interfaces, type aliases, enums and namespaces, and re-exported names.
 * Syntax errors do not stop extraction: what parsed is outlined. Files in
 * other languages, files over `maxFileCharacters` (default 256 KiB) and files
 * the parser gives up on get no definitions (the latter two with a `note`).
 */
export function outlineFile(parsers: SyntaxParsers, path: string, content: string, maxFileCharacters = defaultMaxFileCharacters): FileOutline {
  const grammar = grammarOfPath(path);
  if (grammar === undefined) return { definitions: [] };
  if (content.length > maxFileCharacters) {
    return { definitions: [], note: `${Math.ceil(content.length / 1024)} KB, not outlined (limit ${Math.floor(maxFileCharacters / 1024)} KB)` };
  }
  const tree = parsers.parse(grammar, content);
  if (tree === null) return { definitions: [], note: 'not outlined (the parser gave up)' };
  try {
    const definitions: Definition[] = [];
    const collect = grammar === SyntaxGrammar.PYTHON ? collectPython : collectScript;
    for (const child of tree.rootNode.namedChildren) collect(child, definitions);
    return { definitions };
  } finally {
    tree.delete();
  }
}

/**
 * A `DefinitionExtractor` over `parsers` that remembers the last
 * `cacheEntries` outlines (default 4096) by path and content hash, evicting
 * the least recently used.
 */
export function createDefinitionExtractor(parsers: SyntaxParsers, options: DefinitionExtractorOptions = {}): DefinitionExtractor {
  const maxFileCharacters = options.maxFileCharacters ?? defaultMaxFileCharacters;
  const cacheEntries = options.cacheEntries ?? defaultCacheEntries;
  const cache = new Map<string, FileOutline>();
  return {
    outline(path, content) {
      if (grammarOfPath(path) === undefined) return { definitions: [] };
      const key = `${path}\0${createHash('sha1').update(content).digest('base64')}`;
      const cached = cache.get(key);
      if (cached !== undefined) {
        // Re-inserting moves the entry to the end of the Map's order: most recently used.
        cache.delete(key);
        cache.set(key, cached);
        return cached;
      }
      const outline = outlineFile(parsers, path, content, maxFileCharacters);
      if (cacheEntries > 0) {
        cache.set(key, outline);
        if (cache.size > cacheEntries) cache.delete(cache.keys().next().value as string);
      }
      return outline;
    },
  };
}

function collectPython(node: Node, into: Definition[]): void {
  switch (node.type) {
    case 'decorated_definition': {
      const definition = node.childForFieldName('definition');
      if (definition === null) return;
      const decorators = node.namedChildren.filter((child) => child.type === 'decorator').map((child) => child.text);
      const before = into.length;
      collectPython(definition, into);
      const added = into[before];
      // The entry starts at the decorators: a reader sent to the `def` line would miss them (and a map that points 50 lines below them is wrong).
      if (added !== undefined && decorators.length > 0) into[before] = { ...added, line: node.startPosition.row + 1, signature: clip(`${decorators.join(' ')} ${added.signature}`) };
      return;
    }
    case 'function_definition':
      into.push(definitionOf(node, DefinitionKind.FUNCTION, nameOf(node), header(node, ':'), []));
      return;
    case 'class_definition': {
      const body = node.childForFieldName('body');
      const methods = (body?.namedChildren ?? []).map((member) => (member.type === 'decorated_definition' ? member.childForFieldName('definition') : member)).filter((member): member is Node => member?.type === 'function_definition');
      into.push(definitionOf(node, DefinitionKind.CLASS, nameOf(node), header(node, ':'), methods.map(nameOf)));
      return;
    }
    case 'expression_statement': {
      const assignment = node.namedChildren[0];
      const target = assignment?.type === 'assignment' ? assignment.childForFieldName('left') : null;
      if (assignment === undefined || target?.type !== 'identifier' || !/^[A-Z][A-Z0-9_]*$/.test(target.text)) return;
      into.push(definitionOf(assignment, DefinitionKind.CONSTANT, target.text, clip(firstLine(assignment.text), maxConstantLength), []));
      return;
    }
    default:
      return;
  }
}

const functionValues = new Set(['arrow_function', 'function_expression', 'function', 'generator_function']);

function collectScript(node: Node, into: Definition[], exported = false): void {
  switch (node.type) {
    case 'export_statement': {
      const declaration = node.childForFieldName('declaration');
      if (declaration !== null) {
        const before = into.length;
        collectScript(declaration, into, true);
        // `export default class C` and `export function f`: the export keyword is part of the header.
        for (let index = before; index < into.length; index += 1) {
          const added = into[index];
          if (added !== undefined && !added.signature.startsWith('export')) into[index] = { ...added, signature: clip(`${node.text.slice(0, declaration.startIndex - node.startIndex).trim()} ${added.signature}`) };
        }
        return;
      }
      const value = node.childForFieldName('value');
      if (value !== null) {
        const named = value.childForFieldName('name');
        const signature = functionValues.has(value.type) || value.type.includes('class') ? header(node, '', value) : firstLine(node.text);
        into.push(definitionOf(node, value.type.includes('class') ? DefinitionKind.CLASS : functionValues.has(value.type) ? DefinitionKind.FUNCTION : DefinitionKind.EXPORT, named?.text ?? 'default', signature, []));
        return;
      }
      const clause = node.namedChildren.find((child) => child.type === 'export_clause');
      const specifiers = clause?.namedChildren ?? [];
      const names = specifiers.map((specifier) => (specifier.childForFieldName('alias') ?? specifier.childForFieldName('name'))?.text ?? specifier.text);
      const source = node.childForFieldName('source');
      const exported = clause === undefined ? firstLine(node.text).replace(/;$/, '') : `export { ${specifiers.map((specifier) => specifier.text).join(', ')} }${source === null ? '' : ` from ${source.text}`}`;
      into.push(definitionOf(node, DefinitionKind.EXPORT, '', clip(exported), names));
      return;
    }
    case 'function_declaration':
    case 'generator_function_declaration':
    case 'function_signature':
      into.push(definitionOf(node, DefinitionKind.FUNCTION, nameOf(node), header(node, ';'), []));
      return;
    case 'class_declaration':
    case 'abstract_class_declaration': {
      const members = (node.childForFieldName('body')?.namedChildren ?? []).filter((member) => /method|signature/.test(member.type)).map(nameOf).filter((name) => name !== '');
      into.push(definitionOf(node, DefinitionKind.CLASS, nameOf(node), header(node), members));
      return;
    }
    case 'interface_declaration': {
      const members = (node.childForFieldName('body')?.namedChildren ?? []).map(nameOf).filter((name) => name !== '');
      into.push(definitionOf(node, DefinitionKind.INTERFACE, nameOf(node), header(node), members));
      return;
    }
    case 'type_alias_declaration':
      into.push(definitionOf(node, DefinitionKind.TYPE, nameOf(node), firstLine(node.text).replace(/;$/, ''), []));
      return;
    case 'enum_declaration': {
      const members = (node.childForFieldName('body')?.namedChildren ?? []).map((member) => (member.type === 'enum_assignment' ? nameOf(member) : member.text));
      into.push(definitionOf(node, DefinitionKind.ENUM, nameOf(node), header(node), members));
      return;
    }
    case 'internal_module':
    case 'module':
      into.push(definitionOf(node, DefinitionKind.NAMESPACE, nameOf(node), header(node), []));
      return;
    case 'ambient_declaration':
    case 'expression_statement': {
      // `declare function f(): T;`, `namespace N {}` (an expression statement
      // in this grammar) and `module.exports = ...` / `exports.name = ...`.
      const inner = node.namedChildren[0];
      if (inner === undefined) return;
      if (inner.type === 'assignment_expression') collectCommonJsExport(inner, into);
      else collectScript(inner, into, exported);
      return;
    }
    case 'lexical_declaration':
    case 'variable_declaration':
      for (const declarator of node.namedChildren.filter((child) => child.type === 'variable_declarator')) {
        const name = declarator.childForFieldName('name');
        if (name?.type !== 'identifier') continue;
        const value = declarator.childForFieldName('value');
        if (value !== null && functionValues.has(value.type)) {
          const keyword = node.text.slice(0, declarator.startIndex - node.startIndex).trim();
          into.push(definitionOf(declarator, DefinitionKind.FUNCTION, name.text, clip(`${keyword} ${header(declarator, '', value)}`), []));
        } else if (exported || /^[A-Z][A-Z0-9_]*$/.test(name.text)) {
          const keyword = node.text.slice(0, declarator.startIndex - node.startIndex).trim();
          into.push(definitionOf(declarator, DefinitionKind.CONSTANT, name.text, clip(`${keyword} ${firstLine(declarator.text)}`, maxConstantLength), []));
        }
      }
      return;
    default:
      return;
  }
}

function collectCommonJsExport(assignment: Node, into: Definition[]): void {
  const target = assignment.childForFieldName('left')?.text ?? '';
  const value = assignment.childForFieldName('right');
  if (target === 'module.exports' && value?.type === 'object') {
    const names = value.namedChildren.map((property) => (property.type === 'shorthand_property_identifier' ? property.text : (property.childForFieldName('key')?.text ?? ''))).filter((name) => name !== '');
    into.push(definitionOf(assignment, DefinitionKind.EXPORT, '', clip(`module.exports = { ${names.join(', ')} }`), names));
  } else if (target === 'module.exports' || target.startsWith('exports.') || target.startsWith('module.exports.')) {
    const name = target === 'module.exports' ? 'default' : target.slice(target.lastIndexOf('.') + 1);
    const isFunction = value !== null && functionValues.has(value.type);
    into.push(definitionOf(assignment, isFunction ? DefinitionKind.FUNCTION : DefinitionKind.EXPORT, name, isFunction ? header(assignment, '', value) : firstLine(assignment.text), []));
  }
}

function definitionOf(node: Node, kind: DefinitionKind, name: string, signature: string, members: readonly string[]): Definition {
  const shown = members.length > maxMembers ? [...members.slice(0, maxMembers), `… ${members.length - maxMembers} more`] : members;
  return { kind, name, line: node.startPosition.row + 1, signature, members: shown };
}

function nameOf(node: Node): string {
  return node.childForFieldName('name')?.text ?? '';
}

/**
 * The text of `node` up to the body of `owner` (`node` itself by default;
 * the function value of a `const f = () => ...`), a trailing `stripSuffix`
 * removed, whitespace collapsed and clipped. An arrow function's header
 * ends before its body, block or expression alike.
 */
function header(node: Node, stripSuffix = '', owner: Node = node): string {
  const body = owner.childForFieldName('body');
  let text = body === null ? node.text : node.text.slice(0, body.startIndex - node.startIndex);
  text = text.replace(/\s+/g, ' ').trim();
  if (stripSuffix !== '' && text.endsWith(stripSuffix)) text = text.slice(0, -stripSuffix.length).trimEnd();
  return clip(text);
}

function firstLine(text: string): string {
  const newline = text.indexOf('\n');
  return clip(newline < 0 ? text : `${text.slice(0, newline).trimEnd()} …`);
}

function clip(text: string, maxLength = maxSignatureLength): string {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  return collapsed.length > maxLength ? `${collapsed.slice(0, maxLength - 1)}…` : collapsed;
}
