import { compareConfidence, compareSeverity, Confidence, Severity, Verdict, type Detection, type Finding } from './findings';

/**
 * What the policy does with one finding: BLOCK (the check fails, the
 * findings go back to the coder), WARN (recorded, the task goes on), ALLOW
 * (listed for the record, changes nothing) or IGNORE (dropped from the answer).
 */
export const CodeAction = { BLOCK: 'block', WARN: 'warn', ALLOW: 'allow', IGNORE: 'ignore' } as const;
export type CodeAction = (typeof CodeAction)[keyof typeof CodeAction];

/** A severity and a confidence a finding must both reach. */
export interface Threshold {
  readonly severity: Severity;
  readonly confidence: Confidence;
}

/**
 * One entry of `code.rules`: findings whose rule id matches one of `ids`
 * (and, when `paths` is set, whose file matches one of `paths`) get `action`.
 */
export interface CodeRule {
  /**
   * Rule ids, exact (`py.sql-string-format`, `bandit.B602`,
   * `eslint.security/detect-eval-with-expression`) or with `*` for any run of
   * characters (`bandit.B3*`, `eslint.security/*`).
   */
  readonly ids: readonly string[];
  /**
   * File globs: `*` is any run of characters but `/`, `**` any number of
   * directories, `?` one character. A glob without `/` matches the file name
   * in any directory (`test_*.py`). Unset: every file.
   */
  readonly paths?: readonly string[];
  readonly action: CodeAction;
  /** Why, for the people who read the config. */
  readonly reason?: string;
}

/**
 * CheckCode's policy: the first rule that matches a finding decides its
 * action; a finding no rule matches blocks when it reaches `block`, warns
 * when it reaches `warn`, and is allowed (listed) otherwise.
 */
export interface CodePolicy {
  readonly rules: readonly CodeRule[];
  readonly block: Threshold;
  readonly warn: Threshold;
}

const testFiles = ['test_*.py', '*_test.py', 'conftest.py', 'tests/**', '**/tests/**', 'test/**', '**/test/**', '*.test.ts', '*.test.js', '*.spec.ts', '*.spec.js'];

/** The rules config/safety.yaml writes out: quiet the scanners' noise about ordinary code, never hide a real danger. */
export const defaultCodeRules: readonly CodeRule[] = Object.freeze([
  {
    ids: ['bandit.B101'],
    paths: testFiles,
    action: CodeAction.IGNORE,
    reason: 'pytest checks with assert; asserts in tests are how tests work',
  },
  {
    ids: ['py.hardcoded-password', 'bandit.B105', 'bandit.B106', 'bandit.B107'],
    paths: testFiles,
    action: CodeAction.IGNORE,
    reason: 'tests log in with made-up passwords',
  },
  {
    ids: ['bandit.B404', 'bandit.B603', 'bandit.B607'],
    action: CodeAction.IGNORE,
    reason: 'importing subprocess and running a program from a list without a shell is the safe way; shells are caught by py.subprocess-shell, bandit.B602 and bandit.B605',
  },
  {
    ids: ['eslint.security/detect-object-injection', 'eslint.security/detect-non-literal-fs-filename'],
    action: CodeAction.IGNORE,
    reason: 'these fire on every obj[key] and every fs call with a variable path; write-outside-workspace checks the paths that matter',
  },
  {
    ids: ['eslint.security/detect-possible-timing-attacks', 'eslint.security/detect-non-literal-regexp'],
    action: CodeAction.ALLOW,
    reason: 'these fire on any comparison with a variable named token or password and on any RegExp built from a variable; listed, never a warning',
  },
]) as readonly CodeRule[];

/** The policy CheckCode applies when the config sets none: block HIGH and worse when at least MEDIUM-sure, warn from LOW. */
export const defaultCodePolicy: CodePolicy = Object.freeze({
  rules: defaultCodeRules,
  block: Object.freeze({ severity: Severity.HIGH, confidence: Confidence.MEDIUM }),
  warn: Object.freeze({ severity: Severity.LOW, confidence: Confidence.LOW }),
});

/** The action `policy` gives `detection`; see `CodePolicy`. */
export function actionOf(policy: CodePolicy, detection: Detection): CodeAction {
  const rule = policy.rules.find((candidate) => matchesRule(candidate, detection));
  if (rule !== undefined) return rule.action;
  if (reaches(detection, policy.block)) return CodeAction.BLOCK;
  if (reaches(detection, policy.warn)) return CodeAction.WARN;
  return CodeAction.ALLOW;
}

/** The findings `detections` become under `policy`, in the same order; IGNOREd ones are dropped. */
export function applyPolicy(policy: CodePolicy, detections: readonly Detection[]): Finding[] {
  const findings: Finding[] = [];
  for (const detection of detections) {
    const action = actionOf(policy, detection);
    if (action !== CodeAction.IGNORE) findings.push({ ...detection, action: actionVerdicts[action] });
  }
  return findings;
}

const actionVerdicts: Readonly<Record<Exclude<CodeAction, 'ignore'>, Verdict>> = { block: Verdict.BLOCK, warn: Verdict.WARN, allow: Verdict.ALLOW };

function reaches(detection: Detection, threshold: Threshold): boolean {
  return compareSeverity(detection.severity, threshold.severity) >= 0 && compareConfidence(detection.confidence, threshold.confidence) >= 0;
}

function matchesRule(rule: CodeRule, detection: Detection): boolean {
  if (!rule.ids.some((id) => idPattern(id).test(detection.ruleId))) return false;
  return rule.paths === undefined || rule.paths.some((glob) => pathPattern(glob).test(detection.path));
}

// Policies are few and fixed at start; their patterns are compiled once each.
const idPatterns = new Map<string, RegExp>();
const pathPatterns = new Map<string, RegExp>();

/** `bandit.B3*` as a regular expression: `*` is any run of characters, everything else literal. */
export function idPattern(id: string): RegExp {
  let pattern = idPatterns.get(id);
  if (pattern === undefined) {
    pattern = new RegExp(`^${id.split('*').map(escapeRegExp).join('.*')}$`);
    idPatterns.set(id, pattern);
  }
  return pattern;
}

/** A file glob as a regular expression; see `CodeRule.paths`. */
export function pathPattern(glob: string): RegExp {
  let pattern = pathPatterns.get(glob);
  if (pattern === undefined) {
    const anchored = glob.includes('/') ? glob.replace(/^\/+/, '') : `**/${glob}`;
    let source = '';
    for (let index = 0; index < anchored.length; index += 1) {
      const char = anchored[index] ?? '';
      if (anchored.startsWith('**/', index)) {
        source += '(?:[^/]*/)*';
        index += 2;
      } else if (anchored.startsWith('**', index)) {
        source += '.*';
        index += 1;
      } else if (char === '*') source += '[^/]*';
      else if (char === '?') source += '[^/]';
      else source += escapeRegExp(char);
    }
    pattern = new RegExp(`^${source}$`);
    pathPatterns.set(glob, pattern);
  }
  return pattern;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * When CheckCode runs Bandit over the Python files: AUTO when a sandbox is
 * configured (if the job fails, an INFO finding says why and the other
 * scanners still decide), REQUIRED (no answer without Bandit: the check
 * fails with a retryable UNAVAILABLE), OFF.
 */
export const BanditMode = { AUTO: 'auto', REQUIRED: 'required', OFF: 'off' } as const;
export type BanditMode = (typeof BanditMode)[keyof typeof BanditMode];

/** Which scanners CheckCode runs besides the built-in rules, and the policy over all of them. */
export interface CodeCheckSettings {
  readonly policy: CodePolicy;
  readonly bandit: BanditMode;
  /** Longest a Bandit job may take, ms; it also ends 1 s before the call's deadline. */
  readonly banditTimeoutMs: number;
  /** Run eslint-plugin-security on JavaScript and TypeScript files. */
  readonly eslint: boolean;
}

/** The settings config/safety.yaml writes out: Bandit when a sandbox is there, ESLint on, `defaultCodePolicy`. */
export const defaultCodeCheckSettings: CodeCheckSettings = Object.freeze({ policy: defaultCodePolicy, bandit: BanditMode.AUTO, banditTimeoutMs: 30_000, eslint: true });
