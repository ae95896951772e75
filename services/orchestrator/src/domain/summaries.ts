import { blockingSafetyFindings } from '@ratchet/prompting';
import { DependencyVerdict, SafetyVerdict, TestEdits, type ClarifyingQuestion, type DependencyDecision, type ReviewFinding, type SafetyFinding, type SourceFile, type TestReport } from '@ratchet/contracts';
import { baselineFailures } from './baseline';
import type { TaskRecord } from './records';

// The text people read: phase summaries in the task's events, status
// reasons and the wording of approval gates. `decide` chooses what happens;
// what it is called is here, so a change of wording never touches a rule.

/** `3/5 tests passed`, or why there is no report. */
export function testSummary(report: TestReport | undefined): string {
  return report === undefined || !report.parsed ? `no test report (${report?.parseError ?? 'none'})` : `${report.passed}/${report.total} tests passed`;
}

/** What the baseline run found, as a line of the task's events. */
export function baselineSummary(report: TestReport): string {
  const failing = baselineFailures(report);
  return failing.length === 0
    ? `baseline: the project's tests pass before any change (${report.passed}/${report.total})`
    : `baseline: before any change ${failing.length} of ${report.total} test(s) fail (${failing.slice(0, 5).join(', ')}${failing.length > 5 ? ', ...' : ''}); a change must fix what the goal is about and break nothing else`;
}

/** The findings that block an attempt, as one line each for the iteration's error and the reflector. */
export function blockingText(findings: readonly ReviewFinding[]): string {
  return findings
    .filter((found) => found.blocking)
    .map((found) => `${found.path === '' ? 'the change' : `${found.path}${found.line > 0 ? `:${found.line}` : ''}`}: ${found.message}${found.cwe === '' ? '' : ` (${found.cwe})`}`)
    .join('; ');
}

/**
 * A safety check's summary: what the change introduced, how much of it
 * blocks, and the pre-existing findings apart. With `asking` (a
 * SAFETY_OVERRIDE gate waits), the findings the policy asks a person about
 * are counted as that, not as blocking.
 */
export function safetySummary(findings: readonly SafetyFinding[], options: { readonly asking?: boolean } = {}): string {
  const introduced = findings.filter((found) => !found.preExisting);
  const asks = (found: SafetyFinding) => options.asking === true && found.action === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL;
  const blocking = blockingSafetyFindings(findings).filter((found) => !asks(found)).length;
  const asked = introduced.filter(asks).length;
  const preExisting = findings.length - introduced.length;
  const decided = blocking > 0 ? `${introduced.length} finding(s), ${blocking} blocking` : `${introduced.length} finding(s), not blocking`;
  const own = asked > 0 ? `${decided}, ${asked} for a person to decide` : decided;
  return preExisting === 0 ? own : `${own}; ${preExisting} pre-existing finding(s) in the changed files, not blocking`;
}

/** A phase's summary with its finding counts. */
export function findingsSummary(findings: readonly ReviewFinding[], summary: string): string {
  const blocking = findings.filter((found) => found.blocking).length;
  return `${findings.length} finding(s), ${blocking} blocking${summary.trim() === '' ? '' : `: ${summary.trim()}`}`;
}

/** One line per question: what the task waits for. */
export function waitingFor(questions: readonly ClarifyingQuestion[], taskId: string): string {
  return `waiting for answers to ${questions.length} question(s) (ratchet answer ${taskId}): ${questions.map((question) => question.question).join(' / ')}`;
}

/**
 * What a plan's completion says: its summary, and whether the user's tests
 * may change (shown, since it changes what passing means); `testsEditable`
 * is the loop's answer (`testsEditable` in next-action.ts).
 */
export function planSummary(task: TaskRecord, testsEditable: boolean): string {
  const plan = task.plan;
  if (plan === undefined) return '';
  if (task.acceptanceTests.length === 0) return plan.summary;
  if (task.testEdits === TestEdits.TEST_EDITS_ALLOWED) return `${plan.summary} (the tests may be edited: allowed for this task)`;
  if (testsEditable) return `${plan.summary} (the tests may be edited: the goal asks to change them${plan.changesTestsReason === '' ? '' : `: ${plan.changesTestsReason}`})`;
  return plan.summary;
}

/** What an approval gate says: one line for lists and notifications, and the detail (Markdown) for the approver. */
export interface GateText {
  readonly summary: string;
  readonly detail: string;
}

const utf8 = new TextEncoder();

/** The FINAL_RESULT gate's text: what passed, the goal, the plan and the files with their sizes. */
export function finalResultGateText(task: Pick<TaskRecord, 'goal' | 'plan'> & { readonly resultFiles: readonly SourceFile[] }, iteration: number, testSummaryText: string): GateText {
  const files = task.resultFiles.map((file) => `- \`${file.path}\` (${utf8.encode(file.content).length} bytes)`).join('\n');
  return {
    summary: `Iteration ${iteration} passed its tests (${testSummaryText}). Approve to accept the result; reject with a comment to have it reworked.`,
    detail: `Goal: ${task.goal}\n\nPlan: ${task.plan?.summary ?? ''}\n\nFiles:\n${files}`,
  };
}

/** The COMMAND_EXECUTION gate's text: the command (cut for the line) and why the policy asks; the detail is the exact command line an approval lets run. */
export function commandGateText(commandLine: string, reason: string): GateText {
  return { summary: `may the coder run \`${commandLine.length > 200 ? `${commandLine.slice(0, 200)}...` : commandLine}\`? ${reason}`, detail: commandLine };
}

/** A package as people name it: its name, and the version it installs when one is set. */
export function packageLabel(decision: DependencyDecision): string {
  const name = decision.dependency?.name ?? '';
  const spec = decision.installSpec || decision.dependency?.versionSpec || '';
  return spec === '' ? name : `${name} (${spec})`;
}

/** The dependency check's answer on a plan's packages, one line: each package with its verdict, e.g. "requests (>=2): allowed". */
export function packagesJudgedText(decisions: readonly DependencyDecision[]): string {
  const verdicts = decisions.map((decision) => `${packageLabel(decision)}: ${verdictWords[decision.verdict] ?? 'refused'}`);
  return `the plan's packages checked: ${verdicts.join('; ') || 'none'}`;
}

const verdictWords: Readonly<Partial<Record<DependencyVerdict, string>>> = {
  [DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED]: 'allowed',
  [DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL]: 'waits for a person',
  [DependencyVerdict.DEPENDENCY_VERDICT_DENIED]: 'refused',
};

/** The DEPENDENCY_INSTALL gate's text: which packages wait for a person, why, and what approving means. */
export function dependencyGateText(task: Pick<TaskRecord, 'goal'>, waiting: readonly DependencyDecision[]): GateText {
  const list = waiting.map((decision) => `- \`${packageLabel(decision)}\`: ${decision.reason}`).join('\n');
  return {
    summary: `The plan needs ${waiting.length === 1 ? 'a package' : `${waiting.length} packages`} the dependency policy does not allow by itself: ${waiting.map(packageLabel).join(', ')}. Approve to install ${waiting.length === 1 ? 'it' : 'them'} for this task's tests; reject with a comment to have the plan done without.`,
    detail: `Goal: ${task.goal}\n\nPackages:\n${list}`,
  };
}

/** The SAFETY_OVERRIDE gate's text for packages the change imports that the dependency policy asks a person about. */
export function importedPackagesGateText(task: Pick<TaskRecord, 'goal'>, waiting: readonly DependencyDecision[]): GateText {
  const list = waiting.map((decision) => `- \`${packageLabel(decision)}\`: ${decision.reason}`).join('\n');
  const them = waiting.length === 1 ? 'it' : 'them';
  return {
    summary: `The change imports ${waiting.length === 1 ? 'a package' : `${waiting.length} packages`} the dependency policy does not allow by itself: ${waiting.map(packageLabel).join(', ')}. Approve to install ${them} for this task's tests and go on; reject with a comment to have the coder do without ${them}.`,
    detail: `Goal: ${task.goal}\n\nPackages the change imports:\n${list}`,
  };
}

/** `memory service unavailable for 5m`, `database unavailable for 12s` (a dependency `''` is not known); without the time under a second. */
export function unavailableText(dependency: string, waitedMs: number): string {
  const what = dependency === 'database' ? 'database' : dependency === '' ? 'a service' : `${dependency} service`;
  return waitedMs < 1000 ? `${what} unavailable` : `${what} unavailable for ${spanText(waitedMs)}`;
}

/** A time span as people read it: `0.5s`, `45s`, `5m`, `2m30s` (tenths of a second below 10 s). */
export function spanText(ms: number): string {
  if (ms < 10_000) return `${Math.max(0, Math.round(ms / 100) / 10)}s`;
  const seconds = Math.round(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  if (minutes === 0) return `${seconds}s`;
  return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
}
