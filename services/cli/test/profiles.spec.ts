import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DependencyVerdict, TaskStatus, TaskView } from '@ratchet/contracts';
import { booksApi } from '@ratchet/testing';
import { parse } from 'yaml';
import { openApi } from '../src/api';
import { runGoal } from '../src/commands';
import { codeReply, planReply, RecordedOutput, scripted, temporaryDirectory, testsReply } from './helpers';

// A web_app profile task end to end, embedded, with every real service and
// a scripted model: the planner, coder and tester get the profile, the
// coder starts from its files, the dependency policy finds Flask provided by
// the sandbox's data image (ratchet-sandbox:3-data, built by
// tools/ensure-docker.sh), and the books API's tests run through Flask's
// test client in the sandbox.
jest.setTimeout(300_000);

const webApp = parse(readFileSync(path.resolve(__dirname, '../../../config/profiles/web_app.yaml'), 'utf8')) as { layout: { path: string; content?: string }[] };
const startingApp = webApp.layout.find((file) => file.path === 'app.py')?.content ?? '';

describe('ratchet run -p web_app (embedded)', () => {
  let dir: string;
  let remove: () => Promise<void>;
  const saved = { ...process.env };

  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    process.env['RATCHET_SANDBOX_IMAGE'] = 'ratchet-sandbox:3-data';
  });

  afterAll(async () => {
    process.env = saved;
    await remove();
  });

  it('builds a REST API for books with SQLite on the profile, its tests through the Flask test client passing in the sandbox', async () => {
    const { models } = scripted([
      // The profile's prompt additions reach the planner, its starting files the coder, its test style the tester.
      { role: 'planner', expect: ['Build on app.py: keep create_app(config)'], reply: planReply('app.py', 'tests/test_books.py', undefined, [{ name: 'flask', versionSpec: '' }]) },
      { role: 'coder', expect: ['def create_app(config=None):'], reply: codeReply('app.py', booksApi.app(startingApp)) },
      { role: 'tester', expect: ["Flask's test client"], reply: testsReply('tests/test_books.py', booksApi.tests) },
    ]);
    const dataDir = path.join(dir, 'data');
    const result = await runGoal('a REST API for managing books with SQLite', { lang: 'python', out: path.join(dir, 'books'), dataDir, models, profile: 'web_app' }, new RecordedOutput());
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    // The profile's starting files are part of the result, beside what the model wrote.
    expect(result.written.map((file) => path.relative(path.join(dir, 'books'), file)).sort()).toEqual(['app.py', 'tests/conftest.py', 'tests/test_books.py', 'tests/test_health.py']);
    const api = await openApi({ dataDir, drive: false });
    try {
      const { task, iterations } = await api.getTask(result.task.id, TaskView.TASK_VIEW_FULL);
      expect(task?.profile?.name).toBe('web_app');
      // Flask comes with the image: allowed, provided, nothing installed.
      expect(task?.dependencyDecisions.find((decision) => decision.dependency?.name === 'flask')).toMatchObject({ verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, provided: true });
      expect(iterations[0]?.testReport).toMatchObject({ failed: 0, errored: 0 });
      expect(iterations[0]?.testReport?.cases.map((testCase) => testCase.name)).toContain('test_creates_a_book_and_lists_it');
    } finally {
      await api.close();
    }
  });
});
