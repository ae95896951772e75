import { z } from 'zod';
import type { Change } from './change';

/** How bad a finding is, as domain values (the proto enum is converted at the edge). */
export const SeverityName = { INFO: 'info', LOW: 'low', MEDIUM: 'medium', HIGH: 'high', CRITICAL: 'critical' } as const;
export type SeverityName = (typeof SeverityName)[keyof typeof SeverityName];

const severityRank: Readonly<Record<SeverityName, number>> = { info: 0, low: 1, medium: 2, high: 3, critical: 4 };

/** Words models use for a severity, beyond the five names. */
const severitySynonyms: Readonly<Record<string, SeverityName>> = {
  informational: 'info',
  information: 'info',
  note: 'info',
  none: 'info',
  trivial: 'low',
  minor: 'low',
  moderate: 'medium',
  warning: 'medium',
  warn: 'medium',
  major: 'high',
  serious: 'high',
  severe: 'high',
  error: 'high',
  blocker: 'critical',
  fatal: 'critical',
};

/**
 * A model's severity text as a SeverityName: the five names in any case and
 * spacing ("High", " CRITICAL "), and common synonyms ("moderate", "major",
 * "blocker"); undefined for anything else.
 */
export function parseSeverity(text: string): SeverityName | undefined {
  const word = text.trim().toLowerCase();
  if (Object.hasOwn(severityRank, word)) return word as SeverityName;
  return severitySynonyms[word];
}

/** A severity in a reply: the JSON Schema offers the five names; synonyms and other cases are accepted and mapped. */
export const severitySchema = z.preprocess(
  (value) => (typeof value === 'string' ? (parseSeverity(value) ?? value) : value),
  z.enum([SeverityName.CRITICAL, SeverityName.HIGH, SeverityName.MEDIUM, SeverityName.LOW, SeverityName.INFO]),
);

/** Whether `severity` is high or critical: such findings block. */
export function isHighSeverity(severity: SeverityName): boolean {
  return severityRank[severity] >= severityRank.high;
}

/** A review finding's categories. */
export const ReviewCategory = {
  CORRECTNESS: 'correctness',
  SECURITY: 'security',
  ERROR_HANDLING: 'error-handling',
  PERFORMANCE: 'performance',
  DESIGN: 'design',
  TESTS: 'tests',
  MAINTAINABILITY: 'maintainability',
  DOCUMENTATION: 'documentation',
  STYLE: 'style',
  OTHER: 'other',
} as const;
export type ReviewCategory = (typeof ReviewCategory)[keyof typeof ReviewCategory];

const categorySynonyms: Readonly<Record<string, ReviewCategory>> = {
  bug: 'correctness',
  logic: 'correctness',
  functionality: 'correctness',
  'error handling': 'error-handling',
  errors: 'error-handling',
  test: 'tests',
  testing: 'tests',
  readability: 'maintainability',
  docs: 'documentation',
};

/** A category in a reply: the JSON Schema offers the names; other words go to the closest one, or `other`. */
export const reviewCategorySchema = z.preprocess((value) => {
  if (typeof value !== 'string') return value;
  const word = value.trim().toLowerCase().replace(/[\s_]+/g, ' ');
  const hyphenated = word.replace(/ /g, '-');
  if ((Object.values(ReviewCategory) as string[]).includes(hyphenated)) return hyphenated;
  return categorySynonyms[word] ?? categorySynonyms[hyphenated] ?? ReviewCategory.OTHER;
}, z.enum(Object.values(ReviewCategory) as [ReviewCategory, ...ReviewCategory[]]));

/**
 * A CWE id as `CWE-<n>` from the ways models and scanners write it
 * ("CWE-89", "cwe 89", "89", "CWE-89: SQL Injection"); '' when there is none.
 */
export function normalizeCwe(text: string): string {
  const number = /^\s*(?:cwe)?[\s:_-]*(\d{1,5})\b/i.exec(text)?.[1];
  return number === undefined ? '' : `CWE-${Number(number)}`;
}

/** The OWASP Top 10 (2021) category of the CWE ids the auditor is told about. */
const owaspOfCwe: Readonly<Record<string, string>> = {
  'CWE-22': 'A01:2021-Broken Access Control',
  'CWE-327': 'A02:2021-Cryptographic Failures',
  'CWE-328': 'A02:2021-Cryptographic Failures',
  'CWE-330': 'A02:2021-Cryptographic Failures',
  'CWE-78': 'A03:2021-Injection',
  'CWE-79': 'A03:2021-Injection',
  'CWE-89': 'A03:2021-Injection',
  'CWE-94': 'A03:2021-Injection',
  'CWE-95': 'A03:2021-Injection',
  'CWE-611': 'A05:2021-Security Misconfiguration',
  'CWE-798': 'A07:2021-Identification and Authentication Failures',
  'CWE-259': 'A07:2021-Identification and Authentication Failures',
  'CWE-502': 'A08:2021-Software and Data Integrity Failures',
  'CWE-918': 'A10:2021-Server-Side Request Forgery',
};

/** The OWASP Top 10 (2021) category of a `CWE-<n>` id the table knows; '' otherwise. */
export function owaspCategoryOf(cwe: string): string {
  return owaspOfCwe[cwe] ?? '';
}

/** Where a finding points once checked against the change. */
export interface Placement {
  /** A path of the files after the change, or '' for the change as a whole. */
  readonly path: string;
  /** 1-based and within the file, or 0. */
  readonly line: number;
  /** The finding is about a file that exists but the change does not touch: it is recorded and never blocks. */
  readonly outsideChange: boolean;
  /** Set when the named path is unknown: the finding was re-pointed to the change as a whole, and the message keeps the name. */
  readonly unknownPath?: string;
}

/**
 * Checks where a finding points against the change. A path is matched as
 * written, then without `./`, `a/` or `b/` (diff prefixes); a path no file
 * has is matched by its tail to the one changed file ending in it, else it is
 * re-pointed to the change as a whole (path '', line 0; `unknownPath` keeps
 * the name for the message). A line is clamped to the file: below 1 is 0
 * (no line), past the end is the last line. A file that exists but the change
 * did not touch is kept, marked `outsideChange`.
 */
export function placeFinding(path: string, line: number, change: Pick<Change, 'files' | 'existing'>): Placement {
  const named = path.trim();
  if (named === '') return { path: '', line: 0, outsideChange: false };
  const changed = new Set(change.files.map((file) => file.path));
  const candidates = [named, named.replace(/^\.\//, ''), named.replace(/^[ab]\//, '')];
  let found = candidates.find((candidate) => changed.has(candidate)) ?? candidates.find((candidate) => change.existing.has(candidate));
  if (found === undefined) {
    const tail = named.replace(/^(?:\.\/|[ab]\/)/, '');
    const matching = [...changed].filter((candidate) => candidate === tail || candidate.endsWith(`/${tail}`));
    if (matching.length === 1) found = matching[0];
  }
  if (found === undefined) return { path: '', line: 0, outsideChange: false, unknownPath: named };
  const lines = change.existing.get(found) ?? 0;
  const clamped = !Number.isFinite(line) || line < 1 ? 0 : Math.min(Math.floor(line), Math.max(lines, 1));
  return { path: found, line: clamped, outsideChange: !changed.has(found) };
}

/**
 * The review's blocking rule. A finding blocks when it is about the change
 * (not an untouched file) and either its severity is high or critical, or
 * the reviewer flagged it blocking and it is a medium correctness problem.
 * Low and info findings, and flags on other categories, are recorded only.
 */
export function reviewFindingBlocks(finding: { readonly severity: SeverityName; readonly category: string; readonly flagged: boolean; readonly outsideChange: boolean }): boolean {
  if (finding.outsideChange) return false;
  if (isHighSeverity(finding.severity)) return true;
  return finding.flagged && finding.severity === SeverityName.MEDIUM && finding.category === ReviewCategory.CORRECTNESS;
}

/**
 * The audit's blocking rule: a high or critical finding about the change
 * blocks; for a scanner finding, only when the auditor judged it real.
 */
export function auditFindingBlocks(finding: { readonly severity: SeverityName; readonly outsideChange: boolean; readonly real?: boolean }): boolean {
  return !finding.outsideChange && finding.real !== false && isHighSeverity(finding.severity);
}

/** A finding in domain terms, before its severity becomes the proto enum. */
export interface Finding {
  readonly severity: SeverityName;
  readonly path: string;
  readonly line: number;
  readonly category: string;
  readonly cwe: string;
  readonly message: string;
  readonly suggestion: string;
  readonly blocking: boolean;
  readonly source: string;
}

/**
 * Findings most severe first (blocking before non-blocking at the same
 * severity, then by path and line), without exact repeats (same place,
 * category and message).
 */
export function orderFindings(findings: readonly Finding[]): Finding[] {
  const seen = new Set<string>();
  const unique = findings.filter((finding) => {
    const key = JSON.stringify([finding.path, finding.line, finding.category, finding.cwe, finding.message.trim().toLowerCase()]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return unique.sort(
    (left, right) =>
      severityRank[right.severity] - severityRank[left.severity] ||
      Number(right.blocking) - Number(left.blocking) ||
      (left.path < right.path ? -1 : left.path > right.path ? 1 : 0) ||
      left.line - right.line,
  );
}

/** Who found what: the `source` of the reviewer's and the auditor's own findings (a scanner finding's is its rule id). */
export const FindingSource = { REVIEWER: 'reviewer', AUDITOR: 'auditor' } as const;

function placedMessage(message: string, placement: Placement, line: number): string {
  if (placement.unknownPath === undefined) return message;
  return `(${placement.unknownPath}${line > 0 ? `:${line}` : ''}) ${message}`;
}

/** A reviewer's finding checked against the change (see `placeFinding`), blocking by `reviewFindingBlocks`. */
export function fromReview(
  finding: { readonly severity: SeverityName; readonly path: string; readonly line: number; readonly category: ReviewCategory; readonly message: string; readonly suggestion: string; readonly blocking: boolean },
  change: Pick<Change, 'files' | 'existing'>,
): Finding {
  const placement = placeFinding(finding.path, finding.line, change);
  return {
    severity: finding.severity,
    path: placement.path,
    line: placement.line,
    category: finding.category,
    cwe: '',
    message: placedMessage(finding.message, placement, finding.line),
    suggestion: finding.suggestion,
    blocking: reviewFindingBlocks({ severity: finding.severity, category: finding.category, flagged: finding.blocking, outsideChange: placement.outsideChange }),
    source: FindingSource.REVIEWER,
  };
}

/** An auditor's own finding checked against the change, its CWE normalised and its category filled from the CWE when empty; blocking by `auditFindingBlocks`. */
export function fromAudit(
  finding: { readonly severity: SeverityName; readonly path: string; readonly line: number; readonly category: string; readonly cwe: string; readonly message: string; readonly suggestion: string },
  change: Pick<Change, 'files' | 'existing'>,
): Finding {
  const placement = placeFinding(finding.path, finding.line, change);
  const cwe = normalizeCwe(finding.cwe);
  return {
    severity: finding.severity,
    path: placement.path,
    line: placement.line,
    category: finding.category === '' ? owaspCategoryOf(cwe) : finding.category,
    cwe,
    message: placedMessage(finding.message, placement, finding.line),
    suggestion: finding.suggestion,
    blocking: auditFindingBlocks({ severity: finding.severity, outsideChange: placement.outsideChange }),
    source: FindingSource.AUDITOR,
  };
}

/** A static scanner's finding in domain terms. */
export interface ScannerFinding {
  readonly ruleId: string;
  readonly tool: string;
  readonly severity: SeverityName;
  readonly path: string;
  readonly line: number;
  readonly cwe: string;
  readonly message: string;
  readonly remediation: string;
}

/** The auditor's judgement of a scanner finding. */
export interface ScannerVerdict {
  readonly real: boolean;
  readonly reason: string;
}

/**
 * A scanner finding as an audit finding: its own severity, place and CWE
 * (the OWASP category from the CWE), the auditor's verdict appended to the
 * message, `source` its rule id. It blocks when it is high or critical,
 * about the change, and not judged a false positive (one the auditor did not
 * judge counts as real).
 */
export function fromScanner(finding: ScannerFinding, verdict: ScannerVerdict | undefined, change: Pick<Change, 'files' | 'existing'>): Finding {
  const placement = placeFinding(finding.path, finding.line, change);
  const cwe = normalizeCwe(finding.cwe);
  const judged = verdict === undefined ? ' (not judged by the auditor)' : ` Auditor: ${verdict.real ? 'a real issue' : 'a false positive'}: ${verdict.reason}`;
  return {
    severity: finding.severity,
    path: placement.path,
    line: placement.line,
    category: owaspCategoryOf(cwe),
    cwe,
    message: `${placedMessage(finding.message, placement, finding.line)}${judged}`,
    suggestion: finding.remediation,
    blocking: auditFindingBlocks({ severity: finding.severity, outsideChange: placement.outsideChange, ...(verdict === undefined ? {} : { real: verdict.real }) }),
    source: finding.ruleId || finding.tool || 'scanner',
  };
}
