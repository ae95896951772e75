import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort, scriptedGoals, writeScript } from '@ratchet/testing';
import { composeCommand, runCommand, type CommandResult } from './commands';

// The stack as a team runs it on one host, with no image registry: the
// offline images built here from Debian packages (deploy/images/build-offline.sh),
// brought up with the one documented command (deploy/compose/up.sh --offline),
// a task run to SUCCEEDED through `ratchet run --server` over TLS with a token,
// runners scaled to three with one command, and every service scraped by the
// stack's own Prometheus. Only the model is scripted.
jest.setTimeout(900_000);

const repoRoot = path.resolve(__dirname, '../..');
const bin = path.join(repoRoot, 'services/cli/bin/ratchet.js');
const services = ['orchestrator', 'planner', 'coder', 'tester', 'reflector', 'safety', 'memory', 'sandbox-runner', 'web'];
const first = scriptedGoals('compose', 1)[0]!;
// Each test run sleeps a little, so three runners of one job each all get work.
const spread = scriptedGoals('spread', 6, { slowSeconds: 2 });

let dir: string;
let project: string;
let grpcPort: number;
let prometheusPort: number;
let webPort: number;
let compose: string[];
let env: NodeJS.ProcessEnv;

const files = () => ['-f', 'docker-compose.yml', '-f', 'deploy/compose/offline.yml', '-f', path.join(dir, 'test.override.yml')];

function composeRun(args: string[], timeoutMs = 120_000): Promise<CommandResult> {
  const [command, ...rest] = compose;
  return runCommand(command!, [...rest, '--env-file', path.join(dir, '.env'), ...files(), ...args], { cwd: repoRoot, env, timeoutMs });
}

async function up(args: string[] = []): Promise<void> {
  const result = await runCommand('bash', ['deploy/compose/up.sh', '--offline', ...args], { cwd: repoRoot, env, timeoutMs: 600_000 });
  if (result.code !== 0) throw new Error(`up.sh exited ${result.code}:\n${result.stdout}\n${result.stderr}\n${await logs()}`);
}

async function logs(): Promise<string> {
  const result = await composeRun(['logs', '--no-color', '--tail', '40']);
  return result.stdout.slice(-12_000);
}

async function envValue(key: string): Promise<string> {
  const text = await readFile(path.join(dir, '.env'), 'utf8');
  return text.split('\n').find((line) => line.startsWith(`${key}=`))?.slice(key.length + 1) ?? '';
}

async function ratchet(args: string[]): Promise<CommandResult> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
  return runCommand(process.execPath, [bin, ...args], {
    cwd: dir,
    timeoutMs: 300_000,
    env: {
      ...clean,
      RATCHET_SERVER: `127.0.0.1:${grpcPort}`,
      RATCHET_SERVER_CA_FILE: path.join(dir, 'secrets', 'ca.crt'),
      RATCHET_TOKEN: (await envValue('RATCHET_GRPC_TOKENS')).split(',')[0]!,
    },
  });
}

/** Prometheus' answer to an instant query, as {labels, value} pairs. */
async function query(promql: string): Promise<{ metric: Record<string, string>; value: number }[]> {
  const response = await fetch(`http://127.0.0.1:${prometheusPort}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await response.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  if (body.status !== 'success') throw new Error(`query ${promql} failed: ${JSON.stringify(body)}`);
  return body.data.result.map(({ metric, value }) => ({ metric, value: Number(value[1]) }));
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await delay(2000);
  }
  throw new Error(`${what} did not happen within ${timeoutMs / 1000} s${last ? `: ${String(last)}` : ''}`);
}

/** The runner ids in the test-run events of a task. */
async function runnersOf(taskId: string): Promise<string[]> {
  const events = await ratchet(['watch', taskId, '--json']);
  expect(events.code).toBe(0);
  return events.stdout
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { testRunCompleted?: { runnerId?: string } }).testRunCompleted?.runnerId)
    .filter((runner): runner is string => runner !== undefined && runner !== '');
}

function taskIdOf(run: CommandResult): string {
  const id = /task ([0-9a-f-]{8,})/i.exec(run.stderr)?.[1];
  if (!id) throw new Error(`no task id in:\n${run.stderr}`);
  return id;
}

beforeAll(async () => {
  compose = await composeCommand();
  dir = await mkdtemp(path.join(tmpdir(), 'ratchet-compose-'));
  project = `ratchet-e2e-${process.pid}`;
  [grpcPort, prometheusPort, webPort] = [await freePort(), await freePort(), await freePort()];
  env = { ...process.env, COMPOSE_PROJECT_NAME: project, RATCHET_ENV_FILE: path.join(dir, '.env'), RATCHET_SECRETS_DIR: path.join(dir, 'secrets'), RATCHET_UP_TIMEOUT: '240' };
  env['RATCHET_COMPOSE_OVERRIDE'] = path.join(dir, 'test.override.yml');

  // The scripted model, mounted into the roles that call it; one job per runner at a time.
  const script = path.join(dir, 'model-script.json');
  await writeScript(script, [first, ...spread]);
  await chmod(script, 0o644);
  const mount = `    volumes: ["${path.join(dir, 'secrets')}:/run/secrets/ratchet:ro", "${script}:/run/ratchet-test/model-script.json:ro"]\n`;
  await writeFile(
    path.join(dir, 'test.override.yml'),
    `services:\n${['planner', 'coder', 'tester', 'reflector'].map((role) => `  ${role}:\n${mount}`).join('')}`,
  );
  const init = await runCommand('bash', ['deploy/compose/init.sh'], { cwd: repoRoot, env });
  if (init.code !== 0) throw new Error(`init.sh failed:\n${init.stderr}`);
  const settings = (await readFile(path.join(dir, '.env'), 'utf8'))
    .replace(/^RATCHET_GRPC_PORT=.*$/m, `RATCHET_GRPC_PORT=${grpcPort}`)
    .replace(/^RATCHET_PROMETHEUS_PORT=.*$/m, `RATCHET_PROMETHEUS_PORT=${prometheusPort}`)
    .replace(/^RATCHET_WEB_PORT=.*$/m, `RATCHET_WEB_PORT=${webPort}`)
    .replace(/^RATCHET_MODEL_SCRIPT=.*$/m, 'RATCHET_MODEL_SCRIPT=/run/ratchet-test/model-script.json')
    .replace(/^RATCHET_RUNNER_CONCURRENCY=.*$/m, 'RATCHET_RUNNER_CONCURRENCY=1');
  await writeFile(path.join(dir, '.env'), settings);

  // Always built, never a cached image, which would hide a broken build. The
  // Debian base under the images may come from debian-base.sh's cache: setup
  // made it with debootstrap on this machine when it built the sandbox image.
  const build = await runCommand('bash', ['deploy/images/build-offline.sh'], { cwd: repoRoot, timeoutMs: 600_000 });
  if (build.code !== 0) throw new Error(`build-offline.sh exited ${build.code}:\n${build.stdout}\n${build.stderr}`);
  await up();
});

afterAll(async () => {
  if (compose && dir) {
    // The engine may still hold a removed container's network endpoint for a
    // moment ("has active endpoints"); a second `down` then removes the
    // network and the volumes.
    let down = await composeRun(['down', '--volumes', '--remove-orphans', '--timeout', '20'], 180_000);
    for (let attempt = 1; down.code !== 0 && attempt < 3; attempt += 1) {
      await delay(3000);
      down = await composeRun(['down', '--volumes', '--remove-orphans', '--timeout', '20'], 180_000);
    }
    if (down.code !== 0) console.error(`compose down failed:\n${down.stderr}`);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the offline compose stack', () => {
  it('leaves no image behind that the build replaced (on a machine that built them before)', async () => {
    const dangling = await runCommand('docker', ['images', '-q', '--filter', 'dangling=true', '--filter', 'label=dev.ratchet.offline=1']);
    expect(dangling.code).toBe(0);
    expect(dangling.stdout.trim()).toBe('');
  });

  it('runs a task to SUCCEEDED through ratchet run --server, over TLS with a token', async () => {
    const run = await ratchet(['run', first.goal, '--out', 'out-first']);
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${await logs()}`);
    expect(run.stderr).toMatch(/submitted to server 127\.0\.0\.1:\d+/);
    expect(run.stderr).toMatch(/SUCCEEDED after 1 iteration/);
    const code = await readFile(path.join(dir, 'out-first', 'adder_compose_01.py'), 'utf8');
    expect(code).toContain('return a + b');
  });

  it('refuses a client without the token', async () => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    const run = await runCommand(process.execPath, [bin, 'history'], {
      env: { ...clean, RATCHET_SERVER: `127.0.0.1:${grpcPort}`, RATCHET_SERVER_CA_FILE: path.join(dir, 'secrets', 'ca.crt'), RATCHET_TOKEN: 'wrong' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/token/i);
  });

  it('serves the dashboard on 127.0.0.1 behind the same tokens, with the task run above', async () => {
    const token = (await envValue('RATCHET_GRPC_TOKENS')).split(',')[0]!;
    const base = `http://127.0.0.1:${webPort}`;
    const page = await eventually('the dashboard answering', async () => {
      const response = await fetch(`${base}/`);
      return response.ok ? response.text() : undefined;
    });
    expect(page).toContain('<div id="root"></div>');
    const refused = await fetch(`${base}/api/tasks`);
    expect(refused.status).toBe(401);
    const listed = await fetch(`${base}/api/tasks?status=succeeded`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.status).toBe(200);
    const { tasks } = (await listed.json()) as { tasks?: { goal: string }[] };
    expect((tasks ?? []).map((task) => task.goal)).toContain(first.goal);
  });

  it('scales sandbox runners to three with one command, and all three take jobs', async () => {
    await up(['--scale', 'sandbox-runner=3']);
    const runners = await composeRun(['ps', '-q', 'sandbox-runner']);
    expect(runners.stdout.trim().split('\n')).toHaveLength(3);

    const runs = await Promise.all(spread.map(({ goal }, index) => ratchet(['run', goal, '--out', `out-spread-${index}`])));
    const ids: string[] = [];
    for (const run of runs) {
      if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${await logs()}`);
      ids.push(taskIdOf(run));
    }
    const runnerIds = new Set((await Promise.all(ids.map(runnersOf))).flat());
    expect(runnerIds.size).toBe(3);
  });

  it('lets Prometheus scrape every service, each runner its own target', async () => {
    const up = await eventually('every target up', async () => {
      const result = await query('up{job="ratchet"}');
      return result.length >= services.length + 2 && result.every(({ value }) => value === 1) ? result : undefined;
    });
    const byService = new Map<string, number>();
    for (const { metric } of up) byService.set(metric['service']!, (byService.get(metric['service']!) ?? 0) + 1);
    expect(Object.fromEntries(byService)).toEqual(Object.fromEntries(services.map((name) => [name, name === 'sandbox-runner' ? 3 : 1])));
    // The loop's own series made it through: the tasks above finished.
    const finished = await eventually('finished tasks counted', async () => {
      const result = await query('sum(ratchet_tasks_finished_total{status="SUCCEEDED"})');
      return result[0] && result[0].value >= 1 + spread.length ? result[0].value : undefined;
    });
    expect(finished).toBeGreaterThanOrEqual(1 + spread.length);
    // Each of the three runners counted the jobs it took.
    const taken = await eventually('jobs taken by three runners', async () => {
      const result = await query('ratchet_sandbox_jobs_taken_total{service="sandbox-runner"}');
      return result.length === 3 && result.every(({ value }) => value >= 1) ? result : undefined;
    });
    expect(new Set(taken.map(({ metric }) => metric['instance'])).size).toBe(3);
  });
});
