import type { Node } from 'web-tree-sitter';
import { isNodeBuiltin, pythonDistributionOfModule, pythonStdlibModules } from './dependency-known';
import { Ecosystem, isNameProblem, normalizePackageName, parsePackageName } from './dependency-names';
import type { ImportedPackage, ImportSite } from './dependency-policy';
import { decodeEscapes, Grammar, grammarOf, type Parsers } from './syntax';

/** A file of the request: workspace-relative path and text. */
export interface ImportSourceFile {
  readonly path: string;
  readonly content: string;
}

/** One import as the code writes it. */
export interface ModuleImport {
  /** Python: the absolute module (`yaml`, `google.protobuf`); JavaScript: the specifier (`lodash/fp`, `./util`, `node:fs`). */
  readonly specifier: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
  /**
   * The code works without it: a Python import inside `try` that catches
   * ImportError or ModuleNotFoundError (or everything), under
   * `if TYPE_CHECKING:`, or under an `if` that asks `find_spec` first; a
   * JavaScript `require`/`import()` inside `try` with a `catch`.
   */
  readonly optional: boolean;
}

/** The imports of one file, for `packagesOfImports`. */
export interface FileImports {
  readonly path: string;
  readonly imports: readonly ModuleImport[];
}

const grammarsOf: Readonly<Record<Ecosystem, readonly Grammar[]>> = {
  python: [Grammar.PYTHON],
  npm: [Grammar.JAVASCRIPT, Grammar.TYPESCRIPT, Grammar.TSX],
};

/**
 * The imports one file makes, in source order, wherever they are (inside
 * functions, `try` and `if` too). Python: `import a.b`, `from a.b import c`
 * (relative imports and `from __future__` are left out). JavaScript and
 * TypeScript: `import ... from 'x'`, `import 'x'`, `export ... from 'x'`,
 * `import x = require('x')`, `require('x')` and `import('x')` with a literal
 * (a template without substitutions counts). A file whose grammar is not
 * the ecosystem's (a .js helper in a Python task) gives none.
 */
export function importsOfFile(parsers: Parsers, ecosystem: Ecosystem, file: ImportSourceFile): ModuleImport[] {
  const grammar = grammarOf(file.path, file.content);
  if (grammar === undefined || !grammarsOf[ecosystem].includes(grammar)) return [];
  const tree = parsers.parse(grammar, file.content);
  if (tree === null) return [];
  try {
    const imports: ModuleImport[] = [];
    const found = ecosystem === Ecosystem.PYTHON ? pythonImportsOf : javascriptImportsOf;
    forEachNode(tree.rootNode, (node) => {
      for (const [specifier, at] of found(node)) imports.push({ specifier, line: at.startPosition.row + 1, column: at.startPosition.column + 1, optional: isGuarded(node, ecosystem) });
    });
    return imports;
  } finally {
    tree.delete();
  }
}

/**
 * The third-party packages among the imports, each once, ordered by its
 * first import (file order, then position). Left out: optional imports
 * (see `ModuleImport.optional`: the code runs without them, so they are
 * neither installed nor asked about), unless the package is also imported
 * unguarded; relative and absolute
 * paths; Python's standard library and modules the request's files provide
 * (`foo.py`, `foo/__init__.py` or a directory of .py files named foo, at
 * the top, under `src/`, or beside the importing file); Node's built-in
 * modules, `#` subpath imports, URLs and path aliases (`@/x`, `~/x`), and a
 * package.json's own name. Python modules map to the distribution that
 * provides them where the names differ (`yaml` -> PyYAML, `PIL` -> Pillow).
 *
 * @param files every file of the request (paths only matter), to tell local modules.
 */
export function packagesOfImports(ecosystem: Ecosystem, files: readonly ImportSourceFile[], fileImports: readonly FileImports[]): ImportedPackage[] {
  const isLocal = ecosystem === Ecosystem.PYTHON ? pythonLocalModules(files.map((file) => cleanPath(file.path))) : npmLocalPackages(files);
  const byName = new Map<string, { name: string; module: string; sites: ImportSite[] }>();
  for (const { path, imports } of fileImports) {
    for (const found of imports) {
      if (found.optional) continue;
      const resolved = ecosystem === Ecosystem.PYTHON ? pythonPackageOf(found.specifier, cleanPath(path), isLocal) : npmPackageOf(found.specifier, isLocal);
      if (resolved === undefined) continue;
      const key = normalizePackageName(ecosystem, resolved.name);
      const site = { path, line: found.line, column: found.column };
      const entry = byName.get(key);
      if (entry === undefined) byName.set(key, { ...resolved, sites: [site] });
      else entry.sites.push(site);
    }
  }
  return [...byName.values()];
}

/** `importsOfFile` for every file, then `packagesOfImports`. */
export function findImportedPackages(parsers: Parsers, ecosystem: Ecosystem, files: readonly ImportSourceFile[]): ImportedPackage[] {
  return packagesOfImports(
    ecosystem,
    files,
    files.map((file) => ({ path: file.path, imports: importsOfFile(parsers, ecosystem, file) })),
  );
}

type Found = Iterable<readonly [string, Node]>;

/** Exceptions whose handler makes a Python import optional; a bare `except:` catches them too. */
const importErrors = new Set(['ImportError', 'ModuleNotFoundError', 'Exception', 'BaseException']);

/** Whether the import statement `node` sits where its failure is handled or it never runs (see `ModuleImport.optional`). */
function isGuarded(node: Node, ecosystem: Ecosystem): boolean {
  for (let child = node, parent = node.parent; parent !== null; child = parent, parent = parent.parent) {
    if (ecosystem === Ecosystem.PYTHON) {
      if (parent.type === 'try_statement' && parent.childForFieldName('body')?.equals(child) === true && catchesImportError(parent)) return true;
      if (parent.type === 'if_statement' && parent.childForFieldName('consequence')?.equals(child) === true) {
        const condition = parent.childForFieldName('condition')?.text ?? '';
        if (/^(typing\.)?TYPE_CHECKING$/.test(condition) || /\bfind_spec\s*\(/.test(condition)) return true;
      }
      // An import in a function runs when the function is called, not under the try around its definition.
      if (parent.type === 'function_definition' || parent.type === 'lambda') return false;
    } else if (['function_declaration', 'function_expression', 'arrow_function', 'method_definition', 'generator_function_declaration'].includes(parent.type)) {
      return false;
    } else if (parent.type === 'try_statement' && parent.childForFieldName('body')?.equals(child) === true && parent.childForFieldName('handler') !== null) {
      return true;
    }
  }
  return false;
}

/** Whether a Python `try` has a handler for a failed import: `except:`, or one naming ImportError, ModuleNotFoundError or a base of them. */
function catchesImportError(tryStatement: Node): boolean {
  return tryStatement.namedChildren.some((clause) => {
    if (clause?.type !== 'except_clause') return false;
    const caught = clause.namedChildren.find((child) => child?.type !== 'block' && child?.type !== 'comment');
    if (caught === undefined || caught === null) return true;
    const names = (caught.type === 'as_pattern' ? (caught.namedChildren[0]?.text ?? '') : caught.text).match(/[A-Za-z_][\w.]*/g) ?? [];
    return names.some((name) => importErrors.has(name.split('.').at(-1) ?? name));
  });
}

function* pythonImportsOf(node: Node): Found {
  if (node.type === 'import_statement') {
    for (const name of node.childrenForFieldName('name')) {
      const dotted = name?.type === 'aliased_import' ? name.childForFieldName('name') : name;
      if (dotted?.type === 'dotted_name') yield [dotted.text.replace(/\s+/g, ''), dotted];
    }
  } else if (node.type === 'import_from_statement') {
    const module = node.childForFieldName('module_name');
    // A relative_import (`from . import x`, `from .m import x`) is the project's own code.
    if (module?.type === 'dotted_name') yield [module.text.replace(/\s+/g, ''), module];
  }
}

function* javascriptImportsOf(node: Node): Found {
  switch (node.type) {
    case 'import_statement':
    case 'export_statement':
    case 'import_require_clause': {
      const source = node.childForFieldName('source');
      const text = source === null ? undefined : literalText(source);
      if (source !== null && text !== undefined) yield [text, source];
      return;
    }
    case 'call_expression': {
      const callee = node.childForFieldName('function');
      if (callee === null || !(callee.type === 'import' || (callee.type === 'identifier' && callee.text === 'require'))) return;
      const argument = node.childForFieldName('arguments')?.namedChildren[0];
      const text = argument === null || argument === undefined ? undefined : literalText(argument);
      if (argument && text !== undefined) yield [text, argument];
      return;
    }
    default:
      return;
  }
}

/** The value of a string literal, or of a template without substitutions; undefined for anything computed. */
function literalText(node: Node): string | undefined {
  if (node.type === 'string') return decodeEscapes(node.text.slice(1, -1));
  if (node.type === 'template_string' && !node.namedChildren.some((child) => child?.type === 'template_substitution')) return decodeEscapes(node.text.slice(1, -1));
  return undefined;
}

/** Visits every node in document order without recursion, so deep nesting cannot overflow the stack. */
function forEachNode(root: Node, visit: (node: Node) => void): void {
  const cursor = root.walk();
  try {
    for (;;) {
      visit(cursor.currentNode);
      if (cursor.gotoFirstChild()) continue;
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) return;
      }
    }
  } finally {
    cursor.delete();
  }
}

function cleanPath(path: string): string {
  return path.replace(/\\/g, '/').replace(/^(\.\/)+/, '');
}

type LocalCheck = (top: string, importingPath: string) => boolean;

/** Whether a top-level module is one the request's files provide, seen from the importing file. */
function pythonLocalModules(paths: readonly string[]): LocalCheck {
  const pythonFiles = paths.filter((path) => /\.pyi?$/.test(path));
  const cache = new Map<string, ReadonlySet<string>>();
  const modulesUnder = (root: string) => {
    let modules = cache.get(root);
    if (modules === undefined) {
      const found = new Set<string>();
      for (const path of pythonFiles) {
        if (!path.startsWith(root)) continue;
        const rest = path.slice(root.length);
        const slash = rest.indexOf('/');
        // foo.py is module foo; foo/__init__.py, and foo/bar.py of a namespace package, make package foo.
        found.add(slash < 0 ? rest.replace(/\.pyi?$/, '') : rest.slice(0, slash));
      }
      modules = found;
      cache.set(root, modules);
    }
    return modules;
  };
  return (top, importingPath) => {
    const directory = importingPath.includes('/') ? importingPath.slice(0, importingPath.lastIndexOf('/') + 1) : '';
    return ['', 'src/', directory].some((root) => modulesUnder(root).has(top));
  };
}

function pythonPackageOf(module: string, importingPath: string, isLocal: LocalCheck): { name: string; module: string } | undefined {
  const top = module.split('.')[0] ?? module;
  if (top === '' || top === '__main__' || pythonStdlibModules.has(top) || isLocal(top, importingPath)) return undefined;
  // Longest dotted prefix first: google.protobuf before google.
  const parts = module.split('.');
  for (let length = parts.length; length > 0; length--) {
    const prefix = parts.slice(0, length).join('.');
    const distribution = pythonDistributionOfModule.get(prefix);
    if (distribution !== undefined) return { name: distribution, module: prefix };
  }
  return { name: top, module: top };
}

/** The names package.json files in the request give their own packages, lowercased. */
function npmLocalPackages(files: readonly ImportSourceFile[]): LocalCheck {
  const names = new Set<string>();
  for (const file of files) {
    if (!/(^|\/)package\.json$/.test(file.path)) continue;
    try {
      const manifest: unknown = JSON.parse(file.content);
      if (typeof manifest === 'object' && manifest !== null && 'name' in manifest && typeof manifest.name === 'string') names.add(manifest.name.toLowerCase());
    } catch {
      // A broken package.json names nothing; the tests will say so.
    }
  }
  return (name) => names.has(name.toLowerCase());
}

function npmPackageOf(specifier: string, isLocal: LocalCheck): { name: string; module: string } | undefined {
  // Paths, subpath imports (#internal), URLs and schemes (node:, data:, https:), home-style aliases (~/x).
  if (/^[./#~]/.test(specifier) || /^[a-z][a-z0-9+.-]*:/i.test(specifier) || isNodeBuiltin(specifier)) return undefined;
  const segments = specifier.split('/');
  const name = specifier.startsWith('@') ? segments.slice(0, 2).join('/') : (segments[0] ?? specifier);
  // Anything else that is no package name is a bundler alias (@/components).
  if (isNameProblem(parsePackageName(Ecosystem.NPM, name)) || (specifier.startsWith('@') && segments.length < 2) || isLocal(name, '')) return undefined;
  return { name, module: specifier };
}
