import { readFile } from 'node:fs/promises';
import { AppError, ErrorCode } from '@ratchet/errors';
import { Language, Parser } from 'web-tree-sitter';
import { createDefinitionExtractor, type DefinitionExtractor, type DefinitionExtractorOptions, type SyntaxGrammar, type SyntaxParsers } from './definitions';

/**
 * Each grammar's .wasm file, as a module specifier. The grammar packages ship
 * them at their root and have no `exports` map, so `require.resolve` finds them.
 */
const wasmFiles: Readonly<Record<SyntaxGrammar, string>> = {
  python: 'tree-sitter-python/tree-sitter-python.wasm',
  javascript: 'tree-sitter-javascript/tree-sitter-javascript.wasm',
  typescript: 'tree-sitter-typescript/tree-sitter-typescript.wasm',
  tsx: 'tree-sitter-typescript/tree-sitter-tsx.wasm',
};

// One set of parsers per process: the grammars take tens of milliseconds to
// load and parsing is synchronous, so every caller can share them. A failed
// load is forgotten so the next call tries again.
let shared: Promise<SyntaxParsers> | undefined;

/**
 * The tree-sitter parsers for Python, JavaScript, TypeScript and TSX, loaded
 * from the installed grammar packages on first call and shared by every later
 * call in the process (they are never freed).
 *
 * @throws AppError INTERNAL naming the grammar and the package to reinstall
 *   when web-tree-sitter or a .wasm file cannot be loaded.
 */
export function loadSyntaxParsers(): Promise<SyntaxParsers> {
  shared ??= loadParsers().catch((error: unknown) => {
    shared = undefined;
    throw error;
  });
  return shared;
}

/**
 * A definition extractor over the shared parsers (see `loadSyntaxParsers`),
 * with its own outline cache.
 *
 * @throws AppError INTERNAL as `loadSyntaxParsers` does.
 */
export async function loadDefinitionExtractor(options: DefinitionExtractorOptions = {}): Promise<DefinitionExtractor> {
  return createDefinitionExtractor(await loadSyntaxParsers(), options);
}

/** Gives a definition extractor, or undefined when none can be loaded (a repository map then lists paths only). */
export type DefinitionExtractorLoader = () => Promise<DefinitionExtractor | undefined>;

/**
 * A loader of one definition extractor (see `loadDefinitionExtractor`) for
 * a service's handlers: made on first call and shared by every later call,
 * so its outline cache lasts. Gives undefined when the parsers cannot be
 * loaded (a repository map then lists paths only); the next call tries again.
 */
export function definitionExtractorLoader(options: DefinitionExtractorOptions = {}): DefinitionExtractorLoader {
  let loading: Promise<DefinitionExtractor | undefined> | undefined;
  return () => {
    loading ??= loadDefinitionExtractor(options).catch(() => {
      loading = undefined;
      return undefined;
    });
    return loading;
  };
}

async function loadParsers(): Promise<SyntaxParsers> {
  try {
    await Parser.init();
  } catch (error) {
    throw new AppError(ErrorCode.INTERNAL, `web-tree-sitter failed to start (${String(error)}); reinstall web-tree-sitter`, { cause: error });
  }
  const parsers = new Map<SyntaxGrammar, Parser>();
  for (const [grammar, specifier] of Object.entries(wasmFiles) as [SyntaxGrammar, string][]) {
    const parser = new Parser();
    parser.setLanguage(await loadLanguage(grammar, specifier));
    parsers.set(grammar, parser);
  }
  return {
    parse(grammar, source) {
      const parser = parsers.get(grammar);
      if (parser === undefined) throw new AppError(ErrorCode.INTERNAL, `no tree-sitter parser for ${grammar}`);
      return parser.parse(source);
    },
  };
}

async function loadLanguage(grammar: SyntaxGrammar, specifier: string): Promise<Language> {
  const packageName = specifier.split('/')[0] ?? specifier;
  try {
    // Bytes, not a path: given a path, web-tree-sitter reads it through a dynamic
    // import('fs/promises'), which fails where dynamic imports are not enabled (jest).
    return await Language.load(await readFile(require.resolve(specifier)));
  } catch (error) {
    throw new AppError(ErrorCode.INTERNAL, `cannot load the ${grammar} grammar from ${specifier} (${String(error)}); reinstall ${packageName}`, { cause: error });
  }
}
