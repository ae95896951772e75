import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ListTasksRequest } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { TaskStore } from '../src';
import { listTasks } from '../src/handlers/list-tasks';
import { task } from './fixtures';

// The hook starts PGlite and runs every migration: on a busy 2-core machine that takes longer than jest's 5 s default, as in the other PGlite suites.
jest.setTimeout(30_000);

describe('ListTasks (PGlite store)', () => {
  let db: Database;
  let store: TaskStore;
  beforeAll(async () => {
    db = await openPglite();
    store = await TaskStore.open(db);
    for (let index = 0; index < 3; index++) await store.tasks.create(task({ id: `task-${index}`, createdAt: new Date(Date.UTC(2026, 0, 1 + index)), labels: { team: index === 0 ? 'red' : 'blue' } }), []);
  });
  afterAll(async () => {
    await db.close();
  });

  const list = (request: Partial<ListTasksRequest>) => listTasks({ store })(ListTasksRequest.fromPartial(request));
  const token = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

  it('pages with the tokens it issues, and filters by labels', async () => {
    const first = await list({ pageSize: 2 });
    expect(first.tasks).toHaveLength(2);
    const second = await list({ pageSize: 2, pageToken: first.nextPageToken });
    expect(second.tasks).toHaveLength(1);
    expect(second.nextPageToken).toBe('');
    expect((await list({ labels: { team: 'red' } })).tasks.map((found) => found.labels)).toEqual([{ team: 'red' }]);
  });

  it('refuses a page token it did not issue, instead of reading "1.5" as 1', async () => {
    for (const pageToken of [token('1.5'), token('-1'), token('1e3'), token(' 2'), token('99999999999999999999'), 'not base64 at all!']) {
      await expect(list({ pageToken })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('page_token is not one this server issued') });
    }
  });
});
