import { workspacePathProblem } from '@ratchet/agent';
import { AppError, ErrorCode } from '@ratchet/errors';
import { applyPolicy, defaultCodePolicy, type CodePolicy } from './code-policy';
import { capFindings, FileFindings, RuleId, verdictOf, type Analysis, type Detection, type Finding } from './findings';
import { checkJavaScript } from './javascript-rules';
import { checkPython } from './python-rules';
import { firstSyntaxError, Grammar, grammarOf, type Parsers } from './syntax';

/** One file to check: a workspace-relative path and its text. */
export interface SourceText {
  readonly path: string;
  readonly content: string;
}

/** What one check accepts and returns. */
export interface AnalysisLimits {
  /** Most files in one check. Default 200. */
  readonly maxFiles: number;
  /** Largest file, in UTF-8 bytes. Default 1 000 000. */
  readonly maxFileBytes: number;
  /** Largest total of all files, in UTF-8 bytes. Default 10 000 000. */
  readonly maxTotalBytes: number;
  /** Most findings listed in an answer (the verdict counts them all). Default 500. */
  readonly maxFindings: number;
}

/** The limits used when the caller sets none. */
export const defaultLimits: AnalysisLimits = Object.freeze({ maxFiles: 200, maxFileBytes: 1_000_000, maxTotalBytes: 10_000_000, maxFindings: 500 });

/**
 * Checks that a set of files is within `limits` before any of it is parsed.
 *
 * @throws AppError INVALID_ARGUMENT naming the limit and, for a file that is
 *   too large, the file and its size.
 */
export function checkLimits(files: readonly SourceText[], limits: AnalysisLimits = defaultLimits): void {
  if (files.length > limits.maxFiles) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${files.length} files sent; the safety check takes at most ${limits.maxFiles} files per call: split the files over several calls`);
  }
  let total = 0;
  for (const file of files) {
    const size = Buffer.byteLength(file.content, 'utf8');
    if (size > limits.maxFileBytes) {
      throw new AppError(
        ErrorCode.INVALID_ARGUMENT,
        `${quotePath(file.path)} is ${size} bytes; the safety check takes files of at most ${limits.maxFileBytes} bytes: leave generated data and build output out of the check`,
      );
    }
    total += size;
  }
  if (total > limits.maxTotalBytes) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `the files total ${total} bytes; the safety check takes at most ${limits.maxTotalBytes} bytes per call: split the files over several calls`);
  }
}

/**
 * What the built-in rules detect in one file: its path must be a clean
 * workspace path (else one CRITICAL detection and nothing else); files with
 * a known grammar are parsed and run through the rules of their language
 * (python-rules.ts, javascript-rules.ts) on the syntax tree; a file that
 * does not parse also gets a LOW parse-error detection at its first error.
 * Other files are only path-checked. Detections are in source order; the
 * policy has not judged them yet. Does not check limits.
 */
export function analyzeFile(parsers: Parsers, file: SourceText): Detection[] {
  const out = new FileFindings(file.path, file.content);
  const problem = workspacePathProblem(file.path);
  if (problem !== undefined) {
    out.addForFile(RuleId.PATH_OUTSIDE_WORKSPACE, `the file path ${quotePath(file.path)} ${problem}, so it is never written; write project files inside the workspace only`);
    return out.findings;
  }
  const grammar = grammarOf(file.path, file.content);
  if (grammar === undefined || file.content === '') return out.findings;
  const tree = parsers.parse(grammar, file.content);
  if (tree === null) {
    out.addForFile(RuleId.PARSE_ERROR, `the ${grammar} parser gave up on this file`);
    return out.findings;
  }
  try {
    const root = tree.rootNode;
    if (root.hasError) {
      const error = firstSyntaxError(root) ?? root;
      const what = error.isMissing ? `missing ${JSON.stringify(error.type)}` : `unexpected ${JSON.stringify(abbreviate(error.text))}`;
      out.add(RuleId.PARSE_ERROR, error.startPosition, `${grammarLabel[grammar]} syntax error: ${what}; the rules below it may have missed code`);
    }
    if (grammar === Grammar.PYTHON) checkPython(root, out);
    else checkJavaScript(root, out);
  } finally {
    tree.delete();
  }
  return out.findings.sort((left, right) => left.line - right.line || left.column - right.column);
}

/**
 * Checks files with the built-in (tree-sitter) rules alone and decides with
 * `policy` (default: block HIGH and worse, warn from LOW; see
 * `defaultCodePolicy`); CheckCode adds Bandit and ESLint to this. Findings
 * come in file order, then source order; when there are more than
 * `limits.maxFindings`, the most severe are kept (see `capFindings`). An
 * empty list of files is allowed. The grammar of each file comes from its
 * extension (see `grammarOf`), not from the task's language.
 *
 * @throws AppError INVALID_ARGUMENT when the files are over `limits`
 *   (default: 200 files, 1 MB per file, 10 MB in all), naming the limit and the file.
 */
export function analyzeFiles(parsers: Parsers, files: readonly SourceText[], limits: AnalysisLimits = defaultLimits, policy: CodePolicy = defaultCodePolicy): Analysis {
  checkLimits(files, limits);
  return summarize(applyPolicy(policy, files.flatMap((file) => analyzeFile(parsers, file))), limits);
}

/** The verdict over all `findings` (their most severe action), and the findings capped at `limits.maxFindings`. */
export function summarize(findings: readonly Finding[], limits: AnalysisLimits = defaultLimits): Analysis {
  return { verdict: verdictOf(findings), findings: capFindings(findings, limits.maxFindings) };
}

const grammarLabel: Readonly<Record<Grammar, string>> = { python: 'Python', javascript: 'JavaScript', typescript: 'TypeScript', tsx: 'TSX', bash: 'Bash' };

/** A path as it can be shown in a message: plain when it is, quoted and capped when it holds odd characters. */
function quotePath(path: string): string {
  return /^[\w./@+-]{1,200}$/.test(path) ? path : JSON.stringify(path.length > 200 ? `${path.slice(0, 200)}...` : path);
}

function abbreviate(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > 40 ? `${oneLine.slice(0, 37)}...` : oneLine;
}
