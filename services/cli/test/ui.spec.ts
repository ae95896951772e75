import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { ScriptedModel, scriptedRoleModels } from '@ratchet/llm';
import { chromium, type Browser, type Page } from 'playwright-core';
import { demoGoals, demoScript } from '../src/demo';
import { startUi, type RunningUi } from '../src/ui-command';
import { temporaryDirectory } from './helpers';

// `ratchet ui` end to end in a real browser: the embedded stack (every
// service in this process, the Docker sandbox, PGlite) with the demo's
// scripted model, the dashboard on 127.0.0.1, and Debian's Chromium driven
// headless by playwright-core (which never downloads a browser here). A
// person signs in with the run's token, submits the demo's first task,
// watches it fail, reflect and pass on the task page, approves the result,
// and opens the lesson it left. The task page is saved to
// docs/dashboard-task.png for the README.
jest.setTimeout(180_000);

const screenshot = path.resolve(__dirname, '../../../docs/dashboard-task.png');

/** The lesson the demo script's reflector drafts for task 1 (demo/json-store-lesson.script.yaml). */
const lessonTitle = 'Treat a missing or empty JSON data file as an empty collection';

/** Debian's chromium (tools/setup.sh --for-tests installs it), or RATCHET_CHROMIUM. */
function chromiumExecutable(): string {
  const candidates = [process.env['RATCHET_CHROMIUM'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((file): file is string => file !== undefined && file !== '');
  const found = candidates.find((file) => existsSync(file));
  if (found === undefined) throw new Error(`no Chromium at ${candidates.join(' or ')}: apt-get install chromium (tools/setup.sh --for-tests does), or set RATCHET_CHROMIUM to a Chromium binary`);
  return found;
}

let dir: string;
let remove: () => Promise<void>;
let ui: RunningUi;
let browser: Browser;
let page: Page;
let taskId: string;
let model: ScriptedModel;

beforeAll(async () => {
  ({ dir, remove } = await temporaryDirectory());
  model = await ScriptedModel.fromFile(demoScript);
  ui = await startUi({ dataDir: path.join(dir, 'data'), models: scriptedRoleModels(model) });
  // rebound.test resolves to this machine, as another site's name does after DNS rebinding.
  browser = await chromium.launch({ executablePath: chromiumExecutable(), headless: true, args: ['--host-resolver-rules=MAP rebound.test 127.0.0.1'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // A script error in the page fails the test loudly instead of leaving it to wait for what never renders.
  page.on('pageerror', (error) => console.error(`error in the dashboard page: ${error.stack ?? error.message}`));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await ui?.close();
  await remove?.();
});

describe('ratchet ui in a browser', () => {
  it('asks for the token, and says a wrong one was refused', async () => {
    const base = new URL(ui.url);
    expect(base.hostname).toBe('127.0.0.1');
    await page.goto(`${base.origin}/`);
    await page.getByLabel('Token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/the token was refused: sign in again with a valid Ratchet token/);
    // The right token signs in; it is kept for the tab, not in the address.
    await page.getByLabel('Token').fill(ui.token!);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    await page.getByText('No tasks yet').waitFor();
  });

  it('refuses the page and the requests of another site whose name resolves to this machine (DNS rebinding)', async () => {
    const port = new URL(ui.url).port;
    const rebound = await browser.newPage();
    try {
      const response = await rebound.goto(`http://rebound.test:${port}/`);
      expect(response?.status()).toBe(421);
      expect(await rebound.textContent('body')).toContain(`not to the name \\"rebound.test:${port}\\": if people open it by that name, add the name to web.allowedHosts in cli.yaml`);
      // Its script cannot submit a task either, even holding the token: the request carries the site's own name.
      const submitted = await rebound.evaluate(async (token) => {
        const answer = await fetch('/api/tasks', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ goal: 'rebound', language: 'python' }) });
        return answer.status;
      }, ui.token!);
      expect(submitted).toBe(421);
    } finally {
      await rebound.close();
    }
  });

  it('signs in from the address ratchet ui prints, and drops the token from it', async () => {
    await page.evaluate(() => sessionStorage.clear());
    // A new page load, as when the address is pasted (a change of the fragment alone would not reload).
    await page.goto('about:blank');
    await page.goto(ui.url);
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    expect(page.url()).not.toContain('token');
  });

  it("submits the demo's first task and follows it live through its failure, reflection and fix to the approval gate", async () => {
    await page.getByRole('link', { name: 'New task' }).first().click();
    await page.locator('textarea[name="goal"]').fill(demoGoals.first);
    await page.locator('select[name="language"]').selectOption('python');
    // The demo's script has no turns for the optional phases: they stay off, whatever the configured default.
    for (const phase of ['reprompt', 'questions', 'review', 'audit']) await page.locator(`select[name="${phase}"]`).selectOption('off');
    await page.getByLabel('A person approves the passing result before the task succeeds').check();
    await page.getByRole('button', { name: 'Submit task' }).click();

    await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
    taskId = page.url().split('/').at(-1)!;
    await page.getByRole('heading', { name: demoGoals.first }).waitFor();
    // The live page shows each phase as it runs, then the gate.
    await page.getByRole('heading', { name: 'Waiting for your approval' }).waitFor({ timeout: 150_000 });
    await expect(page.locator('.badge').first().textContent()).resolves.toBe('awaiting approval');
    await page.getByRole('heading', { name: 'Iteration 2' }).waitFor();
    await page.getByText('Reflection').first().waitFor();
    await page.getByText(/FileNotFoundError/).first().waitFor();
    await page.getByRole('heading', { name: 'Changes between iterations' }).waitFor();
    await expect(page.locator('.timeline-row').count()).resolves.toBeGreaterThanOrEqual(2);
    await expect(page.locator('tr.diff-added').count()).resolves.toBeGreaterThan(0);
  });

  it('approves the result from the page; the task succeeds, and its page is saved for the README', async () => {
    await page.getByLabel(/^Comment/).fill('reviewed in the dashboard');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('.badge', { hasText: 'succeeded' }).first().waitFor({ timeout: 60_000 });
    await page.getByText(/final result approved by \S+: reviewed in the dashboard/).first().waitFor();
    await page.getByText(/SUCCEEDED after 2 iteration\(s\)/).waitFor();
    await expect(page.getByText('live', { exact: true }).count()).resolves.toBe(0);
    await mkdir(path.dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
  });

  it('lists the task under its status, and opens the lesson it left, with its evidence and statistics', async () => {
    await page.getByRole('link', { name: 'Tasks' }).first().click();
    await page.getByRole('button', { name: 'succeeded' }).click();
    await page.locator(`tr[data-task-id="${taskId}"]`).waitFor();
    await page.getByRole('button', { name: 'failed' }).click();
    await page.getByText('No tasks with this status').waitFor();

    // The lesson the reflection on iteration 1 left, in the ranked list.
    await page.getByRole('link', { name: 'Lessons' }).first().click();
    await page.locator('table.lesson-list').getByRole('link', { name: lessonTitle }).click();
    await page.getByRole('heading', { name: lessonTitle }).waitFor();
    await page.getByRole('heading', { name: 'Statistics' }).waitFor();
    await page.getByRole('heading', { name: 'The lesson' }).waitFor();
    await page.getByText('Retrieved', { exact: true }).waitFor();
    const evidence = page.locator('ul.evidence li', { hasText: taskId.slice(0, 8) }).first();
    await evidence.waitFor();
    await expect(evidence.textContent()).resolves.toMatch(new RegExp(`^task ${taskId.slice(0, 8)}, iteration 1: failed: .*FileNotFoundError`));
    // Evidence links back to the task.
    await evidence.getByRole('link').click();
    await page.waitForURL(new RegExp(`/tasks/${taskId}$`));
  });

  it('says when the token stops being accepted, and asks for it again', async () => {
    await page.evaluate(() => sessionStorage.setItem('ratchet.token', 'revoked'));
    await page.goto(new URL(ui.url).origin + '/lessons');
    await page.getByLabel('Token').waitFor();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/the token was refused/);
  });
});
