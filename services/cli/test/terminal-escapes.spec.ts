import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '@ratchet/testing';
import { runRatchet, temporaryDirectory, type Finished } from './helpers';

// Escape sequences in what the CLI prints but did not write: a goal, a
// model's plan summary, a provider's error. `ratchet run`, `history`,
// `show` and `watch` as a user runs them (the built bin, embedded mode),
// the real OpenAI-compatible adapter against the local fake server; the
// bytes the terminal would get must hold none of them raw.
jest.setTimeout(120_000);

const repo = path.resolve(__dirname, '../../..');
/** A window title, an erased line, an OSC 8 hyperlink, an 8-bit CSI colour, a right-to-left override. */
const hostile = 'T\x1b]0;pwned\x07 E\x1b[2K L\x1b]8;;http://evil\x07link\x1b]8;;\x07 C\u009b31m R\u202eexe.txt';
/** The same, as the terminal must show it. */
const shown = 'T\\u001b]0;pwned\\u0007 E\\u001b[2K L\\u001b]8;;http://evil\\u0007link\\u001b]8;;\\u0007 C\\u009b31m R\\u202eexe.txt';
/** Anything a terminal acts on besides new line and tab. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point.
const unsafe = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('escape sequences from goals, models and servers (embedded, the built bin)', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let server: FakeOpenAiServer;
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    server = await startFakeOpenAiServer();
  });
  afterAll(async () => {
    await server?.close();
    await remove();
  });

  function ratchet(args: string[]): Promise<Finished> {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    const env = { ...clean, RATCHET_CONFIG_DIR: path.join(repo, 'config'), RATCHET_STORAGE_DATA_DIR: path.join(dir, 'data'), RATCHET_MODEL_BASE_URL: server.url, RATCHET_MODEL_NAME: 'fake-model', RATCHET_MODEL_API_KEY: 'sk-test' };
    return runRatchet(args, { cwd: dir, env, timeoutMs: 100_000 });
  }

  it('reach the terminal as visible escapes, never raw, in run, history, show and watch; --json keeps their value', async () => {
    // The planner's summary carries them; then the provider's error does, until the task fails.
    server.enqueue({
      kind: 'completion',
      content: JSON.stringify({ summary: `plan ${hostile}`, steps: [{ description: 'write calc.py', paths: ['calc.py'] }], files: [{ path: 'calc.py', purpose: 'code', isTest: false }, { path: 'tests/test_calc.py', purpose: 'tests', isTest: true }], testStrategy: 'pytest', dependencies: [], appliedLessonIds: [] }),
    });
    for (let attempt = 0; attempt < 8; attempt++) server.enqueue({ kind: 'error', status: 400, message: `bad request ${hostile}` });

    const run = await ratchet(['run', `goal ${hostile}`, '--out', path.join(dir, 'out')]);
    const printed = `${run.stdout}${run.stderr}`;
    expect(printed).not.toMatch(unsafe);
    expect(printed).toContain(`submitted: goal ${shown}`);
    expect(printed).toContain(`plan ${shown}`);
    expect(printed).toContain(`bad request ${shown}`);

    const history = await ratchet(['history']);
    expect(history.stdout).not.toMatch(unsafe);
    expect(history.stdout).toContain('goal T\\u001b]0;pwned\\u0007');
    const listed = await ratchet(['history', '--json']);
    expect(listed.stdout).not.toMatch(unsafe);
    const task = JSON.parse(listed.stdout.trim().split('\n')[0]!) as { id: string; goal: string };
    expect(task.goal).toBe(`goal ${hostile}`);

    for (const args of [['show', task.id], ['watch', task.id]]) {
      const result = await ratchet(args);
      const text = `${result.stdout}${result.stderr}`;
      expect([args[0], unsafe.test(text)]).toEqual([args[0], false]);
      expect(text).toContain(`goal ${shown}`);
      expect(text).toContain(`plan ${shown}`);
    }
    const events = await ratchet(['watch', task.id, '--json']);
    expect(events.stdout).not.toMatch(unsafe);
    const submitted = events.stdout.trim().split('\n').map((line) => JSON.parse(line) as { taskSubmitted?: { task: { goal: string } } }).find((event) => event.taskSubmitted !== undefined);
    expect(submitted?.taskSubmitted?.task.goal).toBe(`goal ${hostile}`);
  });
});
