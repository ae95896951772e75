import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { Language, OrchestratorServiceDefinition, TaskStatus, TaskView, type Task } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { createGrpcClient, grpcHealth, type GrpcClient } from '@ratchet/grpc-api';
import { scriptedGoals, startStack, waitFor, writeScript, type ScriptedGoal, type Stack } from '@ratchet/testing';
import { Client } from 'pg';
import { readdir } from 'node:fs/promises';
import { runRatchet, temporaryDirectory } from './helpers';

// Faults on the real distributed stack: the orchestrator SIGKILLed at random
// moments and restarted (same instance id, so it takes its tasks straight
// back), a sandbox runner killed mid-job, nats-server restarted. Every task
// must still succeed, with no iteration and no stored phase result twice.
jest.setTimeout(600_000);

const repoRoot = path.resolve(__dirname, '../../..');
const token = 'fault-token';
// Each task fails once, is reflected on and passes: two iterations, eight model calls.
const goals = scriptedGoals('fault', 20, { failFirst: true });
const outageGoals = scriptedGoals('outage', 3, { failFirst: true });
// The task a user follows with `ratchet run --server` through the outage.
const [cliOutageGoal] = scriptedGoals('outage-cli', 1, { failFirst: true }) as [ScriptedGoal];
// The task a user follows with `ratchet run --server` while the orchestrator restarts: slow tests keep it mid-run.
const [cliRestartGoal] = scriptedGoals('restart-cli', 1, { slowSeconds: 4 }) as [ScriptedGoal];
// Tests that take a few seconds, so the tasks are mid-run when their replica dies.
const takeoverGoals = scriptedGoals('takeover', 4, { slowSeconds: 3 });
const terminal = new Set([TaskStatus.TASK_STATUS_SUCCEEDED, TaskStatus.TASK_STATUS_FAILED, TaskStatus.TASK_STATUS_CANCELLED]);

let stack: Stack;
let client: GrpcClient<typeof OrchestratorServiceDefinition>;
let remove: () => Promise<void>;
let dir: string;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Retries while the orchestrator is down or starting (UNAVAILABLE): what a client does across a restart. */
async function whileUp<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (AppError.from(error).code !== ErrorCode.UNAVAILABLE || attempt > 100) throw error;
      await sleep(250);
    }
  }
}

/** How many "task paused" lines the services' kept output holds now (a tail: read it before and soon after). */
function pauseCount(): number {
  return stack.output().match(/"msg":"task paused"/g)?.length ?? 0;
}

async function tasksOf(suite = 'faults', through = client): Promise<Task[]> {
  const { tasks } = await whileUp(() => through.listTasks({ statuses: [], labels: {}, pageSize: 100, pageToken: '', view: TaskView.TASK_VIEW_BASIC }));
  return tasks.filter((task) => task.labels['suite'] === suite);
}

/** Submits `goals` labelled with `suite`; idempotent per goal, so a retry across a restart makes no second task. */
async function submitAll(goals: readonly ScriptedGoal[], suite: string): Promise<void> {
  for (const [index, { goal }] of goals.entries()) {
    await whileUp(() =>
      client.submitTask({ goal, language: Language.LANGUAGE_PYTHON, budget: undefined, workspace: [], dataFiles: [], setupCommand: '', acceptanceTests: [], approvalPolicy: undefined, labels: { suite }, requestId: `${suite}-${index}`, testCommand: [], testEdits: 0, project: '', memory: 0, profile: '', reprompt: 0, questions: 0, review: 0, audit: 0 }),
    );
  }
}

/** Polls until `condition` holds; the timeout error carries the services' output. */
async function eventually(condition: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(condition, { timeoutMs, intervalMs: 200, message: what }).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\n${stack.output().slice(-6000)}`, { cause: error });
  });
}

beforeAll(async () => {
  ({ dir, remove } = await temporaryDirectory());
  const script = path.join(dir, 'model-script.json');
  // A phase cut off by a kill (or by the bus going away) asks its model again,
  // as it would ask a real model; each turn may answer that many times.
  await writeScript(script, [...goals, ...outageGoals, cliOutageGoal, cliRestartGoal, ...takeoverGoals], { times: 10 });
  stack = await startStack({
    repoRoot,
    runners: 2,
    token,
    env: {
      RATCHET_MODEL_SCRIPT: script,
      RATCHET_LOG_LEVEL: 'info',
      RATCHET_ORCHESTRATOR_INSTANCE_ID: 'orchestrator-a',
      RATCHET_ORCHESTRATOR_MAX_CONCURRENT_TASKS: '20',
      RATCHET_RUNNER_ACK_WAIT_MS: '3000',
      // Short leases, so a replica takes over a dead one's tasks within seconds.
      RATCHET_ORCHESTRATOR_LEASE_MS: '3000',
    },
  });
  client = createGrpcClient(OrchestratorServiceDefinition, stack.grpcAddress, { token, defaultTimeoutMs: 10_000 });
}, 180_000);

afterAll(async () => {
  client?.close();
  await stack?.stop();
  await remove?.();
});

describe('distributed Ratchet under faults', () => {
  it('finishes twenty tasks through orchestrator kills, a runner kill and a nats-server restart', async () => {
    await submitAll(goals, 'faults');
    const log: string[] = [];
    const started = Date.now();
    let orchestratorKills = 0;
    for (let round = 1; ; round++) {
      const tasks = await tasksOf();
      const done = tasks.filter((task) => terminal.has(task.status)).length;
      if (done === goals.length) break;
      if (Date.now() - started > 400_000) throw new Error(`only ${done}/${goals.length} tasks ended after ${round} rounds (${log.join('; ')})\n${stack.output().slice(-10_000)}`);
      await sleep(300 + Math.floor(Math.random() * 1_500));
      if (round === 2) {
        // A runner dies holding a job; its job goes to the other runner after the ack wait.
        await stack.killService('sandbox-runner', 0);
        await stack.startService('sandbox-runner');
        log.push(`runner killed at ${Date.now() - started} ms`);
      } else if (round === 4) {
        await stack.nats.restart();
        log.push(`nats restarted at ${Date.now() - started} ms`);
      } else if (orchestratorKills < 8) {
        await stack.killService('orchestrator');
        orchestratorKills += 1;
        await stack.startService('orchestrator');
        log.push(`orchestrator killed at ${Date.now() - started} ms with ${done} done`);
      }
    }
    expect(orchestratorKills).toBeGreaterThanOrEqual(5);

    const tasks = await tasksOf();
    expect(tasks).toHaveLength(goals.length);
    const failed = tasks.filter((task) => task.status !== TaskStatus.TASK_STATUS_SUCCEEDED);
    if (failed.length > 0) {
      // What each failed task went through, from the database, to tell a bug from a flake.
      const db = new Client({ connectionString: stack.postgres.connectionString });
      await db.connect();
      const detail = await db.query(
        `SELECT task_id, number, phase, error->>'message' AS error, files::text AS files, reflection->>'rootCause' AS root_cause FROM orchestrator.iterations WHERE task_id = ANY($1::text[]) ORDER BY 1, 2`,
        [failed.map((task) => task.id)],
      );
      const events = await db.query(`SELECT task_id, sequence, kind, payload::text AS payload FROM orchestrator.events WHERE task_id = ANY($1::text[]) ORDER BY 1, 2`, [failed.map((task) => task.id)]);
      await db.end();
      throw new Error(
        `tasks did not succeed: ${failed.map((task) => `${task.id} ${task.status} ${task.statusReason}`).join('; ')} (${log.join('; ')})\n${JSON.stringify(detail.rows, null, 1)}\n${events.rows.map((row) => `${row.sequence} ${row.kind} ${String(row.payload).slice(0, 300)}`).join('\n')}\nthe services' output ended with:\n${stack.output().slice(-20_000)}`,
      );
    }
    // The script fails each task's first attempt once: exactly two iterations each.
    expect(tasks.map((task) => task.currentIteration)).toEqual(goals.map(() => 2));

    const db = new Client({ connectionString: stack.postgres.connectionString });
    await db.connect();
    try {
      const iterations = await db.query<{ task_id: string; count: string; numbers: number[] }>(
        'SELECT task_id, count(*) AS count, array_agg(number ORDER BY number) AS numbers FROM orchestrator.iterations GROUP BY task_id',
      );
      expect(iterations.rows).toHaveLength(goals.length);
      for (const row of iterations.rows) expect(row.numbers).toEqual([1, 2]);
      // A phase whose result was stored is never completed (its model asked) again.
      const repeated = await db.query(
        `SELECT task_id, iteration, payload->'phaseCompleted'->>'phase' AS phase, count(*) FROM orchestrator.events
         WHERE kind = 'phaseCompleted' GROUP BY 1, 2, 3 HAVING count(*) > 1`,
      );
      expect(repeated.rows).toEqual([]);
      const completions = await db.query<{ count: string }>("SELECT count(*) AS count FROM orchestrator.events WHERE kind = 'taskCompleted'");
      expect(Number(completions.rows[0]?.count)).toBe(goals.length);
    } finally {
      await db.end();
    }
  });

  it('waits for Postgres at start (not ready meanwhile) and pauses tasks while it is gone', async () => {
    // Down at start: the orchestrator comes up, says NOT_SERVING and turns calls away until Postgres is back.
    await stack.postgres.kill();
    await stack.killService('orchestrator');
    await stack.startService('orchestrator');
    expect(await grpcHealth(stack.grpcAddress)).toBe('NOT_SERVING');
    await expect(client.listTasks({ statuses: [], labels: {}, pageSize: 1, pageToken: '', view: TaskView.TASK_VIEW_BASIC })).rejects.toMatchObject({
      code: ErrorCode.UNAVAILABLE,
      message: expect.stringContaining('waiting for Postgres'),
    });
    await stack.postgres.restart();
    await eventually(async () => (await grpcHealth(stack.grpcAddress)) === 'SERVING', 'SERVING after Postgres came back');

    // Lost mid-task: the tasks pause, then finish once it returns.
    await submitAll(outageGoals, 'outage');
    await eventually(async () => (await tasksOf('outage')).some((task) => task.currentIteration >= 1), 'a task reaching its first iteration');
    // Down until a task has paused (and said so): a fixed wait could fall inside a model call or a
    // sandbox run that touches no database, and the tasks would never see the outage.
    const pausesBefore = pauseCount();
    await stack.postgres.kill();
    await eventually(async () => pauseCount() > pausesBefore, 'a task pausing while Postgres is gone', 60_000);
    // A user runs `ratchet run --server` while it is gone: the CLI waits for the server to take the
    // task (its submit sent again with the same request id), follows it and gets the result.
    const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    const cliRun = runRatchet(['run', cliOutageGoal.goal, '--server', stack.grpcAddress, '--out', path.join(dir, 'outage-out')], {
      cwd: dir,
      env: { ...cleanEnv, RATCHET_TOKEN: token },
      timeoutMs: 300_000,
    });
    await sleep(5_000);
    await stack.postgres.restart();
    await eventually(async () => (await tasksOf('outage')).every((task) => terminal.has(task.status)), 'every outage task ending', 120_000);
    const tasks = await tasksOf('outage');
    expect(tasks.map((task) => [task.status, task.currentIteration])).toEqual(outageGoals.map(() => [TaskStatus.TASK_STATUS_SUCCEEDED, 2]));
    const run = await cliRun;
    if (run.status !== 0) throw new Error(`ratchet run --server exited ${run.status} through the outage:\n${run.stderr}`);
    expect(run.stderr).toMatch(/SUCCEEDED after 2 iteration\(s\)/);
    expect((await readdir(path.join(dir, 'outage-out'))).length).toBeGreaterThan(0);
  });

  it('keeps following a task with ratchet run --server while the orchestrator restarts, from the last event it saw', async () => {
    const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    const out = path.join(dir, 'restart-out');
    const cliRun = runRatchet(['run', cliRestartGoal.goal, '--server', stack.grpcAddress, '--out', out], { cwd: dir, env: { ...cleanEnv, RATCHET_TOKEN: token }, timeoutMs: 300_000 });
    const mine = async () => (await whileUp(() => client.listTasks({ statuses: [], labels: {}, pageSize: 100, pageToken: '', view: TaskView.TASK_VIEW_BASIC }))).tasks.find((task) => task.goal === cliRestartGoal.goal);
    await eventually(async () => ((await mine())?.currentIteration ?? 0) >= 1, 'the CLI task reaching its first iteration');
    await stack.killService('orchestrator');
    await stack.startService('orchestrator');
    const run = await cliRun;
    if (run.status !== 0) throw new Error(`ratchet run --server exited ${run.status} across the restart:\n${run.stderr}`);
    expect(run.stderr).toMatch(/lost the task's event stream from server .* \(UNAVAILABLE: .*\); the task goes on; following again from event \d+ in \d+\.\d s/);
    expect(run.stderr).toMatch(/SUCCEEDED after 1 iteration\(s\)/);
    // Every event once: the stream picked up after the last one it printed.
    expect(run.stderr.match(/\[iteration 1\] planning done/g)).toHaveLength(1);
    expect((await readdir(out)).length).toBeGreaterThan(0);
  });

  it('has a second replica take over the tasks of one that died, when their leases run out', async () => {
    await stack.startService('orchestrator', { RATCHET_ORCHESTRATOR_INSTANCE_ID: 'orchestrator-b', RATCHET_GRPC_ADDRESS: '127.0.0.1:0' });
    const [first, survivor] = stack.processes.get('orchestrator') ?? [];
    await submitAll(takeoverGoals, 'takeover');
    // The replica that took the submissions dies with them running; it is not restarted.
    await eventually(async () => (await tasksOf('takeover')).every((task) => task.status === TaskStatus.TASK_STATUS_TESTING), 'all takeover tasks testing');
    expect(first).toBeDefined();
    await stack.killService('orchestrator', 0);
    // Reads still need a gRPC endpoint: the surviving replica's, on the port it chose.
    const { port } = JSON.parse(await survivor!.waitForLine(/"msg":"gRPC listening"/)) as { port: number };
    const other = createGrpcClient(OrchestratorServiceDefinition, `127.0.0.1:${port}`, { token, defaultTimeoutMs: 10_000 });
    try {
      await eventually(async () => (await tasksOf('takeover', other)).every((task) => terminal.has(task.status)), 'every takeover task ending', 90_000);
      const tasks = await tasksOf('takeover', other);
      expect(tasks.map((task) => [task.status, task.currentIteration])).toEqual(takeoverGoals.map(() => [TaskStatus.TASK_STATUS_SUCCEEDED, 1]));
    } finally {
      other.close();
    }
  });

  it('kept every service within its NATS permissions', () => {
    expect(stack.natsViolations()).toEqual([]);
  });
});
