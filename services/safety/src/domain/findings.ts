/**
 * Stable ids of the rules. Findings, lessons and docs refer to them, so an id
 * never changes meaning; a new behaviour gets a new id. Language-specific
 * rules are namespaced (`py.`, `js.`) like the contract's examples.
 */
export const RuleId = {
  /** A file path in the request is absolute, climbs out with `..`, or is otherwise not a clean workspace path. */
  PATH_OUTSIDE_WORKSPACE: 'path-outside-workspace',
  /** A file-writing call whose literal path is absolute, home-relative or climbs out of the workspace. */
  WRITE_OUTSIDE_WORKSPACE: 'write-outside-workspace',
  /** A file that does not parse; reported at its first error. */
  PARSE_ERROR: 'parse-error',
  /** More findings than the response carries; the verdict still counts them all. */
  FINDINGS_TRUNCATED: 'findings-truncated',
  /** Python `eval`/`exec`/`compile` of a string that is not a plain literal. */
  PYTHON_DYNAMIC_EVAL: 'py.dynamic-eval',
  /** Python `os.system`, `os.popen`, `os.exec*`, `os.spawn*`, `pty.spawn` and friends. */
  PYTHON_OS_COMMAND: 'py.os-command',
  /** Python `subprocess.*` with `shell=True`, or helpers that always use a shell. */
  PYTHON_SUBPROCESS_SHELL: 'py.subprocess-shell',
  /** JavaScript/TypeScript loading `child_process` in any form. */
  JS_CHILD_PROCESS: 'js.child-process',
  /** JavaScript/TypeScript `eval` of a string that is not a plain literal. */
  JS_DYNAMIC_EVAL: 'js.dynamic-eval',
  /** JavaScript/TypeScript `new Function(...)` or `Function(...)`. */
  JS_FUNCTION_CONSTRUCTOR: 'js.function-constructor',
  /** JavaScript/TypeScript `vm.runIn*`, `vm.compileFunction`, `new vm.Script`. */
  JS_VM: 'js.vm',
} as const;
export type RuleId = (typeof RuleId)[keyof typeof RuleId];

/** How bad a finding is; the domain's twin of the proto `Severity`. */
export const Severity = { INFO: 'info', LOW: 'low', MEDIUM: 'medium', HIGH: 'high', CRITICAL: 'critical' } as const;
export type Severity = (typeof Severity)[keyof typeof Severity];

/** The decision of a check; the domain's twin of the proto `SafetyVerdict`. */
export const Verdict = { ALLOW: 'allow', WARN: 'warn', BLOCK: 'block' } as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** One rule match in one file. */
export interface Finding {
  readonly ruleId: RuleId;
  readonly severity: Severity;
  /** Workspace-relative path of the file, as the request spelled it. */
  readonly path: string;
  /** 1-based; 0 when the finding is about the file as a whole. */
  readonly line: number;
  /** 1-based, in UTF-16 code units (what editors show); 0 when the finding is about the file as a whole. */
  readonly column: number;
  /** What is wrong and why it matters. */
  readonly message: string;
  /** The source line, trimmed and capped at {@link maxSnippetLength} characters. */
  readonly snippet: string;
  /** What to do instead. */
  readonly remediation: string;
}

/** The outcome of checking a set of files. */
export interface Analysis {
  readonly verdict: Verdict;
  readonly findings: readonly Finding[];
}

/** Longest snippet carried by a finding, characters. */
export const maxSnippetLength = 200;

interface RuleText {
  readonly severity: Severity;
  readonly remediation: string;
}

const rules: Readonly<Record<RuleId, RuleText>> = {
  [RuleId.PATH_OUTSIDE_WORKSPACE]: { severity: Severity.CRITICAL, remediation: 'Use a relative path inside the workspace with "/" separators and no "." or ".." segments, e.g. src/app.py.' },
  [RuleId.WRITE_OUTSIDE_WORKSPACE]: {
    severity: Severity.HIGH,
    remediation: 'Write only to relative paths inside the workspace, or to a temporary directory obtained at run time (tempfile.mkdtemp(), fs.mkdtemp(path.join(os.tmpdir(), ...))).',
  },
  [RuleId.PARSE_ERROR]: { severity: Severity.LOW, remediation: 'Fix the syntax error at this line; the tests cannot run until the file parses.' },
  [RuleId.FINDINGS_TRUNCATED]: { severity: Severity.INFO, remediation: 'Fix the findings listed first; the rest appear once these are gone.' },
  [RuleId.PYTHON_DYNAMIC_EVAL]: {
    severity: Severity.HIGH,
    remediation: 'Do not evaluate code built at run time: parse data with json.loads or ast.literal_eval, or dispatch through a dict of functions.',
  },
  [RuleId.PYTHON_OS_COMMAND]: {
    severity: Severity.HIGH,
    remediation: 'Do not run shell commands or replace the process; do the job with the standard library (pathlib, shutil, json) or call subprocess.run with a list of arguments and no shell.',
  },
  [RuleId.PYTHON_SUBPROCESS_SHELL]: { severity: Severity.HIGH, remediation: 'Drop shell=True: pass the program and its arguments as a list, e.g. subprocess.run(["ls", "-l", path], check=True).' },
  [RuleId.JS_CHILD_PROCESS]: { severity: Severity.HIGH, remediation: 'Do not spawn processes; implement the behaviour in JavaScript/TypeScript with the standard library.' },
  [RuleId.JS_DYNAMIC_EVAL]: { severity: Severity.HIGH, remediation: 'Do not evaluate code built at run time: parse data with JSON.parse, or dispatch through a map of functions.' },
  [RuleId.JS_FUNCTION_CONSTRUCTOR]: { severity: Severity.HIGH, remediation: 'Do not build functions from strings; write the function in the source, or dispatch through a map of functions.' },
  [RuleId.JS_VM]: { severity: Severity.HIGH, remediation: 'Do not run code through the vm module; write the logic in the source.' },
};

const severityRank: Readonly<Record<Severity, number>> = { info: 0, low: 1, medium: 2, high: 3, critical: 4 };

/** Compares severities: negative when `left` is less severe than `right`. */
export function compareSeverity(left: Severity, right: Severity): number {
  return severityRank[left] - severityRank[right];
}

/** BLOCK when any finding is HIGH or CRITICAL, WARN when there are only lower ones, ALLOW when there are none. */
export function verdictOf(findings: readonly Pick<Finding, 'severity'>[]): Verdict {
  if (findings.some((found) => compareSeverity(found.severity, Severity.HIGH) >= 0)) return Verdict.BLOCK;
  return findings.length > 0 ? Verdict.WARN : Verdict.ALLOW;
}

/** A 0-based position, as tree-sitter reports it. */
export interface Position {
  readonly row: number;
  readonly column: number;
}

/**
 * Builds the findings of one file: turns tree-sitter's 0-based positions into
 * 1-based lines and columns and attaches the source line as the snippet.
 */
export class FileFindings {
  readonly findings: Finding[] = [];
  private lines: string[] | undefined;

  constructor(
    readonly path: string,
    private readonly source: string,
  ) {}

  /** Records a match of `rule` at `position` (0-based). */
  add(rule: RuleId, position: Position, message: string): void {
    this.lines ??= this.source.split('\n');
    this.findings.push({
      ruleId: rule,
      severity: rules[rule].severity,
      path: this.path,
      line: position.row + 1,
      column: position.column + 1,
      message,
      snippet: snippetOf(this.lines[position.row] ?? ''),
      remediation: rules[rule].remediation,
    });
  }

  /** Records a match of `rule` about the file as a whole (line and column 0, no snippet). */
  addForFile(rule: RuleId, message: string): void {
    this.findings.push({ ruleId: rule, severity: rules[rule].severity, path: this.path, line: 0, column: 0, message, snippet: '', remediation: rules[rule].remediation });
  }
}

function snippetOf(line: string): string {
  const trimmed = line.trim();
  return trimmed.length > maxSnippetLength ? `${trimmed.slice(0, maxSnippetLength - 3)}...` : trimmed;
}

/**
 * Keeps at most `max` findings for the response. When it must drop some it
 * keeps the most severe (earliest first among equals), restores their order
 * and appends one FINDINGS_TRUNCATED finding saying how many were left out.
 */
export function capFindings(findings: readonly Finding[], max: number): Finding[] {
  if (findings.length <= max) return [...findings];
  const kept = Math.max(0, max - 1);
  const chosen = findings
    .map((found, index) => ({ found, index }))
    .sort((left, right) => compareSeverity(right.found.severity, left.found.severity) || left.index - right.index)
    .slice(0, kept)
    .sort((left, right) => left.index - right.index)
    .map(({ found }) => found);
  const omitted = findings.length - kept;
  return [
    ...chosen,
    {
      ruleId: RuleId.FINDINGS_TRUNCATED,
      severity: rules[RuleId.FINDINGS_TRUNCATED].severity,
      path: '',
      line: 0,
      column: 0,
      message: `${omitted} more findings were left out of this response (at most ${max} are listed); the verdict counts them all`,
      snippet: '',
      remediation: rules[RuleId.FINDINGS_TRUNCATED].remediation,
    },
  ];
}
