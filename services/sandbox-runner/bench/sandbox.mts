// Sandbox time on this machine, one run: `python3 -c pass` and a 10-test
// pytest file on the bare host, under bubblewrap and in Docker (runc, and
// gVisor's runsc when the daemon has it), each with a fresh sandbox per job
// and from a warm pool; medians, ratios to the bare host and time to first
// instruction (runner takes the job -> the command's process starts), then
// sustained jobs per second from the warm pools at concurrency 1 and 4.
//
// The bare host runs Debian's /usr/bin/python3 (the sandbox image's
// interpreter and pytest) with the environment the sandbox gives commands,
// PYTHONDONTWRITEBYTECODE=1 included, so neither side reuses bytecode.
//
// Run with `npm run bench` (builds first) or
// `node services/sandbox-runner/bench/sandbox.mts [runs]` after `npm run build`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/sandbox-runner:bench -c smoke`,
// as CI runs it) runs each workload once in every place, with no warm-up
// round, warm pools of 2 and one job per worker at concurrency 1 and 2, only
// to show the bench still runs; its figures then mean nothing. A [runs] given
// still counts. It needs Docker and bubblewrap, as the runner's tests do.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Language, SandboxDriver, type SandboxJob, type SandboxJobResult } from '@ratchet/contracts';
// The bench runs the built package (dist), as the runner process does.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { BubblewrapDriver, defaultRootfs, DockerDriver, type EffectiveLimits, type Sandbox } from '@ratchet/sandbox-runner';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const runs = Number(process.argv[2] ?? (smoke ? 1 : 15));
/** Sandboxes in each warm pool, and the sustained bursts: workers at once, jobs per worker. */
const warmPool = smoke ? 2 : 4;
const concurrencies = smoke ? [1, 2] : [1, 4];
const jobsPerWorker = smoke ? 1 : 6;
const limits: EffectiveLimits = { memoryBytes: 512 << 20, pids: 128, cpus: 1, timeoutMs: 120_000, outputLimitBytes: 256 << 10, workDirBytes: 64 << 20 };
const tests = `from calc import add\n\n\n${Array.from({ length: 10 }, (_, index) => `def test_add_${index}():\n    assert add(${index}, 1) == ${index + 1}\n`).join('\n\n')}`;
const files = { 'calc.py': 'def add(a, b):\n    return a + b\n', 'tests/test_calc.py': tests };
const pytest = ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/report.xml', 'tests'];
const workloads = { 'python3 -c pass': ['python3', '-c', 'pass'], '10-test pytest file': pytest } as const;

let counter = 0;
function job(argv: readonly string[]): SandboxJob {
  counter += 1;
  return {
    jobId: `bench-${process.pid}-${counter}`,
    taskId: 'bench',
    iteration: 1,
    language: Language.LANGUAGE_PYTHON,
    files: Object.entries(files).map(([file, content]) => ({ path: file, content })),
    dataFiles: [],
    setupCommand: '',
    commands: [{ name: 'run', argv: [...argv], workingDirectory: '', timeout: undefined }],
    env: {},
    limits: undefined,
    driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
    image: '',
    testReportPath: argv === pytest ? '/tmp/report.xml' : '',
    // As the tester sends them: the test file is checked after the run.
    protectedPaths: argv === pytest ? ['tests/test_calc.py'] : [],
    dependencies: [],
    enqueuedAt: undefined,
    deadline: undefined,
  };
}

const median = (values: number[]) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? 0;
const milliseconds = (value: { seconds: number; nanos: number } | undefined) => (value === undefined ? Number.NaN : value.seconds * 1000 + value.nanos / 1e6);

interface Sample {
  readonly wallMs: number;
  readonly startupMs: number;
}

// Bare host, two ways. /usr/bin/python3 is the host's Debian python3 and
// pytest (the image's versions) but with whatever else the host installed,
// which pytest's plugin scan reads. The like-for-like base for the ratios is
// the sandbox root filesystem's own python3 run with chroot: the very files
// the sandbox runs, and no namespace, cgroup, seccomp or supervisor. Both get
// the environment the sandbox gives commands, PYTHONDONTWRITEBYTECODE=1 too.
const rootfs = defaultRootfs();
const chrootable = process.getuid?.() === 0 && existsSync(path.join(rootfs, 'usr', 'bin', 'python3'));
const root = chrootable ? mkdtempSync(path.join(rootfs, 'tmp', 'ratchet-bench-')) : mkdtempSync(path.join(os.tmpdir(), 'ratchet-bench-sandbox-'));
// Also when the bench fails: nothing may stay in the sandbox's root filesystem.
process.on('exit', () => rmSync(root, { recursive: true, force: true }));
mkdirSync(path.join(root, 'tests'));
for (const [file, content] of Object.entries(files)) writeFileSync(path.join(root, file), content);
const hostPython = spawnSync('/usr/bin/python3', ['-m', 'pytest', '--version']).status === 0 ? '/usr/bin/python3' : undefined;
if (hostPython === undefined) console.log('note: /usr/bin/python3 has no pytest (apt-get install python3-pytest); its row is left out');
if (!chrootable) console.log(`note: not root or no ${rootfs} (tools/ensure-sandbox-rootfs.sh): ratios are to the host's /usr/bin/python3, whose installed packages differ from the image's`);
const bareEnv = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' };
const inRoot = `/${path.relative(rootfs, root)}`;
const bareWays: { label: string; command: (argv: readonly string[]) => [string, string[], string] }[] = [
  ...(hostPython === undefined ? [] : [{ label: `bare host (${hostPython})`, command: (argv: readonly string[]) => [hostPython, argv.slice(1).map((arg) => arg.replace('/tmp/report.xml', path.join(root, 'report.xml'))), root] as [string, string[], string] }]),
  ...(chrootable ? [{ label: 'bare, chroot into the sandbox root filesystem', command: (argv: readonly string[]) => ['/usr/sbin/chroot', [rootfs, 'sh', '-c', `cd ${inRoot} && exec "$@"`, 'sh', ...argv.map((arg) => arg.replace('/tmp/report.xml', `${inRoot}/report.xml`))], '/'] as [string, string[], string] }] : []),
];

const runscRegistered = (() => {
  try {
    return execFileSync('docker', ['info', '--format', '{{json .Runtimes}}']).toString().includes('"runsc"');
  } catch {
    return false;
  }
})();
if (!runscRegistered) console.log('note: the Docker daemon has no runsc runtime (tools/ensure-docker.sh registers it); the gVisor rows are left out');

const setups: { name: string; driver: Sandbox; warm: boolean }[] = [
  { name: 'bubblewrap, fresh sandbox', driver: new BubblewrapDriver({ defaults: limits, runnerId: 'bench-bwrap' }), warm: false },
  { name: 'bubblewrap, warm pool', driver: new BubblewrapDriver({ defaults: limits, runnerId: 'bench-bwrap-warm', warmPool }), warm: true },
  { name: 'Docker, fresh container', driver: new DockerDriver({ defaults: limits, runnerId: 'bench-fresh' }), warm: false },
  { name: 'Docker, warm pool', driver: new DockerDriver({ defaults: limits, runnerId: 'bench-warm', warmPool }), warm: true },
  ...(runscRegistered
    ? [
        { name: 'Docker + gVisor (runsc), fresh', driver: new DockerDriver({ defaults: limits, runnerId: 'bench-runsc', runtime: 'runsc' }), warm: false },
        { name: 'Docker + gVisor (runsc), warm pool', driver: new DockerDriver({ defaults: limits, runnerId: 'bench-runsc-warm', runtime: 'runsc', warmPool }), warm: true },
      ]
    : []),
];

// Every place runs once per round, rounds interleaved: this VM's speed
// drifts by tens of percent over a minute, and interleaving spreads the
// drift over all rows instead of favouring whichever ran in a quiet spell.
/** Every driver's background work (pool refills, removals) done, so none overlaps the next timed run. */
const settle = () => Promise.all(setups.map((setup) => setup.driver.warm()));
interface Place {
  readonly label: string;
  readonly before: () => Promise<unknown>;
  /** Runs the workload once; the time to first instruction when the place reports it. */
  readonly run: (argv: readonly string[]) => Promise<number>;
  readonly sandboxed: boolean;
}
const places: Place[] = [
  ...bareWays.map((way) => ({
    label: way.label,
    before: settle,
    run: async (argv: readonly string[]) => {
      const [program, args, cwd] = way.command(argv);
      const result = spawnSync(program, args, { cwd, env: bareEnv });
      if (result.status !== 0) throw new Error(`failed on the bare host (${way.label}): ${result.error?.message ?? result.stderr.toString()}`);
      return Number.NaN;
    },
    sandboxed: false,
  })),
  ...setups.map((setup) => ({
    label: setup.name,
    before: settle,
    run: async (argv: readonly string[]) => {
      const result: SandboxJobResult = await setup.driver.run(job(argv));
      if (result.exitCode !== 0) throw new Error(`failed in ${setup.name}: ${result.stderr.toString()}`);
      return milliseconds(result.startup);
    },
    sandboxed: true,
  })),
];

const rows: string[] = [];
const measured = new Map<string, { wallMs: number; startupMs: number; ratio: number }>();
for (const [name, argv] of Object.entries(workloads)) {
  const samples = places.map(() => [] as Sample[]);
  // A smoke run has no warm-up round: its figures are not read.
  for (let round = smoke ? 0 : -1; round < runs; round += 1) {
    for (const [index, place] of places.entries()) {
      // Not timed: the previous job's cleanup and the pool's refill.
      await place.before();
      const started = performance.now();
      const startupMs = await place.run(argv);
      // Round -1 warms caches and is not counted.
      if (round >= 0) samples[index]?.push({ wallMs: performance.now() - started, startupMs });
    }
  }
  // The ratios' base: the last bare way (the chroot when there is one).
  const base = median(samples[bareWays.length - 1]?.map((sample) => sample.wallMs) ?? []);
  for (const [index, place] of places.entries()) {
    const wallMs = median(samples[index]?.map((sample) => sample.wallMs) ?? []);
    const startupMs = median((samples[index] ?? []).map((sample) => sample.startupMs).filter((value) => Number.isFinite(value)));
    const ratio = base > 0 ? wallMs / base : Number.NaN;
    measured.set(`${name}|${place.label}`, { wallMs, startupMs, ratio });
    rows.push(`| ${name} | ${place.label} | ${wallMs.toFixed(1)} | ${Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : '-'} | ${place.sandboxed && startupMs > 0 ? startupMs.toFixed(1) : '-'} |`);
  }
}

// Sustained: bursts of pytest jobs with the pools refilling behind them.
const sustained: string[] = [];
for (const setup of setups.filter((item) => item.warm)) {
  const figures: string[] = [];
  for (const concurrency of concurrencies) {
    await setup.driver.warm();
    const total = concurrency * jobsPerWorker;
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < total) {
          next += 1;
          await setup.driver.run(job(pytest));
        }
      }),
    );
    figures.push((total / ((performance.now() - started) / 1000)).toFixed(2));
  }
  sustained.push(`| ${setup.name} | ${figures.join(' | ')} |`);
}
await Promise.all(setups.map((setup) => setup.driver.close()));
rmSync(root, { recursive: true, force: true });

console.log(`\nSandbox time per job, median of ${runs} (ms), ${os.cpus().length} CPUs; TTFI = time to first instruction\n`);
console.log(`| workload | where | p50 | vs ${bareWays.at(-1)?.label ?? 'bare'} | TTFI p50 |\n|---|---|---|---|---|`);
for (const row of rows) console.log(row);
console.log(`\nWarm pools (${warmPool} sandboxes), 10-test pytest jobs back to back, jobs/s\n\n| where | ${concurrencies.map((concurrency) => `concurrency ${concurrency}`).join(' | ')} |\n|---|${concurrencies.map(() => '---|').join('')}`);
for (const row of sustained) console.log(row);
const figure = (key: string) => measured.get(key);
const goals = [
  ['Docker warm pool: time to first instruction, p50', figure('python3 -c pass|Docker, warm pool')?.startupMs, 'ms', 60],
  ['Docker warm pool: pytest vs bare host', figure('10-test pytest file|Docker, warm pool')?.ratio, 'x', 1.3],
  ['bubblewrap (warm pool): pytest vs bare host', figure('10-test pytest file|bubblewrap, warm pool')?.ratio, 'x', 1.15],
  ['bubblewrap (fresh): pytest vs bare host', figure('10-test pytest file|bubblewrap, fresh sandbox')?.ratio, 'x', 1.15],
] as const;
console.log('\n| goal | measured | target | met |\n|---|---|---|---|');
for (const [label, value, unit, target] of goals) {
  const known = value !== undefined && Number.isFinite(value);
  console.log(`| ${label} | ${known ? `${value.toFixed(unit === 'x' ? 2 : 1)}${unit === 'x' ? 'x' : ' ms'}` : '-'} | ${unit === 'x' ? `<= ${target}x` : `< ${target} ms`} | ${known ? (value <= target ? 'yes' : 'no') : '-'} |`);
}
