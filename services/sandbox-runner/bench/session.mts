// Warm-session command latency on this machine, one run, through the real
// RPC path: the runner hosted with hostService on an in-process bus, a
// session opened on the shared client, then commands sent to the client
// pinned to the session's runner, as the coder does. For the Docker and the
// bubblewrap driver:
//
// - SessionExec of `true` in a warm session (N after warm-ups), and a
//   10-test pytest run in the same session;
// - next to them, in the same rounds, the same two commands as one-off
//   RunJob jobs: from a warm pool of 2 (refilled, untimed, before each job)
//   and from no pool (a fresh sandbox per job, "cold").
//
// Rounds are interleaved (a block of session commands, then one job of each
// kind) so the VM's drift spreads over every row. The goal is a
// session exec p50 under 5 ms for `true`; the bench reports whether it is
// met and asserts nothing.
//
// Run with `npm run bench` (builds first) or
// `node services/sandbox-runner/bench/session.mts [execs] [pytestRuns]` after `npm run build`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/sandbox-runner:bench -c smoke`,
// as CI runs it) makes 4 session execs and one round of the rest after one
// warm-up exec, only to show the bench still runs; its figures then mean
// nothing. Sizes given still count. It needs Docker and bubblewrap, as the
// runner's tests do.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createClient, InProcessTransport, type ServiceClient } from '@ratchet/bus';
import { Language, SandboxDriver, SandboxRunnerServiceDefinition, type SandboxJob } from '@ratchet/contracts';
import { hostService, type RunningService } from '@ratchet/runtime';
// The bench runs the built package (dist), as the runner process does.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createSandboxRunnerService, type DriverName, type SandboxRunnerService } from '@ratchet/sandbox-runner';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const execRuns = Number(process.argv[2] ?? (smoke ? 4 : 200));
const pytestRuns = Number(process.argv[3] ?? (smoke ? 1 : 20));
const warmUps = smoke ? 1 : 5;
// One block of session `true` execs per round, so the one-off jobs sit between them.
const rounds = pytestRuns;
const execsPerRound = Math.ceil(execRuns / rounds);

const tenTests = Array.from({ length: 10 }, (_, index) => `def test_${index}():\n    assert ${index} + 1 == ${index + 1}\n`).join('\n\n');
const files = { 'tests/test_ten.py': tenTests };
const pytest = ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'];
const trueArgv = ['true'];

let counter = 0;
function job(argv: readonly string[]): SandboxJob {
  counter += 1;
  return {
    jobId: `bench-session-${process.pid}-${counter}`,
    taskId: 'bench',
    iteration: 1,
    language: Language.LANGUAGE_PYTHON,
    files: Object.entries(files).map(([path, content]) => ({ path, content })),
    dataFiles: [],
    setupCommand: '',
    commands: [{ name: 'run', argv: [...argv], workingDirectory: '', timeout: undefined }],
    env: {},
    limits: undefined,
    driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
    image: '',
    testReportPath: '',
    protectedPaths: [],
    dependencies: [],
    enqueuedAt: undefined,
    deadline: undefined,
  };
}

const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};
const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);

type Client = ServiceClient<typeof SandboxRunnerServiceDefinition>;

/** A runner hosted on its own in-process bus, so each client reaches exactly this one. */
interface Hosted {
  readonly service: SandboxRunnerService;
  readonly running: RunningService;
  readonly transport: InProcessTransport;
  readonly client: Client;
}

async function host(driver: DriverName, label: string, warmPool: number): Promise<Hosted> {
  const transport = new InProcessTransport();
  const service = createSandboxRunnerService({ driver, runnerId: `bench-${label}-${process.pid}`, warmPool, sessionIdleMs: 600_000 });
  const running = hostService({ name: 'sandbox-runner', version: 'bench', definition: SandboxRunnerServiceDefinition, implementation: service.implementation, instance: service.instance }, { transport });
  await running.server.ready;
  return { service, running, transport, client: createClient(transport, SandboxRunnerServiceDefinition, { defaultTimeoutMs: 120_000, maxAttempts: 1 }) };
}

async function stop(hosted: Hosted): Promise<void> {
  await hosted.running.stop(1_000);
  await hosted.service.close();
  await hosted.transport.close();
}

async function timed(action: () => Promise<number>, what: string): Promise<number> {
  const started = performance.now();
  const exitCode = await action();
  const elapsed = performance.now() - started;
  if (exitCode !== 0) throw new Error(`${what} exited ${exitCode}`);
  return elapsed;
}

interface Figures {
  readonly sessionTrue: number[];
  readonly sessionPytest: number[];
  readonly warmTrue: number[];
  readonly warmPytest: number[];
  readonly coldTrue: number[];
  readonly coldPytest: number[];
}

async function measure(driver: DriverName): Promise<Figures> {
  const sessionHost = await host(driver, `${driver}-session`, 0);
  const warm = await host(driver, `${driver}-warm`, 2);
  const cold = await host(driver, `${driver}-cold`, 0);
  const figures: Figures = { sessionTrue: [], sessionPytest: [], warmTrue: [], warmPytest: [], coldTrue: [], coldPytest: [] };
  try {
    const opened = await sessionHost.client.openSession({
      sessionId: `bench-${driver}-${process.pid}`,
      taskId: 'bench',
      iteration: 1,
      language: Language.LANGUAGE_PYTHON,
      files: Object.entries(files).map(([path, content]) => ({ path, content })),
      dataFiles: [],
      setupCommand: '',
      env: {},
      limits: undefined,
      driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
      image: '',
      idleTimeout: undefined,
    });
    const pinned = createClient(sessionHost.transport, SandboxRunnerServiceDefinition, { instance: opened.runnerId, defaultTimeoutMs: 120_000, maxAttempts: 1 });
    const exec = async (argv: readonly string[]) => {
      const result = await pinned.sessionExec({ sessionId: opened.sessionId, argv: [...argv], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
      if (argv === pytest && !result.stdout.toString().includes('10 passed')) throw new Error(`pytest in the ${driver} session: ${result.stdout.toString()}${result.stderr.toString()}`);
      return result.exitCode;
    };
    const oneOff = async (client: Client, argv: readonly string[]) => {
      const { result } = await client.runJob({ job: job(argv) });
      if (argv === pytest && !result?.stdout.toString().includes('10 passed')) throw new Error(`pytest as a ${driver} job: ${result?.stdout.toString() ?? ''}${result?.stderr.toString() ?? ''}`);
      return result?.exitCode ?? -1;
    };
    // Untimed: every pool full and every removal done, so no background work overlaps a timed call.
    const settle = () => Promise.all([sessionHost.service.driver.warm(), warm.service.driver.warm(), cold.service.driver.warm()]);

    for (let index = 0; index < warmUps; index += 1) await exec(trueArgv);
    await exec(pytest);
    await settle();
    await oneOff(warm.client, trueArgv);
    await oneOff(cold.client, trueArgv);

    for (let round = 0; round < rounds; round += 1) {
      await settle();
      for (let index = 0; index < execsPerRound && figures.sessionTrue.length < execRuns; index += 1) figures.sessionTrue.push(await timed(() => exec(trueArgv), 'session true'));
      figures.sessionPytest.push(await timed(() => exec(pytest), 'session pytest'));
      await settle();
      figures.warmTrue.push(await timed(() => oneOff(warm.client, trueArgv), 'warm-pool job true'));
      await settle();
      figures.warmPytest.push(await timed(() => oneOff(warm.client, pytest), 'warm-pool job pytest'));
      await settle();
      figures.coldTrue.push(await timed(() => oneOff(cold.client, trueArgv), 'cold job true'));
      await settle();
      figures.coldPytest.push(await timed(() => oneOff(cold.client, pytest), 'cold job pytest'));
    }
    await pinned.closeSession({ sessionId: opened.sessionId });
  } finally {
    await Promise.all([stop(sessionHost), stop(warm), stop(cold)]);
  }
  return figures;
}

const drivers: DriverName[] = ['docker', 'bwrap'];
const rows: string[] = [];
const goals: string[] = [];
for (const driver of drivers) {
  const figures = await measure(driver);
  const line = (what: string, values: readonly number[], base: readonly number[] | undefined) => {
    const ratio = base === undefined ? '-' : `${(percentile(values, 50) / percentile(base, 50)).toFixed(1)}x`;
    rows.push(`| ${driver} | ${what} | ${values.length} | ${percentile(values, 50).toFixed(2)} | ${percentile(values, 95).toFixed(2)} | ${mean(values).toFixed(2)} | ${ratio} |`);
  };
  line('`true`: SessionExec, warm session', figures.sessionTrue, undefined);
  line('`true`: RunJob, warm pool of 2', figures.warmTrue, figures.sessionTrue);
  line('`true`: RunJob, no pool (cold)', figures.coldTrue, figures.sessionTrue);
  line('pytest, 10 tests: SessionExec, warm session', figures.sessionPytest, undefined);
  line('pytest, 10 tests: RunJob, warm pool of 2', figures.warmPytest, figures.sessionPytest);
  line('pytest, 10 tests: RunJob, no pool (cold)', figures.coldPytest, figures.sessionPytest);
  const p50 = percentile(figures.sessionTrue, 50);
  goals.push(`| ${driver} | SessionExec \`true\`, p50 | ${p50.toFixed(2)} ms | < 5 ms | ${p50 < 5 ? 'yes' : 'no'} |`);
}

console.log(`\nSandbox session vs one-off job, over the in-process bus (RPC included), ms, ${os.cpus().length} CPUs; ratio = p50 one-off / p50 session\n`);
console.log('| driver | what | n | p50 ms | p95 ms | mean ms | one-off / session |\n|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
console.log('\n| driver | goal | measured | target | met |\n|---|---|---|---|---|');
for (const goal of goals) console.log(goal);
