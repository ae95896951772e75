import { useState } from 'react';
import { api } from '../api';
import { ErrorNote, StatusBadge } from '../components/common';
import { formatTime, formatUsage, oneLine, shortId } from '../format';
import { useLoad } from '../hooks';
import { Link } from '../router';
import type { TaskPage } from '../types';

/** The status filter: each choice and the statuses it lists. */
const filters: readonly { readonly label: string; readonly statuses: string }[] = [
  { label: 'all', statuses: '' },
  { label: 'running', statuses: 'queued,reprompting,retrieving,planning,coding,safety_check,reviewing,auditing,testing,reflecting,learning' },
  { label: 'waiting for a person', statuses: 'awaiting_approval,awaiting_answer' },
  { label: 'succeeded', statuses: 'succeeded' },
  { label: 'failed', statuses: 'failed' },
  { label: 'cancelled', statuses: 'cancelled' },
];

/** How often the list refreshes, ms. */
const refreshMs = 3_000;

/** The tasks, newest first, with a status filter; refreshed every few seconds. */
export function TaskListPage() {
  const [filter, setFilter] = useState('');
  const [pages, setPages] = useState(1);
  const tasks = useLoad(
    async (signal) => {
      // Every page shown so far, so a refresh keeps what was loaded.
      const all: NonNullable<TaskPage['tasks']>[number][] = [];
      let token = '';
      let next = '';
      for (let page = 0; page < pages; page += 1) {
        const query = new URLSearchParams({ pageSize: '50', ...(filter === '' ? {} : { status: filter }), ...(token === '' ? {} : { pageToken: token }) });
        const answer = await api<TaskPage>(`/api/tasks?${query.toString()}`, { signal });
        all.push(...(answer.tasks ?? []));
        next = answer.nextPageToken ?? '';
        token = next;
        if (next === '') break;
      }
      return { tasks: all, more: next !== '' };
    },
    [filter, pages],
    refreshMs,
  );

  return (
    <main>
      <div className="page-title">
        <h1>Tasks</h1>
        <Link to="/tasks/new" className="button">
          New task
        </Link>
      </div>
      <div className="filters" role="group" aria-label="status filter">
        {filters.map((choice) => (
          <button
            key={choice.label}
            type="button"
            className={`chip ${choice.statuses === filter ? 'chip-on' : ''}`}
            aria-pressed={choice.statuses === filter}
            onClick={() => {
              setFilter(choice.statuses);
              setPages(1);
            }}
          >
            {choice.label}
          </button>
        ))}
      </div>
      <ErrorNote error={tasks.error} />
      {tasks.data !== undefined && tasks.data.tasks.length === 0 && <p className="muted">No tasks {filter === '' ? 'yet' : 'with this status'}. <Link to="/tasks/new">Submit one.</Link></p>}
      {tasks.data !== undefined && tasks.data.tasks.length > 0 && (
        <table className="list task-list">
          <thead>
            <tr>
              <th>Task</th>
              <th>Status</th>
              <th>Goal</th>
              <th className="number">Iterations</th>
              <th>Usage</th>
              <th>Submitted</th>
            </tr>
          </thead>
          <tbody>
            {tasks.data.tasks.map((task) => (
              <tr key={task.id} data-task-id={task.id}>
                <td>
                  <Link to={`/tasks/${task.id ?? ''}`}>
                    <code>{shortId(task.id)}</code>
                  </Link>
                </td>
                <td>
                  <StatusBadge status={task.status} />
                </td>
                <td>
                  <Link to={`/tasks/${task.id ?? ''}`}>{oneLine(task.goal, 90)}</Link>
                </td>
                <td className="number">{task.currentIteration ?? 0}</td>
                <td className="muted">{formatUsage(task.usage)}</td>
                <td className="muted">{formatTime(task.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {tasks.data?.more === true && (
        <button type="button" className="secondary" onClick={() => setPages((count) => count + 1)}>
          Show more
        </button>
      )}
    </main>
  );
}
