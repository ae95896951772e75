import { TaskEvent } from '@ratchet/contracts';
import type { Queryable } from '@ratchet/db';
import type { NewEvent } from '../../domain/events';
import { json, schema } from './rows';

/** A task's events, append-only; numbered by the task row's event counter, which is also its version. */
export class EventRepository {
  constructor(private readonly db: Queryable) {}

  /** The task's events from `fromSequence` on (1 = all), in order. */
  async list(taskId: string, fromSequence = 1): Promise<TaskEvent[]> {
    const result = await this.db.query<{ payload: unknown }>(`SELECT payload FROM ${schema}.events WHERE task_id = $1 AND sequence >= $2 ORDER BY sequence`, [taskId, fromSequence]);
    return result.rows.map((row) => TaskEvent.fromJSON(row.payload));
  }
}

/** The events with their sequence numbers from `first` on. */
export function numbered(taskId: string, events: readonly NewEvent[], first: number): TaskEvent[] {
  return events.map((body, index): TaskEvent => ({ ...body, taskId, sequence: first + index }));
}

/** Inserts numbered events in one statement (the caller reserved the numbers on the task row). */
export async function insertEvents(tx: Queryable, events: readonly TaskEvent[]): Promise<void> {
  if (events.length === 0) return;
  const params: unknown[] = [];
  const rows = events.map((event) => {
    params.push(event.taskId, event.sequence, event.time ?? new Date(), event.iteration, event.payload?.$case ?? 'none', json(TaskEvent.toJSON(event)));
    const base = params.length - 6;
    return `($${base + 1},$${base + 2},$${base + 3},$${base + 4},$${base + 5},$${base + 6})`;
  });
  await tx.query(`INSERT INTO ${schema}.events (task_id, sequence, time, iteration, kind, payload) VALUES ${rows.join(',')}`, params);
}
