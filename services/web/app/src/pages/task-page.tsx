import { useEffect, useMemo, useRef, useState } from 'react';
import { api, followTaskEvents, type ApiError } from '../api';
import { useAuth } from '../auth';
import { DiffView } from '../components/diff-view';
import { ErrorNote, Facts, Section, StatusBadge } from '../components/common';
import { Approvals, Questions } from '../components/decisions';
import { IterationCard } from '../components/iteration-card';
import { enumLabel, formatCost, formatTime, formatTokens, isTerminalStatus, oneLine, phaseLabel, statusLabel } from '../format';
import { useAction, useLoad } from '../hooks';
import { Link } from '../router';
import { feedOf, lastSequenceOf, mergeEvents, timelineOf } from '../timeline';
import type { Task, TaskDetail, TaskEvent } from '../types';

/** The optional phases a task runs, as the submit form names them. */
function optionalPhases(phases: Task['phases']): string {
  const names = [phases?.reprompt ? 'spec first' : '', phases?.questions ? 'questions' : '', phases?.review ? 'review' : '', phases?.audit ? 'security audit' : ''].filter((name) => name !== '');
  return names.length === 0 ? 'none' : names.join(', ');
}

/** How long after a burst of events the full view is loaded again, ms. */
const reloadAfterMs = 400;

/**
 * One task, followed live: its status and spending, the gate or questions
 * waiting for a person, the phases of each iteration as they run, every
 * iteration's tests, findings, reflection and tool calls, the code's
 * changes between iterations, and what happened, event by event.
 */
export function TaskPage(props: { readonly taskId: string }) {
  const auth = useAuth();
  const detail = useLoad((signal) => api<TaskDetail>(`/api/tasks/${encodeURIComponent(props.taskId)}`, { signal }), [props.taskId]);
  const [events, setEvents] = useState<TaskEvent[]>([]);
  const [live, setLive] = useState<'following' | 'ended' | 'stopped'>('following');
  const [streamError, setStreamError] = useState<ApiError | undefined>();
  const reloadTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const { reload } = detail;
  const cancel = useAction();

  useEffect(() => {
    const controller = new AbortController();
    setEvents([]);
    setLive('following');
    setStreamError(undefined);
    const reloadSoon = () => {
      clearTimeout(reloadTimer.current);
      reloadTimer.current = setTimeout(reload, reloadAfterMs);
    };
    void followTaskEvents(
      props.taskId,
      0,
      {
        onEvents: (batch) => {
          setStreamError(undefined);
          setEvents((known) => mergeEvents(known, batch));
          reloadSoon();
        },
        onEnd: () => {
          setLive('ended');
          reloadSoon();
        },
        onError: (error, willRetry) => {
          if (auth.handle(error)) return;
          setStreamError(error);
          if (!willRetry) setLive('stopped');
        },
      },
      controller.signal,
    );
    return () => {
      controller.abort();
      clearTimeout(reloadTimer.current);
    };
  }, [props.taskId, auth, reload]);

  const timeline = useMemo(() => timelineOf(events), [events]);
  const feed = useMemo(() => feedOf(events), [events]);
  const task = detail.data?.task;
  const iterations = detail.data?.iterations ?? [];
  const approvals = detail.data?.approvals ?? [];

  if (task === undefined) {
    return (
      <main>
        <ErrorNote error={detail.error} />
        {detail.error === undefined && <p className="muted">Loading task {props.taskId}…</p>}
        <Link to="/">Back to the tasks</Link>
      </main>
    );
  }

  const running = !isTerminalStatus(task.status);
  const traceLink = detail.data?.links?.trace;
  return (
    <main className="task-page" data-task-id={task.id}>
      <div className="page-title">
        <div>
          <p className="crumbs">
            <Link to="/">Tasks</Link> / <code>{task.id}</code>
          </p>
          <h1>{task.goal}</h1>
        </div>
        <div className="title-side">
          <StatusBadge status={task.status} />
          {running && live === 'following' && <span className="live">live</span>}
          {running && (
            <button
              type="button"
              className="danger"
              disabled={cancel.busy}
              onClick={() => {
                if (window.confirm('Cancel this task? It stops where it is and ends CANCELLED.')) void cancel.run(() => api(`/api/tasks/${encodeURIComponent(task.id ?? '')}/cancel`, { body: { reason: 'cancelled from the dashboard' } })).then(reload);
              }}
            >
              Cancel task
            </button>
          )}
          {traceLink !== undefined && (
            <a className="button secondary" href={traceLink} target="_blank" rel="noreferrer noopener">
              Trace ↗
            </a>
          )}
        </div>
      </div>
      {task.statusReason !== undefined && task.statusReason !== '' && <p className="status-reason">{task.statusReason}</p>}
      <ErrorNote error={detail.error} />
      <ErrorNote error={cancel.error} what="cancel tasks" />
      {streamError !== undefined && <p className="error-note">Live updates: {streamError.message}{live === 'following' ? ' (reconnecting…)' : ''}</p>}

      <Facts
        items={[
          ['Status', `${statusLabel(task.status)}${running && task.phase !== undefined ? ` (${phaseLabel(task.phase)})` : ''}`],
          ['Iterations', `${task.currentIteration ?? 0}${task.budget?.maxIterations ? ` of ${task.budget.maxIterations}` : ''}`],
          ['Tokens', formatTokens(task.usage).replace(' tokens', '')],
          ['Cost', formatCost(task.usage?.costUsd)],
          ['Model calls', String(task.usage?.modelCalls ?? 0)],
          ['Language', enumLabel(task.language, 'LANGUAGE')],
          ['Profile', task.profile?.name ?? 'none'],
          ['Optional phases', optionalPhases(task.phases)],
          ['Project', task.project || 'none (global lessons)'],
          ['Submitted', `${formatTime(task.createdAt)}${task.submittedBy ? ` by ${task.submittedBy}` : ''}`],
          ...(task.stopReason !== undefined ? [['Stop reason', enumLabel(task.stopReason, 'STOP_REASON')] as const] : []),
        ]}
      />

      <Approvals task={task} approvals={approvals} onDecided={reload} />
      <Questions task={task} onAnswered={reload} />

      {task.spec !== undefined && (
        <Section title="Spec">
          <p>{task.spec.summary}</p>
          {(task.spec.acceptanceCriteria ?? []).length > 0 && (
            <ul>
              {(task.spec.acceptanceCriteria ?? []).map((criterion) => (
                <li key={criterion}>{criterion}</li>
              ))}
            </ul>
          )}
          {(task.spec.assumptions ?? []).length > 0 && <p className="muted">Assumed: {(task.spec.assumptions ?? []).join('; ')}</p>}
        </Section>
      )}

      <Section title="Phases">
        {timeline.length === 0 && <p className="muted">Waiting for the first phase…</p>}
        <ol className="timeline">
          {timeline.map((row) => (
            <li key={row.iteration} className="timeline-row">
              <span className="timeline-label">{row.iteration === 0 ? 'before' : `iteration ${row.iteration}`}</span>
              <span className="timeline-steps">
                {row.steps.map((step, index) => (
                  <span key={`${step.phase}-${index}`} className={`step step-${step.state}`} title={step.summary}>
                    {phaseLabel(step.phase)}
                    {step.attempt > 1 ? ` (attempt ${step.attempt})` : ''}
                    {step.duration !== undefined && <small> {((step.duration.seconds ?? 0) + (step.duration.nanos ?? 0) / 1e9).toFixed(1)} s</small>}
                  </span>
                ))}
              </span>
              {row.outcome !== undefined && (
                <span className={`timeline-outcome ${row.outcome.passed ? 'good' : 'bad'}`}>
                  {row.outcome.passed ? 'passed' : 'failed'} {row.outcome.passedCount}/{row.outcome.totalCount}
                </span>
              )}
            </li>
          ))}
        </ol>
      </Section>

      {iterations.length > 0 && (
        <Section title={`Iterations (${iterations.length})`}>
          {[...iterations].reverse().map((iteration) => (
            <IterationCard key={iteration.number} iteration={iteration} />
          ))}
        </Section>
      )}

      {iterations.some((iteration) => (iteration.files ?? []).length > 0) && (
        <Section title="Changes between iterations">
          <DiffView iterations={iterations} />
        </Section>
      )}

      {(task.lessons ?? []).length > 0 && (
        <Section title="Lessons used">
          <ul className="plain">
            {(task.lessons ?? []).map((lesson) => (
              <li key={lesson.id}>
                <Link to={`/lessons/${lesson.id ?? ''}`}>{oneLine(lesson.title, 160)}</Link>
              </li>
            ))}
          </ul>
        </Section>
      )}

      <Section title="Activity" actions={<span className="muted">{events.length > 0 ? `${lastSequenceOf(events)} events` : ''}</span>}>
        <ol className="feed">
          {feed.map((item) => (
            <li key={item.sequence} className={`feed-${item.tone}`}>
              <span className="feed-time">{item.time === undefined ? '' : new Date(item.time).toLocaleTimeString()}</span>
              {item.iteration > 0 && <span className="feed-iteration">#{item.iteration}</span>}
              <span className="feed-text">{item.text}</span>
            </li>
          ))}
        </ol>
      </Section>
    </main>
  );
}
