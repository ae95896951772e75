import { Confidence, Severity, snippetOf, Tool, type Detection } from './findings';

/** The eslint-plugin-security rules CheckCode runs; findings carry `eslint.security/<rule>`. */
export const EslintRule = {
  DETECT_BIDI_CHARACTERS: 'detect-bidi-characters',
  DETECT_BUFFER_NOASSERT: 'detect-buffer-noassert',
  DETECT_CHILD_PROCESS: 'detect-child-process',
  DETECT_DISABLE_MUSTACHE_ESCAPE: 'detect-disable-mustache-escape',
  DETECT_EVAL_WITH_EXPRESSION: 'detect-eval-with-expression',
  DETECT_INVISIBLE_CHARACTERS: 'detect-invisible-characters',
  DETECT_NEW_BUFFER: 'detect-new-buffer',
  DETECT_NO_CSRF_BEFORE_METHOD_OVERRIDE: 'detect-no-csrf-before-method-override',
  DETECT_NON_LITERAL_FS_FILENAME: 'detect-non-literal-fs-filename',
  DETECT_NON_LITERAL_REGEXP: 'detect-non-literal-regexp',
  DETECT_NON_LITERAL_REQUIRE: 'detect-non-literal-require',
  DETECT_OBJECT_INJECTION: 'detect-object-injection',
  DETECT_POSSIBLE_TIMING_ATTACKS: 'detect-possible-timing-attacks',
  DETECT_PSEUDO_RANDOM_BYTES: 'detect-pseudoRandomBytes',
  DETECT_UNSAFE_REGEX: 'detect-unsafe-regex',
} as const;
export type EslintRule = (typeof EslintRule)[keyof typeof EslintRule];

/** The prefix of ESLint findings' rule ids: `eslint.security/detect-eval-with-expression`. */
export const eslintRulePrefix = 'eslint.security/';

interface EslintRuleText {
  readonly severity: Severity;
  readonly confidence: Confidence;
  readonly cwe: string;
  readonly remediation: string;
}

const { LOW, MEDIUM, HIGH } = Severity;

/**
 * Severity, confidence, CWE and remedy of each plugin rule (the plugin rates
 * none of them). Dangers that are real wherever they fire are HIGH; rules
 * that fire on ordinary code (every `obj[key]`, every fs call with a
 * variable path) are LOW and the default policy ignores them.
 */
export const eslintRuleTexts: Readonly<Record<EslintRule, EslintRuleText>> = {
  [EslintRule.DETECT_BIDI_CHARACTERS]: { severity: HIGH, confidence: Confidence.HIGH, cwe: 'CWE-451', remediation: 'Remove the bidirectional control characters; they make the code read differently from what runs (Trojan Source).' },
  [EslintRule.DETECT_BUFFER_NOASSERT]: { severity: MEDIUM, confidence: Confidence.HIGH, cwe: 'CWE-119', remediation: 'Drop the noAssert argument so out-of-range offsets throw.' },
  [EslintRule.DETECT_CHILD_PROCESS]: { severity: HIGH, confidence: Confidence.MEDIUM, cwe: 'CWE-78', remediation: "Use execFile('program', [args]) without a shell instead of exec() with a string built at run time." },
  [EslintRule.DETECT_DISABLE_MUSTACHE_ESCAPE]: { severity: HIGH, confidence: Confidence.HIGH, cwe: 'CWE-79', remediation: 'Keep template escaping on (escapeMarkup = true); escape or sanitize any HTML you must insert.' },
  [EslintRule.DETECT_EVAL_WITH_EXPRESSION]: { severity: HIGH, confidence: Confidence.MEDIUM, cwe: 'CWE-95', remediation: 'Do not evaluate code built at run time: parse data with JSON.parse, or dispatch through a map of functions.' },
  [EslintRule.DETECT_INVISIBLE_CHARACTERS]: { severity: MEDIUM, confidence: Confidence.MEDIUM, cwe: 'CWE-451', remediation: 'Remove the invisible characters, or write them as escapes (\\u200b) if they are meant.' },
  [EslintRule.DETECT_NEW_BUFFER]: { severity: MEDIUM, confidence: Confidence.MEDIUM, cwe: 'CWE-908', remediation: 'Use Buffer.alloc(size) or Buffer.from(data) instead of new Buffer().' },
  [EslintRule.DETECT_NO_CSRF_BEFORE_METHOD_OVERRIDE]: { severity: MEDIUM, confidence: Confidence.HIGH, cwe: 'CWE-352', remediation: 'Register methodOverride() before the CSRF middleware.' },
  [EslintRule.DETECT_NON_LITERAL_FS_FILENAME]: { severity: LOW, confidence: Confidence.LOW, cwe: 'CWE-22', remediation: 'Resolve the path and check it stays inside the directory you mean before using it.' },
  [EslintRule.DETECT_NON_LITERAL_REGEXP]: { severity: LOW, confidence: Confidence.LOW, cwe: 'CWE-1333', remediation: 'Escape input before building a RegExp from it, or match with string methods.' },
  [EslintRule.DETECT_NON_LITERAL_REQUIRE]: { severity: MEDIUM, confidence: Confidence.MEDIUM, cwe: 'CWE-829', remediation: 'Require modules by literal name, or pick them from a fixed map.' },
  [EslintRule.DETECT_OBJECT_INJECTION]: { severity: LOW, confidence: Confidence.LOW, cwe: 'CWE-915', remediation: 'Use a Map, or check the key against an allowed list before obj[key].' },
  [EslintRule.DETECT_POSSIBLE_TIMING_ATTACKS]: { severity: LOW, confidence: Confidence.LOW, cwe: 'CWE-208', remediation: 'Compare secrets with crypto.timingSafeEqual.' },
  [EslintRule.DETECT_PSEUDO_RANDOM_BYTES]: { severity: MEDIUM, confidence: Confidence.HIGH, cwe: 'CWE-338', remediation: 'Use crypto.randomBytes.' },
  [EslintRule.DETECT_UNSAFE_REGEX]: { severity: MEDIUM, confidence: Confidence.MEDIUM, cwe: 'CWE-1333', remediation: 'Rewrite the pattern without nested quantifiers (such as (a+)+), or bound the input length.' },
};

/** What ESLint reports for one problem: `Linter.LintMessage`'s fields the mapping reads. */
export interface EslintMessage {
  readonly ruleId: string | null;
  readonly message: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
}

/**
 * One ESLint message as a detection: `eslint.security/<rule>`, the rule's
 * severity, confidence, CWE and remedy, the source line as the snippet.
 * detect-child-process also fires on a bare `require('child_process')`,
 * which runs nothing: that message is LOW. Undefined for messages of other
 * rules (and parse errors, which have no rule).
 */
export function detectionOfEslintMessage(path: string, lines: readonly string[], message: EslintMessage): Detection | undefined {
  const rule = message.ruleId?.startsWith('security/') === true ? (message.ruleId.slice('security/'.length) as EslintRule) : undefined;
  const text = rule === undefined ? undefined : eslintRuleTexts[rule];
  if (rule === undefined || text === undefined) return undefined;
  const loadOnly = rule === EslintRule.DETECT_CHILD_PROCESS && message.message.startsWith('Found require(');
  return {
    ruleId: `${eslintRulePrefix}${rule}`,
    severity: loadOnly ? LOW : text.severity,
    path,
    line: message.line,
    column: message.column,
    message: `${message.message.trim()} (${rule})`,
    snippet: snippetOf(lines[message.line - 1] ?? ''),
    remediation: text.remediation,
    cwe: text.cwe,
    confidence: loadOnly ? Confidence.LOW : text.confidence,
    tool: Tool.ESLINT,
  };
}
