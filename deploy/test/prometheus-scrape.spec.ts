import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  codeReply,
  planReply,
  startFakeOpenAiServer,
  startPrometheus,
  startStack,
  stackServices,
  testsReply,
  waitFor,
  type FakeOpenAiServer,
  type PrometheusFixture,
  type PrometheusSample,
  type Stack,
} from '@ratchet/testing';
import { runCommand } from './commands';
import { dashboards, prometheusQueries, withGrafanaVariables } from './dashboards';

// The metrics as an operator sees them: the distributed stack (every service
// its own process, two sandbox runners) serving /metrics behind a bearer
// token, a real Prometheus scraping each process every second, and one task
// run through the real CLI to SUCCEEDED. The model is the fake OpenAI server:
// the planner's first call fails (a 500 the client retries, then another),
// so the error, retry and pause paths move too. Everything is asserted
// through Prometheus's query API, as a dashboard would read it.
jest.setTimeout(300_000);

const repoRoot = path.resolve(__dirname, '../..');
const bin = path.join(repoRoot, 'services/cli/bin/ratchet.js');
const grpcToken = `g${randomBytes(12).toString('hex')}`;
const metricsToken = `m${randomBytes(12).toString('hex')}`;
// Priced in config/models.yaml, so the cost counter moves.
const modelName = 'gpt-4o-mini';
const goal = 'a function that adds two numbers [metrics]';

let model: FakeOpenAiServer;
let stack: Stack;
let prometheus: PrometheusFixture;
let dir: string;

/** The one series of `expr`'s answer, or a failure showing what came back. */
async function single(expr: string): Promise<PrometheusSample> {
  const result = await prometheus.query(expr);
  if (result.length !== 1) throw new Error(`${expr} answered ${JSON.stringify(result)}`);
  return result[0] as PrometheusSample;
}

/** The summed value of `expr`, once Prometheus has scraped something for it. */
async function valueOf(expr: string): Promise<number> {
  return (await single(`sum(${expr})`)).value;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ratchet-metrics-'));
  model = await startFakeOpenAiServer();
  stack = await startStack({
    repoRoot,
    runners: 2,
    token: grpcToken,
    metrics: { token: metricsToken },
    env: { RATCHET_MODEL_BASE_URL: model.url, RATCHET_MODEL_NAME: modelName, RATCHET_MODEL_MAX_RETRIES: '1', RATCHET_LOG_LEVEL: 'info' },
  });
  const targets = stack.metricsTargets();
  prometheus = await startPrometheus({
    jobs: [
      { name: 'ratchet', bearerToken: metricsToken, targets: targets.map(({ service, address }) => ({ address, labels: { service } })) },
      // The same orchestrator without the token: refused.
      { name: 'no-token', targets: [{ address: targets.find(({ service }) => service === 'orchestrator')!.address }] },
    ],
  });
}, 240_000);

afterAll(async () => {
  await prometheus?.stop();
  await stack?.stop();
  await model?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('Prometheus scraping the distributed stack', () => {
  it('scrapes every service process with the bearer token, and none without it', async () => {
    const targets = stack.metricsTargets();
    expect(targets.map(({ service }) => service).sort()).toEqual([...stackServices, 'sandbox-runner'].sort());
    const up = await waitFor(
      async () => {
        const series = await prometheus.query('up{job="ratchet"}');
        return series.length === targets.length && series.every((sample) => sample.value === 1) ? series : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, message: 'every service up in Prometheus' },
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\ntargets: ${JSON.stringify(await prometheus.targets(), null, 1)}\n${prometheus.output()}`);
    });
    expect(up.map((sample) => sample.metric['service']).sort()).toEqual([...stackServices, 'sandbox-runner'].sort());
    // Each process says which service it is.
    const info = await prometheus.query('ratchet_service_info');
    expect(info.map((sample) => [sample.metric['service'], sample.metric['service_name']]).sort()).toEqual(up.map((sample) => [sample.metric['service'], sample.metric['service']]).sort());

    await waitFor(async () => (await prometheus.targets()).some((target) => target.labels['job'] === 'no-token' && target.health === 'down'), { timeoutMs: 15_000, intervalMs: 250 });
    expect((await single('up{job="no-token"}')).value).toBe(0);
    expect((await prometheus.targets()).find((target) => target.labels['job'] === 'no-token')?.lastError).toMatch(/401/);
  });

  it('shows a task run to SUCCEEDED in the loop, model, bus and sandbox metrics', async () => {
    const code = 'adder_metrics.py';
    const test = 'tests/test_adder_metrics.py';
    model.enqueue(
      // The planner's first call: a 500, retried by the client, and another: the call fails, the orchestrator waits and asks again.
      { kind: 'error', status: 500, message: 'overloaded', retryAfter: 0 },
      { kind: 'error', status: 500, message: 'overloaded', retryAfter: 0 },
      { kind: 'completion', content: planReply(code, test), usage: { promptTokens: 900, completionTokens: 150 } },
      { kind: 'completion', content: codeReply(code, 'def add(a, b):\n    return a + b\n'), usage: { promptTokens: 1_200, completionTokens: 80 } },
      { kind: 'completion', content: testsReply(test, 'from adder_metrics import add\n\ndef test_add():\n    assert add(2, 3) == 5\n'), usage: { promptTokens: 1_000, completionTokens: 60 } },
    );
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    const run = await runCommand(process.execPath, [bin, 'run', goal, '--out', 'out'], { cwd: dir, env: { ...clean, RATCHET_SERVER: stack.grpcAddress, RATCHET_TOKEN: grpcToken }, timeoutMs: 240_000 });
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${stack.output().slice(-8000)}`);
    expect(run.stderr).toMatch(/SUCCEEDED after 1 iteration/);
    expect(await readFile(path.join(dir, 'out', code), 'utf8')).toContain('return a + b');
    expect(model.requests.filter((request) => request.path === '/v1/chat/completions')).toHaveLength(5);

    // Everything the task moved was recorded before the CLI saw it end. Scrapes of a target follow each other a second apart:
    // one that began over a second after the end means the one before it, also after the end, is stored.
    const ended = Date.now();
    await waitFor(async () => (await prometheus.targets()).filter((target) => target.labels['job'] === 'ratchet').every((target) => target.lastScrape > ended + 1_000), {
      timeoutMs: 30_000,
      intervalMs: 250,
      message: 'a stored scrape of every process after the task ended',
    });

    // The loop, from the orchestrator.
    expect(await single('ratchet_tasks_finished_total{status="SUCCEEDED"}')).toEqual({ metric: expect.objectContaining({ service: 'orchestrator' }), value: 1 });
    expect(await valueOf('ratchet_task_iterations_count{status="SUCCEEDED"}')).toBe(1);
    expect(await valueOf('ratchet_task_iterations_sum{status="SUCCEEDED"}')).toBe(1);
    const active = await prometheus.query('ratchet_tasks_active');
    expect(active.map((sample) => sample.metric['status'])).toEqual(expect.arrayContaining(['QUEUED', 'PLANNING', 'CODING', 'TESTING', 'AWAITING_APPROVAL']));
    expect(active.every((sample) => sample.value === 0)).toBe(true);
    const phases = await prometheus.query('sum by (phase, outcome) (ratchet_phase_duration_seconds_count)');
    const runs = Object.fromEntries(phases.map((sample) => [`${sample.metric['phase']}/${sample.metric['outcome']}`, sample.value]));
    expect(runs).toEqual(
      expect.objectContaining({
        'retrieving/lessons-retrieved': 1,
        'planning/error': 1,
        'planning/planned': 1,
        'coding/coded': 1,
        'safety_check/safety-passed': 1,
        'testing/tests-written': 1,
        'testing/tests-passed': 1,
        'learning/learned': 1,
      }),
    );

    // The model, from each role service, by role and configured model.
    for (const role of ['planner', 'coder', 'tester']) {
      const labels = `role="${role}",model="${modelName}"`;
      expect({ role, prompt: await valueOf(`ratchet_model_tokens_total{${labels},kind="prompt"}`) }).toEqual({ role, prompt: { planner: 900, coder: 1_200, tester: 1_000 }[role] });
      expect({ role, cost: (await valueOf(`ratchet_model_cost_usd_total{${labels}}`)) > 0 }).toEqual({ role, cost: true });
      expect(await single(`ratchet_model_tokens_total{${labels},kind="completion"}`)).toEqual({ metric: expect.objectContaining({ service: role }), value: { planner: 150, coder: 80, tester: 60 }[role] });
    }
    expect(await valueOf(`ratchet_model_cost_usd_total{role="planner",model="${modelName}"}`)).toBeCloseTo((900 * 0.15 + 150 * 0.6) / 1_000_000, 12);
    expect(await valueOf(`ratchet_model_retries_total{role="planner",model="${modelName}"}`)).toBe(1);
    expect(await single(`ratchet_model_errors_total{role="planner",model="${modelName}"}`)).toEqual({ metric: expect.objectContaining({ code: 'UNAVAILABLE', service: 'planner' }), value: 1 });
    expect(await valueOf(`ratchet_model_call_duration_seconds_count{role="planner",model="${modelName}"}`)).toBe(2);
    // The reflector was not needed: its series exist, at zero.
    expect(await valueOf(`ratchet_model_tokens_total{role="reflector",model="${modelName}"}`)).toBe(0);

    // The bus: the orchestrator's calls and the planner's answers, with the failed one by its code.
    const createPlan = 'rpc_service="PlannerService",rpc_method="CreatePlan"';
    expect(await single(`ratchet_rpc_client_duration_seconds_count{${createPlan}}`)).toEqual({ metric: expect.objectContaining({ service: 'orchestrator' }), value: 2 });
    expect(await single(`ratchet_rpc_client_errors_total{${createPlan}}`)).toEqual({ metric: expect.objectContaining({ service: 'orchestrator', code: 'UNAVAILABLE' }), value: 1 });
    expect(await single(`ratchet_rpc_server_duration_seconds_count{${createPlan}}`)).toEqual({ metric: expect.objectContaining({ service: 'planner' }), value: 2 });
    expect(await single(`ratchet_rpc_server_errors_total{${createPlan}}`)).toEqual({ metric: expect.objectContaining({ service: 'planner', code: 'UNAVAILABLE' }), value: 1 });
    expect(await valueOf('ratchet_rpc_server_duration_seconds_count{rpc_service="MemoryService"}')).toBeGreaterThanOrEqual(2);
    // The code check four times: the safety check (Bandit deferred), and before the tests run the generated tests, the change's gate, the gate's report.
    expect(await valueOf('ratchet_rpc_server_duration_seconds_count{rpc_service="SafetyService",rpc_method="CheckCode"}')).toBe(4);

    // The sandbox: two jobs (Bandit over the generated tests, and the test run with Bandit over the code before it), each runner reporting; nothing killed; the queue drained.
    const taken = await prometheus.query('ratchet_sandbox_jobs_taken_total');
    expect(taken).toHaveLength(2);
    expect(taken.reduce((sum, sample) => sum + sample.value, 0)).toBe(2);
    expect(new Set(taken.map((sample) => sample.metric['instance'])).size).toBe(2);
    expect(await single('sum(ratchet_sandbox_job_duration_seconds_count)')).toEqual({ metric: {}, value: 2 });
    expect(await valueOf('ratchet_sandbox_job_duration_seconds_count{outcome="passed"}')).toBeGreaterThanOrEqual(1);
    expect((await prometheus.query('ratchet_sandbox_oom_kills_total')).map((sample) => sample.value)).toEqual([0, 0]);
    expect((await prometheus.query('ratchet_sandbox_timeouts_total')).map((sample) => sample.value)).toEqual([0, 0]);
    expect(await prometheus.query('ratchet_sandbox_warm_pool_size')).toHaveLength(2);
    expect(await single('max(ratchet_sandbox_queue_lag{queue="sandbox-jobs"})')).toEqual({ metric: {}, value: 0 });
    expect((await single('count(ratchet_service_info{service_name="sandbox-runner"})')).value).toBe(2);
  });

  it('answers every query of the Grafana dashboards', async () => {
    const queries = dashboards().flatMap(prometheusQueries);
    const failures: string[] = [];
    for (const { panel, expr } of queries) {
      await prometheus.query(withGrafanaVariables(expr)).catch((error: unknown) => failures.push(`${panel}: ${String(error)}`));
    }
    expect(failures).toEqual([]);
    // The boards show this task: it finished, and it succeeded.
    expect((await single(withGrafanaVariables('sum(increase(ratchet_tasks_finished_total[$__range]))'))).value).toBeGreaterThan(0);
  });
});
