import type { Lesson, Plan, ProjectProfile, Reflection, ReviewFinding, SafetyFinding, SourceFile, TaskSpec, TestDispute, TestReport } from '@ratchet/contracts';
import { SafetyVerdict, Severity, TestCaseStatus } from '@ratchet/contracts';
import { countTokens, truncateToTokens } from '@ratchet/agent';

/** Characters of one file shown to a model; longer files are cut with a marker. */
const maxFileChars = 40_000;

/** Tokens of a goal a role's prompt holds by default; a goal is rarely a hundredth of it. */
export const defaultGoalTokens = 6_000;

/**
 * The goal as a prompt shows it: whole while it fits `maxTokens` (default
 * `defaultGoalTokens`), else its beginning cut at that many tokens with a
 * note saying so. The caller keeps the full text (the orchestrator stores it
 * with the task); a very long goal must not crowd out the rest of the prompt.
 */
export function goalForPrompt(goal: string, maxTokens = defaultGoalTokens): string {
  const text = goal.trim();
  const tokens = countTokens(text);
  if (tokens <= maxTokens) return text;
  const shown = truncateToTokens(text, maxTokens);
  return `${shown}\n[The goal is longer than a prompt can hold: its first ${maxTokens} of ${tokens} tokens are shown above, the rest is cut. Work from what is shown.]`;
}

/** Files as fenced blocks headed by their path; `none` when empty. */
export function formatFiles(files: readonly SourceFile[]): string {
  if (files.length === 0) return '(none)';
  return files
    .map((file) => {
      const content = file.content.length > maxFileChars ? `${file.content.slice(0, maxFileChars)}\n... (${file.content.length - maxFileChars} more characters cut)` : file.content;
      return `--- ${file.path}\n\`\`\`\n${content}\n\`\`\``;
    })
    .join('\n\n');
}

/** Lessons as a numbered list with their ids, so a model can cite them. */
export function formatLessons(lessons: readonly Lesson[]): string {
  if (lessons.length === 0) return '(none yet)';
  // The error signature is for matching in memory; its placeholders (<n>, <v>) mean nothing to a model.
  return lessons.map((lesson, index) => `${index + 1}. [${lesson.id}] ${lesson.title}: ${lesson.body}`).join('\n');
}

/**
 * The lessons a reply cites, as ids of `offered`: a cited item may be a
 * lesson's id or its number in the `formatLessons` list ("2", "#2", "[2]").
 * Anything else is dropped (a model inventing ids must not credit lessons).
 */
export function citedLessonIds(cited: readonly string[], offered: readonly Lesson[]): string[] {
  const ids = new Set(offered.map((lesson) => lesson.id));
  const found = cited.flatMap((item) => {
    const text = item.trim();
    if (ids.has(text)) return [text];
    const number = /^(?:#|\[)?(\d{1,3})\]?$/.exec(text)?.[1];
    const lesson = number === undefined ? undefined : offered[Number(number) - 1];
    return lesson === undefined ? [] : [lesson.id];
  });
  return [...new Set(found)];
}

/** A plan as readable text. */
export function formatPlan(plan: Plan | undefined): string {
  if (plan === undefined) return '(no plan)';
  const steps = plan.steps.map((step) => `${step.number}. ${step.description}${step.paths.length > 0 ? ` [${step.paths.join(', ')}]` : ''}`);
  const files = plan.files.map((file) => `- ${file.path}${file.isTest ? ' (test)' : ''}: ${file.purpose}`);
  const dependencies = plan.dependencies.map((dependency) => `${dependency.name}${dependency.versionSpec === '' ? '' : ` ${dependency.versionSpec}`}`);
  // Only what the plan declares is installed: the coder and tester must know it, and that nothing else is.
  const packages = `Third-party packages: ${dependencies.length === 0 ? 'none (the standard library only)' : dependencies.join(', ')}`;
  return [`Summary: ${plan.summary}`, 'Steps:', ...steps, 'Files:', ...files, `Test strategy: ${plan.testStrategy}`, packages].join('\n');
}

/** Failing cases of a test report with their messages; a summary line first. */
export function formatTestReport(report: TestReport | undefined, maxCases = 20): string {
  if (report === undefined) return '(no tests ran)';
  if (!report.parsed) return `No test report could be read: ${report.parseError || 'unknown reason'}`;
  const header = `${report.passed}/${report.total} passed, ${report.failed} failed, ${report.errored} errored, ${report.skipped} skipped`;
  const failing = report.cases.filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED);
  const lines = failing.slice(0, maxCases).map((testCase) => {
    const detail = testCase.failureDetail.length > 2_000 ? `${testCase.failureDetail.slice(0, 2_000)}...` : testCase.failureDetail;
    return `- ${testCase.suite ? `${testCase.suite}::` : ''}${testCase.name}: ${testCase.failureMessage}${detail ? `\n${indent(detail)}` : ''}`;
  });
  if (failing.length > maxCases) lines.push(`... and ${failing.length - maxCases} more failing cases`);
  return [header, ...lines].join('\n');
}

/**
 * Whether a safety finding blocks: the change introduced it (not
 * pre-existing) and the policy's action is BLOCK or REQUIRE_APPROVAL (an
 * unset action counts as BLOCK, as the contract says). The one definition
 * every prompt, event and error uses, so a finding's status reads the same
 * everywhere.
 */
export function isBlockingFinding(finding: SafetyFinding): boolean {
  return (
    !finding.preExisting &&
    (finding.action === SafetyVerdict.SAFETY_VERDICT_BLOCK || finding.action === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL || finding.action === SafetyVerdict.SAFETY_VERDICT_UNSPECIFIED)
  );
}

/** The findings that block (see `isBlockingFinding`). */
export function blockingSafetyFindings(findings: readonly SafetyFinding[]): SafetyFinding[] {
  return findings.filter(isBlockingFinding);
}

/**
 * Safety findings one per line with rule, place, status (blocks or
 * advisory) and remedy. Pre-existing findings (the project had them before
 * the change) are not listed, only counted: they are not the model's to fix.
 */
export function formatFindings(findings: readonly SafetyFinding[]): string {
  const own = findings.filter((finding) => !finding.preExisting);
  const preExisting = findings.length - own.length;
  const lines = own.map(
    (finding) => `- [${finding.ruleId}] ${finding.path}:${finding.line} (${isBlockingFinding(finding) ? 'blocks' : 'advisory'}): ${finding.message}${finding.remediation ? ` Fix: ${finding.remediation}` : ''}`,
  );
  if (preExisting > 0) lines.push(`(${preExisting} pre-existing finding${preExisting === 1 ? '' : 's'} in the code before the change: not blocking, leave them as they are)`);
  return lines.length === 0 ? '(none)' : lines.join('\n');
}

/** Earlier reflections, oldest first. */
export function formatReflections(reflections: readonly Reflection[]): string {
  if (reflections.length === 0) return '(none)';
  return reflections.map((reflection, index) => `${index + 1}. cause: ${reflection.rootCause}; tried: ${reflection.fixDirection}`).join('\n');
}

/** Disputed tests as a list for a prompt: `- path::test: reason`, or `(none)`. */
export function formatDisputes(disputes: readonly TestDispute[]): string {
  if (disputes.length === 0) return '(none)';
  return disputes.map((dispute) => `- ${dispute.path}${dispute.testName ? `::${dispute.testName}` : ''}: ${dispute.reason}`).join('\n');
}

/**
 * A task's spec as a prompt section headed "Spec", or '' when the task has
 * none (unset, or every field empty), so prompts of tasks that were not
 * reprompted stay as they were. Empty parts are left out.
 */
export function formatSpec(spec: TaskSpec | undefined): string {
  if (spec === undefined) return '';
  const lines = specParts(spec).flatMap((part) =>
    typeof part.value === 'string' ? [`${part.label}: ${part.value}`] : [`${part.label}:`, ...part.value.map((item, index) => (part.numbered ? `${index + 1}. ${item}` : `- ${item}`))],
  );
  if (lines.length === 0) return '';
  return ['Spec (the goal made precise; where it is more specific than the goal, follow it):', ...lines].join('\n');
}

/** One part of a spec: a text, or a list (numbered for acceptance criteria). */
export interface SpecPart {
  readonly label: string;
  readonly value: string | readonly string[];
  readonly numbered?: boolean;
}

/** A spec's non-empty parts in reading order, trimmed: what a prompt and `ratchet show` both render. */
export function specParts(spec: TaskSpec): SpecPart[] {
  const parts: SpecPart[] = [];
  const text = (label: string, value: string) => {
    if (value.trim() !== '') parts.push({ label, value: value.trim() });
  };
  const list = (label: string, items: readonly string[], numbered = false) => {
    const kept = items.map((item) => item.trim()).filter((item) => item !== '');
    if (kept.length > 0) parts.push({ label, value: kept, numbered });
  };
  text('Summary', spec.summary);
  text('Behaviour', spec.behaviour);
  text('Inputs', spec.inputs);
  text('Outputs', spec.outputs);
  list('Interface', spec.interface);
  list('Edge cases', spec.edgeCases);
  list('Acceptance criteria', spec.acceptanceCriteria, true);
  list('Assumptions (where the goal left a choice open)', spec.assumptions);
  return parts;
}

/** Characters of a profile's own prompt text shown to a model; longer text is cut with a marker. */
const maxProfilePromptChars = 4_000;

/**
 * A project profile as a prompt section headed "Project profile", or ''
 * when the task has none (unset or unnamed and empty), so prompts of tasks
 * without a profile stay as they were. The layout is listed by path and
 * purpose; starting contents are not repeated (they are in the workspace).
 */
export function formatProfile(profile: ProjectProfile | undefined): string {
  if (profile === undefined) return '';
  const empty = profile.name.trim() === '' && profile.description.trim() === '' && profile.layout.length === 0 && profile.testStyle.trim() === '' && profile.dependencies.length === 0 && profile.prompt.trim() === '';
  if (empty) return '';
  const name = profile.name.trim() === '' ? '(unnamed)' : profile.name.trim();
  const lines = [`Project profile: ${name}${profile.description.trim() === '' ? '' : ` (${profile.description.trim()})`}`];
  if (profile.layout.length > 0) {
    lines.push('Layout:', ...profile.layout.map((file) => `- ${file.path}${file.purpose.trim() === '' ? '' : `: ${file.purpose.trim()}`}${file.content === '' ? '' : ' (starting content given)'}`));
  }
  if (profile.testStyle.trim() !== '') lines.push(`Test style: ${profile.testStyle.trim()}`);
  if (profile.dependencies.length > 0) {
    lines.push(`Packages the profile uses: ${profile.dependencies.map((dependency) => `${dependency.name}${dependency.versionSpec === '' ? '' : ` ${dependency.versionSpec}`}`).join(', ')}`);
  }
  const prompt = profile.prompt.trim();
  if (prompt !== '') {
    const shown = prompt.length > maxProfilePromptChars ? `${prompt.slice(0, maxProfilePromptChars)}\n... (${prompt.length - maxProfilePromptChars} more characters cut)` : prompt;
    lines.push(`Profile instructions:\n${shown}`);
  }
  return lines.join('\n');
}

/** A proto severity as a word for a prompt. */
const severityWords: Readonly<Partial<Record<Severity, string>>> = {
  [Severity.SEVERITY_UNSPECIFIED]: 'unrated',
  [Severity.SEVERITY_INFO]: 'info',
  [Severity.SEVERITY_LOW]: 'low',
  [Severity.SEVERITY_MEDIUM]: 'medium',
  [Severity.SEVERITY_HIGH]: 'high',
  [Severity.SEVERITY_CRITICAL]: 'critical',
};

/**
 * Review and audit findings as a prompt section, one finding per line
 * (severity, place, category and CWE, what is wrong, what to change), or ''
 * when there are none, so prompts of attempts without findings stay as they
 * were.
 */
export function formatReviewFindings(findings: readonly ReviewFinding[]): string {
  if (findings.length === 0) return '';
  const lines = findings.map((finding) => {
    const place = finding.path === '' ? '(the change as a whole)' : finding.line > 0 ? `${finding.path}:${finding.line}` : finding.path;
    const kind = [finding.category, finding.cwe].filter((part) => part !== '').join(', ');
    const source = finding.source === '' ? '' : ` from ${finding.source}`;
    const suggestion = finding.suggestion.trim() === '' ? '' : ` Fix: ${finding.suggestion.trim()}`;
    return `- [${severityWords[finding.severity] ?? 'unrated'}${finding.blocking ? ', blocking' : ''}${source}] ${place}${kind === '' ? '' : ` (${kind})`}: ${finding.message.trim()}${suggestion}`;
  });
  return ['Review and audit findings on the last attempt (a blocking one counts like a failing test: it must be fixed):', ...lines].join('\n');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
