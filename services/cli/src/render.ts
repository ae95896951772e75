import { ApprovalDecision, ApprovalKind, Phase, severityToJSON, TaskEvent, TaskStatus, TestCaseStatus, type ClarifyingQuestion, type ReviewFinding, type TaskSpec, type ToolStep, type Usage } from '@ratchet/contracts';
import { phaseName, statusName, stopReasonName } from '@ratchet/agent';
import { blockingSafetyFindings, specParts } from '@ratchet/prompting/format';

/** Dollars with enough digits to show small model costs. */
export function formatCost(usd: number): string {
  return `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

export function formatUsage(usage: Usage | undefined): string {
  if (usage === undefined) return '0 tokens';
  const tokens = usage.promptTokens + usage.completionTokens;
  return `${tokens.toLocaleString('en-US')} tokens, ${formatCost(usage.costUsd)}`;
}

/**
 * `text` on one line, for tables and lists: runs of whitespace (new lines
 * included) become one space, and past `max` characters it is cut with `…`.
 */
export function oneLine(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

function seconds(duration: { seconds: number; nanos: number } | undefined): string {
  if (duration === undefined) return '0.0s';
  return `${(duration.seconds + duration.nanos / 1e9).toFixed(1)}s`;
}

/**
 * One line of human-readable progress for an event, or undefined for events
 * not worth a line. Lines start with the iteration when there is one.
 */
export function renderEvent(event: TaskEvent): string | undefined {
  const prefix = event.iteration > 0 ? `[iteration ${event.iteration}] ` : '';
  const payload = event.payload;
  if (payload === undefined) return undefined;
  switch (payload.$case) {
    case 'taskSubmitted':
      return `task ${event.taskId} submitted: ${payload.taskSubmitted.task?.goal ?? ''}`;
    case 'phaseStarted':
      return `${prefix}${phaseName(payload.phaseStarted.phase)}...`;
    case 'phaseCompleted': {
      const completed = payload.phaseCompleted;
      const usage = completed.usage !== undefined && completed.usage.modelCalls > 0 ? ` (${formatUsage(completed.usage)})` : '';
      return `${prefix}${phaseName(completed.phase)} done in ${seconds(completed.duration)}${usage}: ${completed.summary}`;
    }
    case 'testRunCompleted': {
      const report = payload.testRunCompleted.report;
      const flags = [payload.testRunCompleted.timedOut ? 'timed out' : '', payload.testRunCompleted.oomKilled ? 'out of memory' : ''].filter((flag) => flag !== '');
      if (report === undefined || !report.parsed) return `${prefix}tests: no report (exit ${payload.testRunCompleted.exitCode}${flags.length > 0 ? `, ${flags.join(', ')}` : ''})`;
      const failing = report.cases.filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED);
      const lines = [`${prefix}tests: ${report.passed} passed, ${report.failed + report.errored} failed of ${report.total}${flags.length > 0 ? ` (${flags.join(', ')})` : ''}`];
      for (const testCase of failing.slice(0, 5)) lines.push(`    FAIL ${testCase.name}: ${testCase.failureMessage.split('\n')[0]?.slice(0, 160) ?? ''}`);
      return lines.join('\n');
    }
    case 'safetyBlocked': {
      const findings = payload.safetyBlocked.findings;
      const preExisting = findings.filter((finding) => finding.preExisting).length;
      return [
        `${prefix}safety check blocked the code:`,
        ...blockingSafetyFindings(findings).map((finding) => `    ${finding.ruleId} ${finding.path}:${finding.line} ${finding.message}`),
        ...(preExisting === 0 ? [] : [`    (${preExisting} pre-existing finding(s) in the changed files, not blocking)`]),
      ].join('\n');
    }
    case 'lessonsRetrieved': {
      const lessons = payload.lessonsRetrieved.lessons;
      const where = payload.lessonsRetrieved.phase === Phase.PHASE_REFLECTING ? 'about this error' : 'for this goal';
      if (lessons.length === 0) return `${prefix}no lessons ${where} yet`;
      return [`${prefix}${lessons.length} lesson(s) ${where}:`, ...lessons.map((lesson) => `    "${oneLine(lesson.title)}" (score ${lesson.score.toFixed(2)})`)].join('\n');
    }
    case 'lessonStored':
      return `${prefix}lesson ${payload.lessonStored.created ? 'stored' : 'updated'}: "${oneLine(payload.lessonStored.title)}"`;
    case 'iterationCompleted': {
      const done = payload.iterationCompleted;
      const counts = done.testsPassed && done.testsTotalCount === 0 ? 'passed by exit code (no test report)' : `${done.testsPassedCount}/${done.testsTotalCount} tests`;
      return `${prefix}${done.testsPassed ? 'PASSED' : 'failed'}: ${counts}, ${formatUsage(done.usage)}, ${seconds(done.duration)}${done.failure ? `: ${oneLine(done.failure, 300)}` : ''}`;
    }
    case 'taskCompleted': {
      const done = payload.taskCompleted;
      const outcome = done.status === TaskStatus.TASK_STATUS_SUCCEEDED ? 'SUCCEEDED' : statusName(done.status);
      return `${outcome} after ${done.iterations} iteration(s) in ${seconds(done.duration)} (${formatUsage(done.usage)}): ${stopReasonName(done.reason)}${done.reasonDetail ? ` - ${done.reasonDetail}` : ''}`;
    }
    case 'approvalRequested': {
      const gate = payload.approvalRequested.gate;
      if (gate === undefined) return undefined;
      return [
        `${prefix}WAITING FOR APPROVAL (${approvalKindName(gate.kind)}): ${gate.summary}`,
        `    approve: ratchet approve ${event.taskId} ${gate.gateId}`,
        `    reject:  ratchet approve ${event.taskId} ${gate.gateId} --reject --comment "what to change"`,
      ].join('\n');
    }
    case 'approvalDecided': {
      const gate = payload.approvalDecided.gate;
      if (gate === undefined) return undefined;
      const decision = gate.decision === ApprovalDecision.APPROVAL_DECISION_APPROVED ? 'approved' : 'rejected';
      return `${prefix}${approvalKindName(gate.kind)} ${decision} by ${gate.approver}${gate.comment ? `: ${gate.comment}` : ''}`;
    }
    case 'toolCalled': {
      const step = payload.toolCalled.step;
      if (step === undefined) return undefined;
      // The planner's lookups are made before its plan: shown under the planning phase, not as the coder's steps.
      return payload.toolCalled.phase === Phase.PHASE_PLANNING ? `${prefix}  planner lookup ${renderToolStep(step)}` : `${prefix}  ${renderToolStep(step)}`;
    }
    case 'questionsAsked':
      return [`${prefix}QUESTIONS before planning (answer: ratchet answer ${event.taskId}):`, ...payload.questionsAsked.questions.map((question) => `    ${questionText(question)}`)].join('\n');
    case 'taskStatusChanged':
      return undefined;
    case 'logLine':
      return `${prefix}${payload.logLine.message}`;
    default:
      return undefined;
  }
}

/**
 * One line for a tool call (the agentic coder's, or a planner's lookup): `#3 run pytest -q [allow] -> exit code 1 ...`,
 * the arguments shortened to what identifies the call.
 */
export function renderToolStep(step: ToolStep): string {
  let detail = step.arguments;
  try {
    const args = JSON.parse(step.arguments) as Record<string, unknown>;
    const key = ['command', 'path', 'pattern', 'directory', 'summary'].find((name) => typeof args[name] === 'string');
    detail = key === undefined ? '' : String(args[key]);
    if (typeof args['start_line'] === 'number') detail += `:${args['start_line']}-${typeof args['end_line'] === 'number' ? args['end_line'] : ''}`;
  } catch {
    // Not JSON: shown as the model sent it.
  }
  const decision = step.decision === '' ? '' : ` [${step.decision}]`;
  return `#${step.number} ${step.tool} ${oneLine(detail, 80)}${decision}${step.failed ? ' FAILED' : ''} -> ${oneLine(step.result, 120)}`;
}

/** `final result` for APPROVAL_KIND_FINAL_RESULT. */
export function approvalKindName(kind: ApprovalKind): string {
  return (ApprovalKind[kind] ?? String(kind)).replace(/^APPROVAL_KIND_/, '').toLowerCase().replace(/_/g, ' ');
}

/** The event as one JSON line (proto JSON), for `--json`. */
export function eventJson(event: TaskEvent): string {
  return JSON.stringify(TaskEvent.toJSON(event));
}

/** A clarifying question on one line, with its answer once it has one. */
export function questionText(question: ClarifyingQuestion): string {
  const answered = question.answeredBy === '' ? `(open; assumption: ${question.assumption || 'none'})` : question.answer === '' ? `-> assumed: ${question.assumption}` : `-> ${question.answer} (${question.answeredBy})`;
  return `question ${question.questionId}: ${oneLine(question.question, 200)} ${answered}`;
}

/** A spec as `ratchet show` prints it: its summary, then one line per part, list items indented. */
export function specLines(spec: TaskSpec): string[] {
  const lines = [`spec: ${oneLine(spec.summary, 400)}`];
  for (const part of specParts(spec)) {
    if (part.label === 'Summary') continue;
    const label = part.label.toLowerCase();
    if (typeof part.value === 'string') lines.push(`  ${label}: ${oneLine(part.value, 400)}`);
    else lines.push(`  ${label}:`, ...part.value.map((item) => `    - ${oneLine(item, 300)}`));
  }
  return lines;
}

/** A review or audit finding on one line: severity, where, what, and whether it blocked. */
export function findingText(finding: ReviewFinding): string {
  const where = finding.path === '' ? '' : ` ${finding.path}${finding.line > 0 ? `:${finding.line}` : ''}`;
  const tags = [finding.category, finding.cwe, finding.source].filter((tag) => tag !== '').join(', ');
  return `${severityToJSON(finding.severity).replace('SEVERITY_', '')}${finding.blocking ? ' (blocking)' : ''}${where} ${oneLine(finding.message, 300)}${tags === '' ? '' : ` [${tags}]`}`;
}
