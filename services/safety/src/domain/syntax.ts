import type { Node, Tree } from 'web-tree-sitter';

/** The grammars the analyser parses with; BASH reads command lines (CheckCommand), never files. */
export const Grammar = { PYTHON: 'python', JAVASCRIPT: 'javascript', TYPESCRIPT: 'typescript', TSX: 'tsx', BASH: 'bash' } as const;
export type Grammar = (typeof Grammar)[keyof typeof Grammar];

/**
 * The port to tree-sitter: one parser per grammar, loaded once (see
 * `loadParsers` in adapters/grammars.ts). Parsing is synchronous, so one set
 * serves every call of a process.
 */
export interface Parsers {
  /** The syntax tree of `source`; the caller deletes it. Null when the parser gave up. */
  parse(grammar: Grammar, source: string): Tree | null;
  /** Frees the parsers; parse must not be called afterwards. */
  close(): void;
}

const grammarByExtension: ReadonlyMap<string, Grammar> = new Map(
  Object.entries({
  py: Grammar.PYTHON,
  pyi: Grammar.PYTHON,
  pyw: Grammar.PYTHON,
  js: Grammar.JAVASCRIPT,
  mjs: Grammar.JAVASCRIPT,
  cjs: Grammar.JAVASCRIPT,
  jsx: Grammar.JAVASCRIPT,
  ts: Grammar.TYPESCRIPT,
  mts: Grammar.TYPESCRIPT,
  cts: Grammar.TYPESCRIPT,
  tsx: Grammar.TSX,
  }),
);

/**
 * The grammar for a file, from its extension (case-insensitive), whatever
 * language the task is in: a Python task may still carry a .js helper. A file
 * without an extension is parsed when its first line is a `#!` naming python
 * or node (an executable script); anything else is only path-checked.
 */
export function grammarOf(filePath: string, content: string): Grammar | undefined {
  const name = filePath.slice(filePath.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  if (dot > 0) return grammarByExtension.get(name.slice(dot + 1).toLowerCase());
  if (dot === 0 || !content.startsWith('#!')) return undefined;
  const lineEnd = content.indexOf('\n');
  const shebang = content.slice(0, lineEnd < 0 ? 200 : Math.min(lineEnd, 200));
  if (/\bpython[\d.]*\b/.test(shebang)) return Grammar.PYTHON;
  // Before node: `ts-node` contains the word node.
  if (/\b(ts-node|tsx)\b/.test(shebang)) return Grammar.TYPESCRIPT;
  if (/\b(node|nodejs|bun)\b/.test(shebang)) return Grammar.JAVASCRIPT;
  return undefined;
}

/**
 * The first ERROR or MISSING node in document order, found without
 * recursion so deeply nested input cannot overflow the stack.
 */
export function firstSyntaxError(root: Node): Node | undefined {
  const cursor = root.walk();
  try {
    for (;;) {
      const node = cursor.currentNode;
      if (node.isError || node.isMissing) return node;
      if (node.hasError && cursor.gotoFirstChild()) continue;
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) return undefined;
      }
    }
  } finally {
    cursor.delete();
  }
}

const simpleEscapes: Readonly<Record<string, string>> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', v: '\v', a: '\u0007', '0': '\0' };

/**
 * Decodes the backslash escapes that Python and JavaScript share (`\\n`,
 * `\\xNN`, `\\uNNNN`, `\\u{N}`, `\\UNNNNNNNN`, line continuations); other
 * escaped characters stand for themselves. Good enough to read a path.
 */
export function decodeEscapes(text: string): string {
  return text.replace(/\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|\r?\n|[\s\S])/g, (_match, escape: string) => {
    if (escape.length > 1 && /^[xuU]/.test(escape)) {
      const code = Number.parseInt(escape.slice(1).replace(/[{}]/g, ''), 16);
      return code <= 0x10ffff ? String.fromCodePoint(code) : '';
    }
    if (escape.endsWith('\n')) return '';
    return simpleEscapes[escape] ?? escape;
  });
}
