import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '@ratchet/testing';
import { runRatchet, temporaryDirectory, type Finished } from './helpers';

// A provider that echoes the API key it refused (as real ones do on 401):
// the key must not reach the task's status, its events, `ratchet show`, or
// anything in the data directory. The real OpenAI-compatible adapter, in
// embedded mode, against the local fake server.
jest.setTimeout(120_000);

const repo = path.resolve(__dirname, '../../..');
const key = 'sk-live-echoed-0123456789abcdefXYZ';

describe('secrets a provider echoes (embedded, real adapter)', () => {
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

  /** `ratchet ARGS` as a user runs it, asynchronously so the fake server in this process can answer. */
  function ratchet(args: string[]): Promise<Finished> {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    const env = { ...clean, RATCHET_CONFIG_DIR: path.join(repo, 'config'), RATCHET_STORAGE_DATA_DIR: path.join(dir, 'data'), RATCHET_MODEL_BASE_URL: server.url, RATCHET_MODEL_NAME: 'fake-model', RATCHET_MODEL_API_KEY: key };
    return runRatchet(args, { cwd: dir, env, timeoutMs: 100_000 });
  }

  async function filesUnder(root: string): Promise<string[]> {
    const entries = await readdir(root, { withFileTypes: true, recursive: true });
    return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  }

  it('keeps an echoed key out of the status, the events, ratchet show and the data files', async () => {
    for (let attempt = 0; attempt < 4; attempt++) server.enqueue({ kind: 'error', status: 401, message: 'Incorrect API key provided', echoApiKey: true });
    const run = await ratchet(['run', 'a CLI that manages TODO items in JSON', '--out', path.join(dir, 'out')]);
    // The provider did echo it, so the test means something.
    expect(server.requests.length).toBeGreaterThan(0);
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/HTTP 401: the API key was rejected; set RATCHET_MODEL_API_KEY/);
    expect(`${run.stdout}${run.stderr}`).not.toContain(key);

    const history = await ratchet(['history', '--json']);
    const task = JSON.parse(history.stdout.trim().split('\n')[0]!) as { id: string; status: string };
    expect(task.status).toBe('FAILED');
    for (const args of [['show', task.id], ['show', task.id, '--json'], ['watch', task.id, '--json']]) {
      const shown = await ratchet(args);
      expect(`${shown.stdout}${shown.stderr}`).toMatch(/401/);
      expect(`${shown.stdout}${shown.stderr}`).not.toContain(key);
    }
    const leaks: string[] = [];
    for (const file of await filesUnder(path.join(dir, 'data'))) {
      if ((await readFile(file)).includes(key)) leaks.push(path.relative(dir, file));
    }
    expect(leaks).toEqual([]);
  });
});
