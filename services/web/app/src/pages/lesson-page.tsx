import { api } from '../api';
import { ErrorNote, Facts, Section } from '../components/common';
import { enumLabel, formatTime, oneLine, shortId } from '../format';
import { useLoad } from '../hooks';
import { Link } from '../router';
import type { Lesson } from '../types';

/** A lesson: why it ranks where it does, its statistics, the lesson itself and the iterations it came from. */
export function LessonPage(props: { readonly lessonId: string }) {
  const loaded = useLoad((signal) => api<{ lesson?: Lesson }>(`/api/lessons/${encodeURIComponent(props.lessonId)}`, { signal }), [props.lessonId]);
  const lesson = loaded.data?.lesson;
  if (lesson === undefined) {
    return (
      <main>
        <ErrorNote error={loaded.error} />
        {loaded.error === undefined && <p className="muted">Loading lesson {props.lessonId}…</p>}
        <Link to="/lessons">Back to the lessons</Link>
      </main>
    );
  }
  const stats = lesson.stats ?? {};
  const mean = (value: number | undefined) => (value === undefined || value === 0 ? '–' : value.toFixed(1));
  return (
    <main className="lesson-page" data-lesson-id={lesson.id}>
      <p className="crumbs">
        <Link to="/lessons">Lessons</Link> / <code>{lesson.id}</code>
      </p>
      <h1>{lesson.title}</h1>
      <Facts
        items={[
          ['Status', enumLabel(lesson.status, 'LESSON_STATUS')],
          ['Weight', (lesson.weight ?? 0).toFixed(2)],
          ['Kind', lesson.kind === 'LESSON_KIND_SUCCESS_PATTERN' ? 'success pattern' : 'failure lesson'],
          ['Scope', lesson.scope ?? 'global'],
          ['Language', enumLabel(lesson.language, 'LANGUAGE') === 'unspecified' ? 'any' : enumLabel(lesson.language, 'LANGUAGE')],
          ['Created', formatTime(lesson.createdAt)],
        ]}
      />
      {(lesson.standing ?? []).length > 0 && (
        <Section title="Why it ranks here">
          <ul>
            {(lesson.standing ?? []).map((reason) => (
              <li key={reason}>{reason}</li>
            ))}
          </ul>
        </Section>
      )}
      <Section title="Statistics">
        <table className="list stats">
          <tbody>
            <tr>
              <th>Retrieved</th>
              <td>{stats.timesRetrieved ?? 0} time(s){stats.lastRetrievedAt ? `, last ${formatTime(stats.lastRetrievedAt)}` : ''}</td>
            </tr>
            <tr>
              <th>Applied by later tasks</th>
              <td>
                {stats.timesApplied ?? 0}, of which {stats.appliedSucceeded ?? 0} succeeded, in {mean(stats.appliedMeanIterations)} iterations on average
              </td>
            </tr>
            <tr>
              <th>Comparable tasks without it</th>
              <td>
                {stats.comparableTasks ?? 0}, of which {stats.comparableSucceeded ?? 0} succeeded, in {mean(stats.comparableMeanIterations)} iterations on average
              </td>
            </tr>
            <tr>
              <th>Helped / did not help</th>
              <td>
                {stats.timesHelped ?? 0} / {stats.timesNotHelped ?? 0}
                {stats.lastHelpedAt ? `, last helped ${formatTime(stats.lastHelpedAt)}` : ''}
              </td>
            </tr>
          </tbody>
        </table>
      </Section>
      <Section title="The lesson">
        {lesson.errorSignature ? (
          <p className="hint">
            Error signature: <code>{lesson.errorSignature}</code>
          </p>
        ) : null}
        <pre className="lesson-body">{lesson.body}</pre>
        {(lesson.tags ?? []).length > 0 && <p className="hint">Tags: {(lesson.tags ?? []).join(', ')}</p>}
      </Section>
      <Section title={`Evidence (${(lesson.evidence ?? []).length})`}>
        <ul className="plain evidence">
          {(lesson.evidence ?? []).map((item, index) => (
            <li key={`${item.taskId ?? ''}-${item.iteration ?? 0}-${index}`}>
              <Link to={`/tasks/${item.taskId ?? ''}`}>
                task <code>{shortId(item.taskId)}</code>, iteration {item.iteration ?? 0}
              </Link>
              {item.failureSummary ? <span>: failed: {oneLine(item.failureSummary, 240)}</span> : null}
              {item.fixSummary ? <span>; fixed: {oneLine(item.fixSummary, 240)}</span> : null}
            </li>
          ))}
        </ul>
      </Section>
    </main>
  );
}
