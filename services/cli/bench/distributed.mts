// Distributed mode, one run on this machine: every service its own process
// over a real nats-server, history in a real Postgres, a zero-latency
// scripted model.
//
// 1. Orchestration overhead per iteration: tasks that fail once, reflect and
//    pass, submitted over gRPC one after another; from an iteration's CODING
//    start to the next one's, minus its TESTING phase (the sandbox), timed
//    from the task's own events. What remains is NATS hops, Postgres writes,
//    the role services, safety and memory. Goal: under 30 ms p50.
// 2. Sandbox-job throughput: the same 10-test pytest jobs pushed through the
//    JetStream job queue to one sandbox-runner process, then to two (each
//    runs one job at a time), in the same run.
//
// Run with `npm run bench` (builds first) or
// `node services/cli/bench/distributed.mts [tasks] [jobs]` after `npm run build`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/cli:bench -c smoke`,
// as CI runs it) runs one task and bursts of two jobs, with no warm-ups, only
// to show the bench still runs; its figures then mean nothing. Sizes given
// still count. It needs Docker, nats-server and Postgres, as the CLI's tests do.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { SANDBOX_JOB_QUEUE } from '@ratchet/agent';
import { createQueueCaller, inboxPrefixOf, NatsTransport } from '@ratchet/bus';
import { Language, OrchestratorServiceDefinition, Phase, RunJobRequest, RunJobResponse, SandboxDriver, TaskStatus } from '@ratchet/contracts';
import { createGrpcClient } from '@ratchet/grpc-api';
import { scriptedGoals, startStack, writeScript } from '@ratchet/testing';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const tasks = Number(process.argv[2] ?? (smoke ? 1 : 12));
const jobs = Number(process.argv[3] ?? (smoke ? 2 : 16));
// Warm-ups are left out of the figures; a smoke run's figures are not read, so it has none.
const warmUpTasks = smoke ? 0 : 1;
const warmUpJobs = smoke ? 0 : 2;
const repoRoot = path.resolve(import.meta.dirname, '../../..');
const root = mkdtempSync(path.join(os.tmpdir(), 'ratchet-bench-distributed-'));
const script = path.join(root, 'script.json');
const goals = scriptedGoals('bench', tasks + warmUpTasks, { failFirst: true });
await writeScript(script, goals);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};
const millis = (date: Date | undefined) => date?.getTime() ?? 0;
const duration = (value: { seconds: number; nanos: number } | undefined) => (value === undefined ? 0 : value.seconds * 1000 + value.nanos / 1e6);

const stack = await startStack({
  repoRoot,
  runners: 1,
  env: { RATCHET_MODEL_SCRIPT: script, RATCHET_LOG_LEVEL: 'info', RATCHET_RUNNER_CONCURRENCY: '1' },
});
const iterationOverheads: number[] = [];
const taskOverheads: number[] = [];
const sandboxMs: number[] = [];
/** Time inside each phase of an iteration (from its PhaseCompleted), to see where the overhead goes. */
const phaseMs = new Map<string, number[]>();
let single = 0;
let double = 0;
try {
  const client = createGrpcClient(OrchestratorServiceDefinition, stack.grpcAddress);
  for (const [index, { goal }] of goals.entries()) {
    const { task } = await client.submitTask({ goal, language: Language.LANGUAGE_PYTHON, budget: undefined, workspace: [], dataFiles: [], setupCommand: '', acceptanceTests: [], approvalPolicy: undefined, labels: {}, requestId: '', testCommand: [], testEdits: 0, project: '', memory: 0, profile: '', reprompt: 0, questions: 0, review: 0, audit: 0 });
    const events = [];
    for await (const { event } of client.watchTask({ taskId: task!.id, fromSequence: 0, followAfterCompletion: false })) if (event !== undefined) events.push(event);
    const completed = events.at(-1);
    if (completed?.payload?.$case !== 'taskCompleted' || completed.payload.taskCompleted.status !== TaskStatus.TASK_STATUS_SUCCEEDED || completed.payload.taskCompleted.iterations !== 2) {
      throw new Error(`task ${index} did not go as scripted: ${JSON.stringify(completed?.payload)}`);
    }
    if (index < warmUpTasks) continue;
    const starts = events.filter((event) => event.payload?.$case === 'phaseStarted' && [Phase.PHASE_CODING, Phase.PHASE_LEARNING].includes(event.payload.phaseStarted.phase));
    const testing = events.flatMap((event) => (event.payload?.$case === 'phaseCompleted' && event.payload.phaseCompleted.phase === Phase.PHASE_TESTING ? [duration(event.payload.phaseCompleted.duration)] : []));
    for (let iteration = 0; iteration + 1 < starts.length; iteration += 1) {
      iterationOverheads.push(millis(starts[iteration + 1]!.time) - millis(starts[iteration]!.time) - (testing[iteration] ?? 0));
    }
    sandboxMs.push(...testing);
    for (const event of events) {
      if (event.payload?.$case !== 'phaseCompleted') continue;
      const name = Phase[event.payload.phaseCompleted.phase].replace('PHASE_', '').toLowerCase();
      if (['coding', 'safety_check', 'reflecting'].includes(name)) phaseMs.set(name, [...(phaseMs.get(name) ?? []), duration(event.payload.phaseCompleted.duration)]);
    }
    taskOverheads.push(millis(starts[0]!.time) - millis(events[0]!.time) + (millis(completed.time) - millis(starts.at(-1)!.time)));
  }
  client.close();

  // Throughput: a burst of sandbox jobs through the queue, one runner then two. The stack's NATS
  // refuses anonymous clients; the bench enqueues as the tester does, with the tester role's user.
  const transport = await NatsTransport.connect({ url: stack.nats.url, name: 'bench', credentials: { user: 'tester', password: stack.natsPasswords['tester'] ?? '' }, inboxPrefix: inboxPrefixOf('tester') });
  const caller = createQueueCaller(transport, SANDBOX_JOB_QUEUE, { request: RunJobRequest, response: RunJobResponse });
  const tests = Array.from({ length: 10 }, (_, index) => `def test_add_${index}():\n    assert add(${index}, 1) == ${index + 1}\n`).join('\n\n');
  let counter = 0;
  const burst = async (count: number) => {
    const started = performance.now();
    await Promise.all(
      Array.from({ length: count }, async () => {
        counter += 1;
        const { result } = await caller.call(
          `bench-${counter}`,
          {
            job: {
              jobId: `bench-${counter}`,
              taskId: 'bench',
              iteration: 1,
              language: Language.LANGUAGE_PYTHON,
              dataFiles: [],
              setupCommand: '',
              files: [
                { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' },
                { path: 'tests/test_calc.py', content: `from calc import add\n\n${tests}` },
              ],
              commands: [{ name: 'tests', argv: ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/report.xml', 'tests'], workingDirectory: '', timeout: undefined }],
              env: {},
              limits: undefined,
              driver: SandboxDriver.SANDBOX_DRIVER_DOCKER,
              image: '',
              testReportPath: '/tmp/report.xml',
              protectedPaths: [],
              dependencies: [],
              enqueuedAt: new Date(),
              deadline: undefined,
            },
          },
          { timeoutMs: 300_000 },
        );
        if (result?.testReport?.passed !== 10) throw new Error(`a bench job did not pass: ${result?.stderr.toString()}`);
      }),
    );
    return count / ((performance.now() - started) / 1000);
  };
  await burst(warmUpJobs);
  single = await burst(jobs);
  await stack.startService('sandbox-runner');
  await burst(warmUpJobs);
  double = await burst(jobs);
  await caller.close();
  await transport.close();
} finally {
  await stack.stop();
  rmSync(root, { recursive: true, force: true });
}

const row = (name: string, values: number[]) => `| ${name} | ${values.length} | ${percentile(values, 50).toFixed(1)} | ${percentile(values, 90).toFixed(1)} |`;
console.log(`\nDistributed mode, ${tasks} tasks x 2 iterations (one fails, one passes), every service its own process, zero-latency scripted model (ms)\n`);
console.log('| measure | n | p50 | p90 |\n|---|---|---|---|');
console.log(row('orchestration overhead per iteration (CODING to next CODING, minus the sandbox)', iterationOverheads));
console.log(row('per task outside iterations (submit, retrieve, plan; learn, finish)', taskOverheads));
console.log(row('sandbox: 10-test pytest file via the job queue, Docker warm pool (TESTING phase)', sandboxMs));
for (const [name, values] of phaseMs) console.log(row(`  of which inside ${name} (service calls; the rest is transitions and events)`, values));
console.log(`\nSandbox-job throughput, ${jobs} 10-test pytest jobs at once, each runner one job at a time (${os.cpus().length} CPUs)\n`);
console.log('| runners | jobs/s |\n|---|---|');
console.log(`| 1 | ${single.toFixed(2)} |`);
console.log(`| 2 | ${double.toFixed(2)} |`);
console.log(`\ntwo runners / one: ${(double / single).toFixed(2)}x; orchestration overhead goal < 30 ms p50: ${percentile(iterationOverheads, 50) < 30 ? 'met' : 'NOT met'}`);
