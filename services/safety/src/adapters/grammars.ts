import { Language, Parser } from 'web-tree-sitter';

/** The grammars Ratchet parses, by the name analyzeFiles uses. */
export type GrammarName = 'python' | 'javascript' | 'typescript' | 'tsx';

const wasmFiles: Readonly<Record<GrammarName, string>> = {
  python: 'tree-sitter-python/tree-sitter-python.wasm',
  javascript: 'tree-sitter-javascript/tree-sitter-javascript.wasm',
  typescript: 'tree-sitter-typescript/tree-sitter-typescript.wasm',
  tsx: 'tree-sitter-typescript/tree-sitter-tsx.wasm',
};

/** One parser per grammar, loaded once from the grammar packages' own .wasm files. */
export interface Parsers {
  parserFor(grammar: GrammarName): Parser;
  close(): void;
}

let initialised: Promise<void> | undefined;

/**
 * Loads web-tree-sitter and the four grammars.
 *
 * @throws Error from web-tree-sitter when a .wasm file cannot be read (a broken install).
 */
export async function loadParsers(): Promise<Parsers> {
  initialised ??= Parser.init();
  await initialised;
  const parsers = new Map<GrammarName, Parser>();
  for (const [name, file] of Object.entries(wasmFiles) as [GrammarName, string][]) {
    const parser = new Parser();
    parser.setLanguage(await Language.load(require.resolve(file)));
    parsers.set(name, parser);
  }
  return {
    parserFor: (grammar) => parsers.get(grammar) as Parser,
    close: () => {
      for (const parser of parsers.values()) parser.delete();
    },
  };
}
