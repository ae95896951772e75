import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { Language, LogLevel, OrchestratorServiceDefinition, Phase, TaskEvent, TaskStatus, TaskView, type Task } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { createGrpcClient, type GrpcClient } from '@ratchet/grpc-api';
import { scriptedGoals, startStack, waitFor, writeScript, type Stack } from '@ratchet/testing';
import { Client } from 'pg';
import { temporaryDirectory } from './helpers';

// A service that dies mid-task on the distributed stack, as `npm run stack`
// runs it (restart on): the stack starts it again, and the task waits for it
// instead of failing, says so in its events, and times the phase with the wait.
jest.setTimeout(300_000);

const repoRoot = path.resolve(__dirname, '../../..');
const token = 'restart-token';
// The first attempt fails a test (slow enough to kill memory meanwhile), so the task reflects, asking memory for lessons.
const [goal] = scriptedGoals('restart', 1, { failFirst: true, slowSeconds: 4 });
// Memory stays down longer than the test run, so the reflection finds it gone.
const restartDelayMs = 8_000;
const terminal = new Set([TaskStatus.TASK_STATUS_SUCCEEDED, TaskStatus.TASK_STATUS_FAILED, TaskStatus.TASK_STATUS_CANCELLED]);

let stack: Stack;
let client: GrpcClient<typeof OrchestratorServiceDefinition>;
let remove: () => Promise<void>;
const restarted: string[] = [];

async function taskNow(id: string): Promise<Task> {
  const { task } = await client.getTask({ taskId: id, view: TaskView.TASK_VIEW_BASIC });
  if (task === undefined) throw new AppError(ErrorCode.INTERNAL, `task ${id} vanished`);
  return task;
}

/** Polls until `condition` holds; the timeout error carries the services' output. */
async function eventually(condition: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(condition, { timeoutMs, intervalMs: 100, message: what }).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\n${stack.output().slice(-8000)}`, { cause: error });
  });
}

async function storedEvents(taskId: string): Promise<TaskEvent[]> {
  const db = new Client({ connectionString: stack.postgres.connectionString });
  await db.connect();
  try {
    const rows = await db.query<{ payload: unknown }>('SELECT payload FROM orchestrator.events WHERE task_id = $1 ORDER BY sequence', [taskId]);
    return rows.rows.map((row) => TaskEvent.fromJSON(row.payload));
  } finally {
    await db.end();
  }
}

const seconds = (duration: { seconds: number; nanos: number } | undefined) => (duration === undefined ? 0 : duration.seconds + duration.nanos / 1e9);

beforeAll(async () => {
  let dir: string;
  ({ dir, remove } = await temporaryDirectory());
  const script = path.join(dir, 'model-script.json');
  await writeScript(script, [goal!], { times: 3 });
  stack = await startStack({
    repoRoot,
    token,
    restart: true,
    restartDelayMs,
    onRestarted: (name) => void restarted.push(name),
    env: { RATCHET_MODEL_SCRIPT: script, RATCHET_LOG_LEVEL: 'info' },
  });
  client = createGrpcClient(OrchestratorServiceDefinition, stack.grpcAddress, { token, defaultTimeoutMs: 10_000 });
}, 180_000);

afterAll(async () => {
  client?.close();
  await stack?.stop();
  await remove?.();
});

describe('distributed Ratchet when a service dies mid-task', () => {
  it('restarts the memory service, and the task waits for it and succeeds', async () => {
    const { task } = await client.submitTask({
      goal: goal!.goal,
      language: Language.LANGUAGE_PYTHON,
      budget: undefined,
      workspace: [],
      dataFiles: [],
      setupCommand: '',
      acceptanceTests: [],
      approvalPolicy: undefined,
      labels: { suite: 'restart' },
      requestId: 'restart-0',
      testCommand: [],
      testEdits: 0,
      project: '',
      memory: 0,
      profile: '',
      reprompt: 0,
      questions: 0,
      review: 0,
      audit: 0,
    });
    const id = task!.id;
    // Killed while the first attempt's (slow) tests run: the reflection that follows needs memory.
    await eventually(async () => {
      const now = await taskNow(id);
      return now.status === TaskStatus.TASK_STATUS_TESTING && now.currentIteration === 1;
    }, 'the task testing its first attempt');
    const before = stack.processes.get('memory')?.[0]?.pid;
    const killedAt = Date.now();
    const exit = await stack.crashService('memory');
    expect(exit.signal).toBe('SIGKILL');

    await eventually(async () => terminal.has((await taskNow(id)).status), 'the task ending', 180_000);
    const final = await taskNow(id);
    expect([final.status, final.currentIteration, final.statusReason]).toEqual([TaskStatus.TASK_STATUS_SUCCEEDED, 2, expect.any(String)]);
    expect(restarted).toEqual(['memory']);
    expect(stack.processes.get('memory')?.[0]?.pid).not.toBe(before);

    const events = await storedEvents(id);
    // The reflection found memory gone and said so while it waited.
    const pauses = events.filter((event) => event.payload?.$case === 'logLine' && event.payload.logLine.level === LogLevel.LOG_LEVEL_WARN);
    expect(pauses.length).toBeGreaterThan(0);
    for (const pause of pauses) {
      expect(pause.iteration).toBe(1);
      expect(pause.payload).toMatchObject({ $case: 'logLine', logLine: { message: expect.stringMatching(/^memory service unavailable.*no responders on ratchet\.v1\.MemoryService\.\w+.*; REFLECTING waits and tries again/), attributes: { dependency: 'memory' } } });
    }
    // The reflection's reported duration covers the wait: from its start, before the first pause, to its end.
    const reflected = events.find((event) => event.payload?.$case === 'phaseCompleted' && event.payload.phaseCompleted.phase === Phase.PHASE_REFLECTING);
    const reflecting = events.find((event) => event.payload?.$case === 'phaseStarted' && event.payload.phaseStarted.phase === Phase.PHASE_REFLECTING);
    expect(reflected).toBeDefined();
    const duration = seconds(reflected!.payload?.$case === 'phaseCompleted' ? reflected!.payload.phaseCompleted.duration : undefined);
    const span = (reflected!.time!.getTime() - reflecting!.time!.getTime()) / 1000;
    expect(duration).toBeCloseTo(span, 0);
    expect(duration).toBeGreaterThanOrEqual((reflected!.time!.getTime() - pauses[0]!.time!.getTime()) / 1000);
    // Memory was down at least as long as the stack waited before restarting it.
    expect(reflected!.time!.getTime() - killedAt).toBeGreaterThanOrEqual(restartDelayMs - 1_000);
  });

  it('kept every service within its NATS permissions', () => {
    expect(stack.natsViolations()).toEqual([]);
  });
});
