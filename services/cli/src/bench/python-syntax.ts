import { DefinitionKind, loadSyntaxParsers, outlineFile, SyntaxGrammar, type SyntaxParsers } from '@ratchet/code-intel';

/** A node of a syntax tree, as the shared parsers return it. */
type SyntaxNode = NonNullable<ReturnType<SyntaxParsers['parse']>>['rootNode'];

/** What the suite loader needs to know about a piece of Python before it is submitted. */
export interface PythonSyntax {
  /** Why `source` is not valid Python (`line 3, column 9: ...`, 1-based), or undefined when it parses. */
  problem(source: string): string | undefined;
  /** Names of the functions `source` defines at the top level. */
  topLevelFunctions(source: string): string[];
}

/**
 * Python syntax through the tree-sitter parsers Ratchet already ships for its
 * repository map, so a broken test is caught here, in the bench's process,
 * without a Python on the host and before a model call is spent on it.
 *
 * @throws AppError INTERNAL when the grammars cannot be loaded (see `loadSyntaxParsers`).
 */
export async function loadPythonSyntax(): Promise<PythonSyntax> {
  return pythonSyntaxOf(await loadSyntaxParsers());
}

/** `PythonSyntax` over already loaded parsers. */
export function pythonSyntaxOf(parsers: SyntaxParsers): PythonSyntax {
  return {
    problem(source) {
      const tree = parsers.parse(SyntaxGrammar.PYTHON, source);
      if (tree === null) return 'the parser gave up on it';
      try {
        if (!tree.rootNode.hasError) return undefined;
        const bad = firstProblem(tree.rootNode);
        if (bad === undefined) return 'it does not parse';
        const where = `line ${bad.startPosition.row + 1}, column ${bad.startPosition.column + 1}`;
        if (bad.isMissing) return `${where}: missing ${JSON.stringify(bad.type)}`;
        const text = bad.text.split('\n')[0] ?? '';
        return `${where}: unexpected ${text.trim() === '' ? 'input' : JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}...` : text)}`;
      } finally {
        tree.delete();
      }
    },
    topLevelFunctions(source) {
      return outlineFile(parsers, 'module.py', source)
        .definitions.filter((definition) => definition.kind === DefinitionKind.FUNCTION)
        .map((definition) => definition.name);
    },
  };
}

/** The first ERROR or MISSING node in document order, descending only into subtrees that hold one. */
function firstProblem(node: SyntaxNode): SyntaxNode | undefined {
  if (node.isError || node.isMissing) return node;
  for (const child of node.children) {
    if (!child.hasError && !child.isMissing) continue;
    const found = firstProblem(child);
    if (found !== undefined) return found;
  }
  return undefined;
}
