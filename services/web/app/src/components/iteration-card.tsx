import { enumLabel, formatDuration, formatUsage, oneLine, toolDetail } from '../format';
import { Link } from '../router';
import type { Iteration, ReviewFinding } from '../types';

/** What an iteration came to, in a word: passed, failed, or in flight. */
function outcomeOf(iteration: Iteration): { readonly text: string; readonly tone: 'good' | 'bad' | 'running' } {
  const report = iteration.testReport;
  if (report?.parsed === true) {
    const failed = (report.failed ?? 0) + (report.errored ?? 0);
    return failed === 0 && (report.total ?? 0) > 0 ? { text: `passed ${report.passed ?? 0}/${report.total ?? 0}`, tone: 'good' } : { text: `failed ${report.passed ?? 0}/${report.total ?? 0} passed`, tone: 'bad' };
  }
  if (iteration.error !== undefined) return { text: 'failed', tone: 'bad' };
  if (iteration.completedAt === undefined) return { text: `${enumLabel(iteration.phase, 'PHASE')}…`, tone: 'running' };
  return { text: 'done', tone: 'good' };
}

function Findings(props: { readonly title: string; readonly findings: readonly ReviewFinding[] }) {
  if (props.findings.length === 0) return null;
  return (
    <div className="findings">
      <h4>{props.title}</h4>
      <ul>
        {props.findings.map((finding, index) => (
          <li key={index} className={finding.blocking ? 'blocking' : ''}>
            <span className={`severity severity-${enumLabel(finding.severity, 'SEVERITY')}`}>{enumLabel(finding.severity, 'SEVERITY')}</span> {finding.blocking ? <strong>blocking </strong> : null}
            {finding.path ? (
              <code>
                {finding.path}
                {finding.line ? `:${finding.line}` : ''}
              </code>
            ) : null}{' '}
            {finding.category ? `[${finding.category}${finding.cwe ? `, ${finding.cwe}` : ''}] ` : ''}
            {finding.message}
            {finding.suggestion ? <span className="hint"> Fix: {finding.suggestion}</span> : null}
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * One iteration: its outcome and spending, the tests it ran (failures
 * with their message), the error that ended it, the reflection on it and
 * the lesson kept, review and audit findings, safety findings, and the
 * coder's tool calls.
 */
export function IterationCard(props: { readonly iteration: Iteration }) {
  const { iteration } = props;
  const outcome = outcomeOf(iteration);
  const cases = iteration.testReport?.cases ?? [];
  const reflection = iteration.reflection;
  return (
    <article className="iteration" data-iteration={iteration.number}>
      <header className="iteration-header">
        <h3>Iteration {iteration.number}</h3>
        <span className={`outcome outcome-${outcome.tone}`}>{outcome.text}</span>
        <span className="muted">
          {formatUsage(iteration.usage)}
          {iteration.duration !== undefined ? ` · ${formatDuration(iteration.duration)}` : ''}
        </span>
      </header>
      {iteration.hypothesis ? <p className="hint">Testing the hypothesis: {iteration.hypothesis}</p> : null}
      {iteration.plan?.summary ? <p>Plan: {iteration.plan.summary}</p> : null}
      {cases.length > 0 && (
        <table className="list tests">
          <thead>
            <tr>
              <th>Test</th>
              <th>Result</th>
              <th>Message</th>
            </tr>
          </thead>
          <tbody>
            {cases.map((testCase, index) => (
              <tr key={`${testCase.suite ?? ''}::${testCase.name ?? ''}:${index}`} className={`test-${enumLabel(testCase.status, 'TEST_CASE_STATUS')}`}>
                <td>
                  <code>{testCase.name}</code>
                </td>
                <td>{enumLabel(testCase.status, 'TEST_CASE_STATUS')}</td>
                <td className="muted">{oneLine(testCase.failureMessage, 200)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {iteration.testReport !== undefined && iteration.testReport.parsed !== true && iteration.testReport.parseError ? <p className="error-note">No test report: {iteration.testReport.parseError}</p> : null}
      {iteration.error !== undefined && (
        <p className="error-note">
          {iteration.error.code}: {oneLine(iteration.error.message, 500)}
        </p>
      )}
      {reflection !== undefined && (
        <div className="reflection">
          <h4>Reflection</h4>
          <dl>
            <dt>Root cause</dt>
            <dd>{reflection.rootCause}</dd>
            <dt>Hypothesis</dt>
            <dd>{reflection.hypothesis}</dd>
            <dt>Next</dt>
            <dd>{reflection.fixDirection}</dd>
          </dl>
          {iteration.storedLesson?.lessonId ? (
            <p>
              Lesson {iteration.storedLesson.created ? 'stored' : 'merged into'}: <Link to={`/lessons/${iteration.storedLesson.lessonId}`}>{iteration.storedLesson.title}</Link>
            </p>
          ) : reflection.candidateLesson?.title ? (
            <p className="muted">Lesson drafted, not stored: {reflection.candidateLesson.title}</p>
          ) : null}
        </div>
      )}
      <Findings title="Review" findings={iteration.reviewFindings ?? []} />
      <Findings title="Security audit" findings={iteration.auditFindings ?? []} />
      {(iteration.safetyFindings ?? []).length > 0 && (
        <div className="findings">
          <h4>Safety</h4>
          <ul>
            {(iteration.safetyFindings ?? []).map((finding, index) => (
              <li key={index}>
                <code>{finding.ruleId}</code> {finding.path}:{finding.line} {finding.message}
              </li>
            ))}
          </ul>
        </div>
      )}
      {(iteration.toolSteps ?? []).length > 0 && (
        <details className="tool-steps">
          <summary>{(iteration.toolSteps ?? []).length} tool calls</summary>
          <ol>
            {(iteration.toolSteps ?? []).map((step) => (
              <li key={step.number} className={step.failed ? 'failed' : ''}>
                <code>{step.tool}</code> {oneLine(toolDetail(step.arguments), 100)}
                {step.decision ? <span className="hint"> [{step.decision}]</span> : null}
                {step.failed ? <strong> failed</strong> : null} <span className="muted">→ {oneLine(step.result, 160)}</span>
              </li>
            ))}
          </ol>
        </details>
      )}
      {(iteration.files ?? []).length > 0 && (
        <p className="hint">
          Files: {(iteration.files ?? []).slice(0, 12).map((file) => file.path).join(', ')}
          {(iteration.files ?? []).length > 12 ? ` and ${(iteration.files ?? []).length - 12} more` : ''}
        </p>
      )}
    </article>
  );
}
