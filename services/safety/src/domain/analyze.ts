import { workspacePathProblem } from '@ratchet/agent';
import { SafetyVerdict, Severity, type SafetyFinding, type SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Node } from 'web-tree-sitter';
import type { GrammarName, Parsers } from '../adapters/grammars';
import { finding, RuleId } from './findings';
import { checkJavaScript } from './javascript-rules';
import { checkPython } from './python-rules';

/** Largest file analysed, bytes. */
export const maxFileBytes = 1_000_000;
/** Most files in one check. */
export const maxFiles = 200;

/** The grammar for a path's extension; undefined for files that are only path-checked. */
export function grammarOf(filePath: string): GrammarName | undefined {
  if (/\.pyi?$/.test(filePath)) return 'python';
  if (/\.(js|mjs|cjs|jsx)$/.test(filePath)) return 'javascript';
  if (/\.(ts|mts|cts)$/.test(filePath)) return 'typescript';
  if (/\.tsx$/.test(filePath)) return 'tsx';
  return undefined;
}

/**
 * Checks files statically: paths confined to the workspace, then per
 * language the rules of python-rules.ts and javascript-rules.ts on the syntax
 * tree (so words in comments and strings are not flagged). A file that does
 * not parse gets a LOW parse-error finding at its first error.
 *
 * @throws AppError INVALID_ARGUMENT when there are more than 200 files or a
 *   file is over 1 MB, naming it.
 */
export function analyzeFiles(parsers: Parsers, files: readonly SourceFile[]): { verdict: SafetyVerdict; findings: SafetyFinding[] } {
  if (files.length > maxFiles) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${files.length} files sent; the safety check takes at most ${maxFiles} per call`);
  const findings: SafetyFinding[] = [];
  for (const file of files) {
    const size = Buffer.byteLength(file.content, 'utf8');
    if (size > maxFileBytes) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file.path} is ${size} bytes; the safety check takes files up to ${maxFileBytes} bytes`);
    const problem = workspacePathProblem(file.path);
    if (problem !== undefined) {
      findings.push(finding(RuleId.PATH_OUTSIDE_WORKSPACE, file.path, { row: 0, column: 0 }, `the file path ${problem}`, ''));
      continue;
    }
    const grammar = grammarOf(file.path);
    if (grammar === undefined) continue;
    const tree = parsers.parserFor(grammar).parse(file.content);
    if (tree === null) continue;
    try {
      const root = tree.rootNode;
      if (root.hasError) {
        const bad = firstError(root);
        findings.push(finding(RuleId.PARSE_ERROR, file.path, bad?.startPosition ?? { row: 0, column: 0 }, `${grammar} syntax error${bad?.isMissing === true ? ` (missing ${bad.type})` : ''}`, file.content));
      }
      findings.push(...(grammar === 'python' ? checkPython(root, file.path, file.content) : checkJavaScript(root, file.path, file.content)));
    } finally {
      tree.delete();
    }
  }
  findings.sort((left, right) => left.path.localeCompare(right.path) || left.line - right.line || left.column - right.column);
  return { verdict: verdictOf(findings), findings };
}

/** BLOCK for any HIGH or CRITICAL finding, WARN for lower ones, ALLOW for none. */
export function verdictOf(findings: readonly SafetyFinding[]): SafetyVerdict {
  if (findings.some((found) => found.severity >= Severity.SEVERITY_HIGH)) return SafetyVerdict.SAFETY_VERDICT_BLOCK;
  return findings.length > 0 ? SafetyVerdict.SAFETY_VERDICT_WARN : SafetyVerdict.SAFETY_VERDICT_ALLOW;
}

function firstError(node: Node): Node | undefined {
  if (node.isError || node.isMissing) return node;
  for (const child of node.children) {
    if (child !== null && (child.hasError || child.isError || child.isMissing)) {
      const found = firstError(child);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
