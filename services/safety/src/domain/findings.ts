import { Severity, type SafetyFinding } from '@ratchet/contracts';

/** Stable ids of the rules; findings, lessons and docs refer to them. */
export const RuleId = {
  PATH_OUTSIDE_WORKSPACE: 'path-outside-workspace',
  WRITE_OUTSIDE_WORKSPACE: 'write-outside-workspace',
  PYTHON_DYNAMIC_EVAL: 'python-dynamic-eval',
  PYTHON_OS_COMMAND: 'python-os-command',
  PYTHON_SUBPROCESS_SHELL: 'python-subprocess-shell',
  JS_CHILD_PROCESS: 'js-child-process',
  JS_DYNAMIC_EVAL: 'js-dynamic-eval',
  JS_FUNCTION_CONSTRUCTOR: 'js-function-constructor',
  JS_VM: 'js-vm',
  PARSE_ERROR: 'parse-error',
} as const;
export type RuleId = (typeof RuleId)[keyof typeof RuleId];

interface RuleText {
  readonly severity: Severity;
  readonly remediation: string;
}

const rules: Readonly<Record<RuleId, RuleText>> = {
  [RuleId.PATH_OUTSIDE_WORKSPACE]: { severity: Severity.SEVERITY_CRITICAL, remediation: 'Use a relative path inside the workspace, e.g. src/app.py.' },
  [RuleId.WRITE_OUTSIDE_WORKSPACE]: { severity: Severity.SEVERITY_HIGH, remediation: 'Write only to relative paths inside the workspace (or a temporary directory the caller passes in).' },
  [RuleId.PYTHON_DYNAMIC_EVAL]: { severity: Severity.SEVERITY_HIGH, remediation: 'Do not evaluate code built at run time; parse data with json or ast.literal_eval, or dispatch through a dict of functions.' },
  [RuleId.PYTHON_OS_COMMAND]: { severity: Severity.SEVERITY_HIGH, remediation: 'Do not run shell commands; use the standard library for the job (pathlib, shutil, json) instead.' },
  [RuleId.PYTHON_SUBPROCESS_SHELL]: { severity: Severity.SEVERITY_HIGH, remediation: 'Never pass shell=True; call the program directly with a list of arguments, or avoid subprocesses.' },
  [RuleId.JS_CHILD_PROCESS]: { severity: Severity.SEVERITY_HIGH, remediation: 'Do not spawn processes; implement the behaviour in JavaScript/TypeScript.' },
  [RuleId.JS_DYNAMIC_EVAL]: { severity: Severity.SEVERITY_HIGH, remediation: 'Do not evaluate code built at run time; parse data with JSON.parse or dispatch through a map of functions.' },
  [RuleId.JS_FUNCTION_CONSTRUCTOR]: { severity: Severity.SEVERITY_HIGH, remediation: 'Do not build functions from strings; write the function in the source.' },
  [RuleId.JS_VM]: { severity: Severity.SEVERITY_HIGH, remediation: 'Do not run code through the vm module.' },
  [RuleId.PARSE_ERROR]: { severity: Severity.SEVERITY_LOW, remediation: 'Fix the syntax error at this line.' },
};

/** A finding of `rule` at a 0-based tree-sitter position (reported 1-based). */
export function finding(rule: RuleId, path: string, position: { row: number; column: number }, message: string, source: string): SafetyFinding {
  const snippet = source.split('\n')[position.row] ?? '';
  return {
    ruleId: rule,
    severity: rules[rule].severity,
    path,
    line: position.row + 1,
    column: position.column + 1,
    message,
    snippet: snippet.length > 200 ? `${snippet.slice(0, 200)}...` : snippet.trim(),
    remediation: rules[rule].remediation,
  };
}

/** True for string literals that point outside the workspace: absolute, home-relative, drive letters, or climbing with `..`. */
export function escapesWorkspace(literal: string): boolean {
  if (literal.startsWith('/') || literal.startsWith('~') || /^[A-Za-z]:[\\/]/.test(literal) || literal.startsWith('\\\\')) return true;
  return literal.split(/[\\/]/).includes('..');
}
