import { beforeAll, describe, expect, it } from '@jest/globals';
import { createDefinitionExtractor, DefinitionKind, grammarOfPath, outlineFile, type SyntaxParsers } from './definitions';
import { loadSyntaxParsers } from './syntax-parsers';

let parsers: SyntaxParsers;
beforeAll(async () => {
  parsers = await loadSyntaxParsers();
});

const outline = (path: string, content: string) => outlineFile(parsers, path, content).definitions.map(({ kind, name, line, signature, members }) => ({ kind, name, line, signature, members }));

describe('outlineFile', () => {
  it('outlines Python classes with their methods, decorated and async functions and constants', () => {
    const source = [
      '"""Calculator module. é😀"""', // 1
      'import math', // 2
      'MAX_VALUE = 10 ** 6', // 3
      '_private = 1', // 4
      '', // 5
      'class Calculator(Base):', // 6
      '    unit = "m"', // 7
      '    def __init__(self, precision: int = 2):', // 8
      '        self.precision = precision', // 9
      '    @property', // 10
      '    def precision_digits(self):', // 11
      '        return self.precision', // 12
      '    async def fetch(self): ...', // 13
      '', // 14
      '@functools.lru_cache(maxsize=None)', // 15
      'def parse(text: str,', // 16
      '          strict: bool = False) -> "Expr":', // 17
      '    return Expr(text)', // 18
      '', // 19
      'async def main(*args, **kwargs):', // 20
      '    pass', // 21
    ].join('\n');
    expect(outline('calc/calculator.py', source)).toEqual([
      { kind: DefinitionKind.CONSTANT, name: 'MAX_VALUE', line: 3, signature: 'MAX_VALUE = 10 ** 6', members: [] },
      { kind: DefinitionKind.CLASS, name: 'Calculator', line: 6, signature: 'class Calculator(Base)', members: ['__init__', 'precision_digits', 'fetch'] },
      { kind: DefinitionKind.FUNCTION, name: 'parse', line: 15, signature: '@functools.lru_cache(maxsize=None) def parse(text: str, strict: bool = False) -> "Expr"', members: [] },
      { kind: DefinitionKind.FUNCTION, name: 'main', line: 20, signature: 'async def main(*args, **kwargs)', members: [] },
    ]);
  });

  it('outlines JavaScript functions, arrow-function consts, classes and CommonJS exports', () => {
    const source = [
      "const fs = require('node:fs');", // 1
      'const DEFAULT_LIMIT = 100;', // 2
      'const add = (a, b) => a + b;', // 3
      'async function load(path, { encoding = "utf8" } = {}) {', // 4
      '  return fs.promises.readFile(path, encoding);', // 5
      '}', // 6
      'class Store extends Base {', // 7
      '  constructor(root) { super(); this.root = root; }', // 8
      '  get size() { return 0; }', // 9
      '  static open(root) { return new Store(root); }', // 10
      '}', // 11
      'function* ids(start) { yield start; }', // 12
      'module.exports = { add, load, Store };', // 13
    ].join('\n');
    expect(outline('lib/store.js', source)).toEqual([
      { kind: DefinitionKind.CONSTANT, name: 'DEFAULT_LIMIT', line: 2, signature: 'const DEFAULT_LIMIT = 100', members: [] },
      { kind: DefinitionKind.FUNCTION, name: 'add', line: 3, signature: 'const add = (a, b) =>', members: [] },
      { kind: DefinitionKind.FUNCTION, name: 'load', line: 4, signature: 'async function load(path, { encoding = "utf8" } = {})', members: [] },
      { kind: DefinitionKind.CLASS, name: 'Store', line: 7, signature: 'class Store extends Base', members: ['constructor', 'size', 'open'] },
      { kind: DefinitionKind.FUNCTION, name: 'ids', line: 12, signature: 'function* ids(start)', members: [] },
      { kind: DefinitionKind.EXPORT, name: '', line: 13, signature: 'module.exports = { add, load, Store }', members: ['add', 'load', 'Store'] },
    ]);
  });

  it('outlines TypeScript interfaces, types, enums, exported consts and re-exports', () => {
    const source = [
      "import { z } from 'zod';", // 1
      'export interface Shape<T> extends Base {', // 2
      '  readonly area: number;', // 3
      '  scale(factor: number): Shape<T>;', // 4
      '}', // 5
      'export type ShapeKind = "circle" | "square";', // 6
      'export enum Color { Red, Green = 2 }', // 7
      'export const shapeSchema = z.object({ kind: z.string() });', // 8
      'const internal = 1;', // 9
      'export const area = async <T,>(shape: Shape<T>): Promise<number> => {', // 10
      '  return shape.area;', // 11
      '};', // 12
      'export default class Circle implements Shape<number> {', // 13
      '  private radius = 1;', // 14
      '  scale(factor: number) { return this; }', // 15
      '  get area() { return 3; }', // 16
      '}', // 17
      "export { helper, other as renamed } from './helpers';", // 18
      'declare function legacy(x: number): string;', // 19
      'export abstract class Repo { abstract find(id: string): Promise<void>; }', // 20
      "export * from './all';", // 21
    ].join('\n');
    expect(outline('src/shape.ts', source)).toEqual([
      { kind: DefinitionKind.INTERFACE, name: 'Shape', line: 2, signature: 'export interface Shape<T> extends Base', members: ['area', 'scale'] },
      { kind: DefinitionKind.TYPE, name: 'ShapeKind', line: 6, signature: 'export type ShapeKind = "circle" | "square"', members: [] },
      { kind: DefinitionKind.ENUM, name: 'Color', line: 7, signature: 'export enum Color', members: ['Red', 'Green'] },
      { kind: DefinitionKind.CONSTANT, name: 'shapeSchema', line: 8, signature: 'export const shapeSchema = z.object({ kind: z.string() })', members: [] },
      { kind: DefinitionKind.FUNCTION, name: 'area', line: 10, signature: 'export const area = async <T,>(shape: Shape<T>): Promise<number> =>', members: [] },
      { kind: DefinitionKind.CLASS, name: 'Circle', line: 13, signature: 'export default class Circle implements Shape<number>', members: ['scale', 'area'] },
      { kind: DefinitionKind.EXPORT, name: '', line: 18, signature: "export { helper, other as renamed } from './helpers'", members: ['helper', 'renamed'] },
      { kind: DefinitionKind.FUNCTION, name: 'legacy', line: 19, signature: 'function legacy(x: number): string', members: [] },
      { kind: DefinitionKind.CLASS, name: 'Repo', line: 20, signature: 'export abstract class Repo', members: ['find'] },
      { kind: DefinitionKind.EXPORT, name: '', line: 21, signature: "export * from './all'", members: [] },
    ]);
  });

  it('outlines TSX components', () => {
    const source = 'export function Button({ label }: Props) {\n  return <button>{label}</button>;\n}\n';
    expect(outline('ui/Button.tsx', source)).toEqual([{ kind: DefinitionKind.FUNCTION, name: 'Button', line: 1, signature: 'export function Button({ label }: Props)', members: [] }]);
  });

  it('keeps what parsed in a file with syntax errors', () => {
    expect(outline('broken.py', 'def ok(a):\n    return a\n\ndef broken(:\n').map((definition) => definition.name)).toContain('ok');
  });

  it('lists other languages and oversized files without definitions, saying why for the latter', () => {
    expect(outlineFile(parsers, 'main.go', 'package main\nfunc main() {}\n')).toEqual({ definitions: [] });
    expect(outlineFile(parsers, 'big.py', 'x = 1\n'.repeat(60_000), 256 * 1024)).toEqual({ definitions: [], note: '352 KB, not outlined (limit 256 KB)' });
  });

  it('maps extensions to grammars, case-insensitively', () => {
    expect([grammarOfPath('a/B.PY'), grammarOfPath('x.mjs'), grammarOfPath('x.cts'), grammarOfPath('x.tsx'), grammarOfPath('Makefile'), grammarOfPath('.py')]).toEqual(['python', 'javascript', 'typescript', 'tsx', undefined, undefined]);
  });
});

describe('createDefinitionExtractor', () => {
  it('parses a file once per content and again when it changes', () => {
    const calls: string[] = [];
    const counting: SyntaxParsers = { parse: (grammar, source) => (calls.push(source), parsers.parse(grammar, source)) };
    const extractor = createDefinitionExtractor(counting, { cacheEntries: 2 });
    extractor.outline('a.py', 'def a(): pass');
    extractor.outline('a.py', 'def a(): pass');
    extractor.outline('a.py', 'def a2(): pass');
    expect(extractor.outline('a.py', 'def a(): pass').definitions.map((definition) => definition.name)).toEqual(['a']);
    expect(calls).toEqual(['def a(): pass', 'def a2(): pass']);
    extractor.outline('README.md', '# hi');
    expect(calls).toHaveLength(2);
  });
});
