import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InProcessTransport } from '@ratchet/bus';
import { Language, OrchestratorServiceDefinition, SubmitTaskRequest, TaskView } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { createGrpcClient, GrpcServer, type GrpcClient } from '@ratchet/grpc-api';
import { rejectionOf } from '@ratchet/testing';
import { agentClients, createOrchestratorService, loopSettingsOf, orchestratorConfigSection, type OrchestratorService } from '../src';
import { schema } from '../src/adapters/store/rows';
import { maxListPageBytes } from '../src/handlers/list-tasks';

// Labels over a real gRPC connection: oversize ones are refused at submit
// with the limit; tasks stored before the limits with huge label maps no
// longer break a team's history: lists show their labels within the
// limits and end a page before it grows past what a client takes. No task
// runs (no slots); the store is PGlite.
jest.setTimeout(60_000);

describe('task labels over gRPC', () => {
  let db: Database;
  let orchestrator: OrchestratorService;
  let client: GrpcClient<typeof OrchestratorServiceDefinition>;
  const server = new GrpcServer({});
  const submit = (labels: Record<string, string>, goal = 'add two numbers') => client.submitTask(SubmitTaskRequest.fromPartial({ goal, language: Language.LANGUAGE_PYTHON, labels }));
  const list = (pageToken = '', labels: Record<string, string> = {}) => client.listTasks({ statuses: [], labels, pageSize: 100, pageToken, view: TaskView.TASK_VIEW_BASIC });

  beforeAll(async () => {
    db = await openPglite();
    orchestrator = await createOrchestratorService({
      db,
      clients: agentClients(new InProcessTransport(), 1_000),
      publish: () => Promise.resolve(),
      settings: loopSettingsOf(orchestratorConfigSection.parse({}), 60),
      maxConcurrentTasks: 0,
    });
    server.addService(OrchestratorServiceDefinition, { ...orchestrator.implementation, watchTask: orchestrator.watchTask });
    const port = await server.listen('127.0.0.1:0');
    client = createGrpcClient(OrchestratorServiceDefinition, `127.0.0.1:${port}`, { defaultTimeoutMs: 30_000 });
  });
  afterAll(async () => {
    client?.close();
    await server.close(1_000);
    await orchestrator?.close();
    await db?.close();
  });

  it('refuses oversize labels at submit with INVALID_ARGUMENT that says the limit, and stores nothing', async () => {
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, index) => [`label-${index}`, 'x']));
    expect(await rejectionOf(submit(many))).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('labels has 33 labels; at most 32 are accepted') });
    expect(await rejectionOf(submit({ [`k${'x'.repeat(63)}`]: 'v' }))).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringMatching(/^labels: label key "kx{39}"…\(24 more characters\) is not a label name: use at most 63 letters/) });
    expect(await rejectionOf(submit({ team: 'v'.repeat(1024 * 1024) }))).toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: 'labels: label "team" has a value of 1048576 characters; at most 256 are accepted: put longer text in the goal or a workspace file',
    });
    expect(await rejectionOf(list('', { team: 'v'.repeat(300) }))).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('at most 256 are accepted') });
    expect((await list()).tasks).toEqual([]);
    const { task } = await submit({ team: 'payments', 'ratchet.dev/ticket': 'https://tracker.example.com/T-1' });
    expect(task?.labels).toEqual({ team: 'payments', 'ratchet.dev/ticket': 'https://tracker.example.com/T-1' });
  });

  it('lists a team whose old tasks carry 3 MB label maps: their labels within the limits, pages under the byte cap, every task reached', async () => {
    // Three tasks stored before the limits, each with a label map of 3 MB (the incident's were 30 MB: 90 MB for one page).
    const huge = { team: 'payments', notes: 'n'.repeat(3 * 1024 * 1024), ...Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`z-${String(index).padStart(2, '0')}`, 'x'])) };
    const old: string[] = [];
    for (const goal of ['old 1', 'old 2', 'old 3']) {
      const { task } = await submit({}, goal);
      await db.query(`UPDATE ${schema}.tasks SET labels = $1::jsonb WHERE id = $2`, [JSON.stringify(huge), task!.id]);
      old.push(task!.id);
    }
    const seen: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const page = await list(token);
      pages++;
      for (const task of page.tasks) {
        seen.push(task.id);
        expect(Object.keys(task.labels).length).toBeLessThanOrEqual(32);
        expect(Object.values(task.labels).every((value) => value.length <= 256)).toBe(true);
      }
      expect(page.tasks.reduce((bytes, task) => bytes + JSON.stringify(task).length, 0)).toBeLessThan(maxListPageBytes);
      token = page.nextPageToken;
    } while (token !== '' && pages < 10);
    expect(seen).toEqual(expect.arrayContaining(old));
    const shown = (await client.getTask({ taskId: old[0]!, view: TaskView.TASK_VIEW_BASIC })).task!.labels;
    // The valid ones, the first 32 by key; the 3 MB note is not shown (it stays stored).
    expect(Object.keys(shown)).toEqual(['team', ...Array.from({ length: 31 }, (_, index) => `z-${String(index).padStart(2, '0')}`)]);
    expect(shown['team']).toBe('payments');
  });
});
