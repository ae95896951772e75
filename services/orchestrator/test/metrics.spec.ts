import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TaskStatus } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { processMetrics } from '@ratchet/telemetry';
import { TaskStore } from '../src';
import { observePhase, reportTaskMetrics } from '../src/adapters/metrics';
import type { TaskRecord } from '../src/domain/records';
import { task as baseTask } from './fixtures';

jest.setTimeout(90_000);

/** The lines of the process registry's text output for `name` (a histogram's series included). */
async function scrape(name: string): Promise<string[]> {
  return (await processMetrics().registry.metrics()).split('\n').filter((line) => line.startsWith(name));
}

let sequence = 0;
function task(overrides: Partial<TaskRecord> = {}): TaskRecord {
  sequence += 1;
  return baseTask({ id: `${String(sequence).padStart(8, '0')}-aaaa-bbbb-cccc-000000000000`, version: 0, ...overrides });
}

describe('orchestrator metrics', () => {
  let db: Database;
  let store: TaskStore;
  beforeAll(async () => {
    db = await openPglite();
    store = await TaskStore.open(db);
  });
  afterAll(() => db?.close());

  it('counts tasks per unfinished status from the database at scrape time, and each stored transition that ends a task', async () => {
    const stopReporting = reportTaskMetrics(db);
    try {
      const queued = (await store.tasks.create(task(), [], { leaseMs: 60_000 })).task;
      const planning = (await store.tasks.create(task(), [], { leaseMs: 60_000 })).task;
      await store.tasks.create(task({ status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL }), [], { leaseMs: 60_000 });
      await store.transitions.save(planning, { task: { ...planning, status: TaskStatus.TASK_STATUS_PLANNING }, iterations: [], events: [], changed: true });
      expect(await scrape('ratchet_tasks_active')).toEqual(
        expect.arrayContaining(['ratchet_tasks_active{status="QUEUED"} 1', 'ratchet_tasks_active{status="PLANNING"} 1', 'ratchet_tasks_active{status="AWAITING_APPROVAL"} 1', 'ratchet_tasks_active{status="TESTING"} 0']),
      );
      expect((await scrape('ratchet_tasks_active')).some((line) => /SUCCEEDED|FAILED|CANCELLED/.test(line))).toBe(false);

      // The planning task is stored as SUCCEEDED after its third iteration; the queued one is cancelled.
      const latest = await store.tasks.get(planning.id);
      await store.transitions.save(latest, { task: { ...latest, status: TaskStatus.TASK_STATUS_SUCCEEDED, currentIteration: 3 }, iterations: [], events: [], changed: true });
      await store.transitions.save(queued, { task: { ...queued, status: TaskStatus.TASK_STATUS_CANCELLED }, iterations: [], events: [], changed: true });
      expect(await scrape('ratchet_tasks_active{status="PLANNING"}')).toEqual(['ratchet_tasks_active{status="PLANNING"} 0']);
      expect(await scrape('ratchet_tasks_finished_total')).toEqual(expect.arrayContaining(['ratchet_tasks_finished_total{status="SUCCEEDED"} 1', 'ratchet_tasks_finished_total{status="CANCELLED"} 1']));
      expect(await scrape('ratchet_task_iterations_sum{status="SUCCEEDED"}')).toEqual(['ratchet_task_iterations_sum{status="SUCCEEDED"} 3']);
      expect(await scrape('ratchet_task_iterations_bucket{le="2",status="SUCCEEDED"}')).toEqual(['ratchet_task_iterations_bucket{le="2",status="SUCCEEDED"} 0']);
    } finally {
      stopReporting();
    }
  });

  it('leaves the counts out of a scrape when the database does not answer', async () => {
    const stopReporting = reportTaskMetrics({ query: () => Promise.reject(new Error('connection refused')) } as unknown as Database);
    try {
      expect(await scrape('ratchet_tasks_active')).toEqual([]);
    } finally {
      stopReporting();
    }
  });

  it('times each phase run by phase and outcome', async () => {
    const signal = new AbortController().signal;
    await observePhase(TaskStatus.TASK_STATUS_SAFETY_CHECK, signal, async () => ({ kind: 'safety-passed' }));
    await expect(observePhase(TaskStatus.TASK_STATUS_PLANNING, signal, () => Promise.reject(new Error('planner down')))).rejects.toThrow('planner down');
    const stopped = new AbortController();
    stopped.abort();
    await expect(observePhase(TaskStatus.TASK_STATUS_TESTING, stopped.signal, () => Promise.reject(new Error('stopped')))).rejects.toThrow('stopped');
    const counts = await scrape('ratchet_phase_duration_seconds_count');
    expect(counts).toEqual(
      expect.arrayContaining([
        'ratchet_phase_duration_seconds_count{phase="safety_check",outcome="safety-passed"} 1',
        'ratchet_phase_duration_seconds_count{phase="planning",outcome="error"} 1',
        'ratchet_phase_duration_seconds_count{phase="testing",outcome="cancelled"} 1',
      ]),
    );
  });
});
