import type { Lesson, Plan, Reflection, SafetyFinding, SourceFile, TestDispute, TestReport } from '@ratchet/contracts';
import { TestCaseStatus } from '@ratchet/contracts';

/** Characters of one file shown to a model; longer files are cut with a marker. */
const maxFileChars = 40_000;

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

/** Safety findings one per line with rule, place and remedy. */
export function formatFindings(findings: readonly SafetyFinding[]): string {
  if (findings.length === 0) return '(none)';
  return findings.map((finding) => `- [${finding.ruleId}] ${finding.path}:${finding.line}: ${finding.message}${finding.remediation ? ` Fix: ${finding.remediation}` : ''}`).join('\n');
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

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
