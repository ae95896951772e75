import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Language, PhaseSwitch, SubmitTaskRequest, type ProjectProfile } from '@ratchet/contracts';
import { openPglite, openPostgres, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { startPostgres, type PostgresFixture, rejectionOf } from '@ratchet/testing';
import { TaskStore } from '../src';
import { schema } from '../src/adapters/store/rows';
import type { HandlerContext } from '../src/handlers/context';
import { submitTask } from '../src/handlers/submit-task';
import { task } from './fixtures';

// SubmitTask against a real store: idempotent under concurrency, and a value
// Postgres cannot store refused as the client's fault without SQL text.
jest.setTimeout(90_000);

/** The handler with a real store and a scheduler that never runs anything. */
function handler(store: TaskStore, profiles: readonly ProjectProfile[] = []) {
  const enqueued: (string | undefined)[] = [];
  const context = {
    store,
    scheduler: { hasSlot: () => false, enqueue: (taskId?: string) => enqueued.push(taskId) },
    publish: async () => undefined,
    now: () => new Date(),
    leaseMs: 30_000,
    policy,
    profiles,
  } as unknown as HandlerContext;
  return { submit: submitTask(context), enqueued };
}

/** Loop defaults: only the optional phases' defaults matter at submit. */
const policy = { phases: { reprompt: false, questions: true, review: true, audit: false } };

const webApp: ProjectProfile = { name: 'web_app', description: 'a Flask app', language: Language.LANGUAGE_PYTHON, layout: [{ path: 'app.py', purpose: 'the app', content: '' }], testStyle: 'test client', dependencies: [{ name: 'flask', versionSpec: '' }], prompt: 'use Flask' };

const request = (overrides: Partial<SubmitTaskRequest> = {}) => SubmitTaskRequest.fromPartial({ goal: 'add two numbers', language: Language.LANGUAGE_PYTHON, ...overrides });

function submitContract(name: string, open: () => Promise<Database>) {
  describe(`SubmitTask on ${name}`, () => {
    let db: Database;
    let store: TaskStore;
    beforeAll(async () => {
      db = await open();
      store = await TaskStore.open(db);
    });
    afterAll(async () => {
      await db.close();
    });

    it('gives 20 parallel submits of one request_id the same task, stored once', async () => {
      const { submit, enqueued } = handler(store);
      const requestId = `retry-${name}-${Date.now()}`;
      const results = await Promise.allSettled(Array.from({ length: 20 }, () => submit(request({ requestId }))));
      const failed = results.filter((result) => result.status === 'rejected');
      expect(failed).toEqual([]);
      const ids = new Set(results.map((result) => (result.status === 'fulfilled' ? result.value.task?.id : undefined)));
      expect(ids.size).toBe(1);
      const rows = await db.query<{ id: string }>(`SELECT id FROM ${schema}.tasks WHERE request_id = $1`, [requestId]);
      expect(rows.rows.map((row) => row.id)).toEqual([...ids]);
      // Only the submit that created it queues it.
      expect(enqueued).toHaveLength(1);
    });

    it('resolves the optional phases over the configured defaults, and keeps the named profile on the task', async () => {
      const { submit } = handler(store, [webApp]);
      const { task: submitted } = await submit(request({ profile: 'Web_App', reprompt: PhaseSwitch.PHASE_SWITCH_ON, review: PhaseSwitch.PHASE_SWITCH_OFF }));
      const stored = await store.tasks.get(submitted!.id);
      expect(stored.phases).toEqual({ reprompt: true, questions: true, review: false, audit: false });
      expect(stored.profile).toEqual(webApp);
      const refused = await rejectionOf(submit(request({ profile: 'webapp' })));
      expect(refused).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('unknown profile "webapp"; known: web_app') });
    });

    it('refuses a NUL in a file before it reaches the store, naming the file', async () => {
      const { submit } = handler(store);
      const error = await rejectionOf(submit(request({ workspace: [{ path: 'assets/logo.png', content: '\u0089PNG\r\n\u001a\n\u0000\u0000' }] })));
      expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(error.message).toMatch(/^workspace: "assets\/logo\.png" contains a NUL byte .*only text files are accepted/);
    });

    it('refuses a NUL that reaches the store as INVALID_ARGUMENT with no SQL text', async () => {
      for (const overrides of [{ goal: 'add\u0000two' }, { workspace: [{ path: 'a.py', content: 'x = 1\u0000' }] }, { labels: { team: 'co\u0000re' } }]) {
        const id = `nul-${name}-${Math.random().toString(36).slice(2)}`;
        const error = await rejectionOf(store.tasks.create(task({ id, ...overrides }), []));
        expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(error.message).toContain('NUL character');
        expect(error.message).not.toMatch(/INSERT|SELECT|orchestrator\.|tasks \(|\$\d|invalid byte sequence|cannot be converted/);
        await expect(store.tasks.get(id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
      }
    });
  });
}

submitContract('PGlite', () => openPglite());

describe('on real Postgres', () => {
  let server: PostgresFixture;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server.stop();
  });
  submitContract('Postgres', () => openPostgres({ connectionString: server.connectionString, maxConnections: 10 }));
});
