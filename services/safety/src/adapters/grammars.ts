import { readFile } from 'node:fs/promises';
import { AppError, ErrorCode } from '@ratchet/errors';
import { Language, Parser } from 'web-tree-sitter';
import type { Grammar, Parsers } from '../domain/syntax';

/**
 * Each grammar's .wasm file, as a module specifier. The grammar packages ship
 * them at their root and have no `exports` map, so `require.resolve` finds them.
 */
const wasmFiles: Readonly<Record<Grammar, string>> = {
  python: 'tree-sitter-python/tree-sitter-python.wasm',
  javascript: 'tree-sitter-javascript/tree-sitter-javascript.wasm',
  typescript: 'tree-sitter-typescript/tree-sitter-typescript.wasm',
  tsx: 'tree-sitter-typescript/tree-sitter-tsx.wasm',
  bash: 'tree-sitter-bash/tree-sitter-bash.wasm',
};

// web-tree-sitter's runtime is initialised once per process, however many parser sets are loaded.
let runtime: Promise<void> | undefined;

/**
 * Loads web-tree-sitter and the Python, JavaScript, TypeScript, TSX and Bash
 * grammars from the installed grammar packages (no native build). Call once
 * per process and share the result; `close()` frees the parsers.
 *
 * @throws AppError INTERNAL naming the grammar and the package to reinstall
 *   when a .wasm file is missing or cannot be loaded.
 */
export async function loadParsers(): Promise<Parsers> {
  runtime ??= Parser.init().catch((error: unknown) => {
    runtime = undefined;
    throw new AppError(ErrorCode.INTERNAL, `web-tree-sitter failed to start (${String(error)}); reinstall web-tree-sitter`, { cause: error });
  });
  await runtime;
  const parsers = new Map<Grammar, Parser>();
  try {
    for (const [grammar, specifier] of Object.entries(wasmFiles) as [Grammar, string][]) {
      const parser = new Parser();
      parsers.set(grammar, parser);
      parser.setLanguage(await loadLanguage(grammar, specifier));
    }
  } catch (error) {
    for (const parser of parsers.values()) parser.delete();
    throw error;
  }
  let closed = false;
  return {
    parse(grammar, source) {
      const parser = parsers.get(grammar);
      if (closed || parser === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, 'the tree-sitter parsers were closed; load them again with loadParsers()');
      return parser.parse(source);
    },
    close() {
      if (closed) return;
      closed = true;
      for (const parser of parsers.values()) parser.delete();
    },
  };
}

async function loadLanguage(grammar: Grammar, specifier: string): Promise<Language> {
  const packageName = specifier.split('/')[0] ?? specifier;
  try {
    // Bytes, not a path: given a path, web-tree-sitter reads it through a dynamic
    // import('fs/promises'), which fails where dynamic imports are not enabled (jest).
    return await Language.load(await readFile(require.resolve(specifier)));
  } catch (error) {
    throw new AppError(ErrorCode.INTERNAL, `cannot load the ${grammar} grammar from ${specifier} (${String(error)}); reinstall ${packageName}`, { cause: error });
  }
}
