import { useState } from 'react';
import { api } from '../api';
import { ErrorNote } from '../components/common';
import { enumLabel, oneLine, rankLessons } from '../format';
import { useLoad } from '../hooks';
import { Link } from '../router';
import type { LessonPage } from '../types';

const statuses = ['', 'promoted', 'candidate', 'demoted', 'retired'] as const;

/** What Ratchet has learnt, ranked as retrieval weighs it (`rankLessons`), with each lesson's standing. */
export function LessonsPage() {
  const [status, setStatus] = useState('');
  const lessons = useLoad(
    async (signal) => {
      const all: NonNullable<LessonPage['lessons']>[number][] = [];
      let token = '';
      do {
        const query = new URLSearchParams({ pageSize: '500', ...(status === '' ? {} : { status }), ...(token === '' ? {} : { pageToken: token }) });
        const page = await api<LessonPage>(`/api/lessons?${query.toString()}`, { signal });
        all.push(...(page.lessons ?? []));
        token = page.nextPageToken ?? '';
      } while (token !== '' && all.length < 2_000);
      return rankLessons(all);
    },
    [status],
    10_000,
  );
  return (
    <main>
      <div className="page-title">
        <h1>Lessons</h1>
      </div>
      <p className="muted">
        What failures and their fixes taught, and what worked. Ranked by weight (how much a lesson counts when retrieved, from how later tasks fared with it); retired lessons are kept, never offered.
      </p>
      <div className="filters" role="group" aria-label="lesson status filter">
        {statuses.map((choice) => (
          <button key={choice || 'all'} type="button" className={`chip ${choice === status ? 'chip-on' : ''}`} aria-pressed={choice === status} onClick={() => setStatus(choice)}>
            {choice || 'all'}
          </button>
        ))}
      </div>
      <ErrorNote error={lessons.error} />
      {lessons.data !== undefined && lessons.data.length === 0 && <p className="muted">No lessons {status === '' ? 'yet: they are learnt as tasks fail and get fixed' : `with status ${status}`}.</p>}
      {lessons.data !== undefined && lessons.data.length > 0 && (
        <table className="list lesson-list">
          <thead>
            <tr>
              <th className="number">#</th>
              <th>Lesson</th>
              <th>Status</th>
              <th className="number">Weight</th>
              <th className="number">Applied (succeeded)</th>
              <th className="number">Retrieved</th>
              <th>Scope</th>
              <th>Kind</th>
            </tr>
          </thead>
          <tbody>
            {lessons.data.map((lesson, index) => (
              <tr key={lesson.id} data-lesson-id={lesson.id}>
                <td className="number">{index + 1}</td>
                <td>
                  <Link to={`/lessons/${lesson.id ?? ''}`}>{oneLine(lesson.title, 100)}</Link>
                </td>
                <td>{enumLabel(lesson.status, 'LESSON_STATUS')}</td>
                <td className="number">{(lesson.weight ?? 0).toFixed(2)}</td>
                <td className="number">
                  {lesson.stats?.timesApplied ?? 0} ({lesson.stats?.appliedSucceeded ?? 0})
                </td>
                <td className="number">{lesson.stats?.timesRetrieved ?? 0}</td>
                <td>{lesson.scope}</td>
                <td>{lesson.kind === 'LESSON_KIND_SUCCESS_PATTERN' ? 'success pattern' : 'failure lesson'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
