// Sandbox time on this machine, one run: `python3 -c pass` (time to first
// instruction and back) and a 10-test pytest file, on the bare host, in a
// fresh Docker container per job, and in a container from the warm pool;
// medians and ratios to the bare host, then sustained jobs per second with
// the warm pool at concurrency 1 and 4.
//
// Run with `npm run bench` (builds first) or
// `node services/sandbox-runner/bench/sandbox.mts [runs]` after `npm run build`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Language, SandboxDriver, type SandboxJob } from '@ratchet/contracts';
// The bench runs the built package (dist), as the runner process does.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { DockerDriver, type EffectiveLimits } from '@ratchet/sandbox-runner';

const runs = Number(process.argv[2] ?? 15);
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
    commands: [{ name: 'run', argv: [...argv], workingDirectory: '', timeout: undefined }],
    env: {},
    limits: undefined,
    driver: SandboxDriver.SANDBOX_DRIVER_DOCKER,
    image: '',
    testReportPath: argv === pytest ? '/tmp/report.xml' : '',
    protectedPaths: [],
    enqueuedAt: undefined,
    deadline: undefined,
  };
}

const median = (values: number[]) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? 0;
async function timed(run: () => Promise<unknown> | unknown, before: () => Promise<unknown> = () => Promise.resolve()): Promise<number[]> {
  await before();
  await run(); // warm-up
  const times: number[] = [];
  for (let index = 0; index < runs; index += 1) {
    await before(); // not timed
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  return times;
}

// Bare host: Debian's python3 and pytest, as in the sandbox image.
const root = mkdtempSync(path.join(os.tmpdir(), 'ratchet-bench-sandbox-'));
mkdirSync(path.join(root, 'tests'));
for (const [file, content] of Object.entries(files)) writeFileSync(path.join(root, file), content);
const python = spawnSync('/usr/bin/python3', ['-m', 'pytest', '--version']).status === 0 ? '/usr/bin/python3' : undefined;
if (python === undefined) console.log('note: /usr/bin/python3 has no pytest (apt-get install python3-pytest); the bare-host rows are left out');

const fresh = new DockerDriver({ defaults: limits, runnerId: 'bench-fresh' });
const warm = new DockerDriver({ defaults: limits, runnerId: 'bench-warm', warmPool: 4 });
await warm.warm();
const rows: string[] = [];
for (const [name, argv] of Object.entries(workloads)) {
  const check = (result: { exitCode: number }) => {
    if (result.exitCode !== 0) throw new Error(`${name} failed in the sandbox`);
  };
  const bare = python === undefined ? [] : await timed(() => spawnSync(python, argv.slice(1).map((arg) => arg.replace('/tmp/report.xml', path.join(root, 'report.xml'))), { cwd: root }));
  // Each job starts when the previous one's container is gone (and, for the
  // pool, the pool has refilled), as test runs of one task arrive.
  const inFresh = await timed(async () => check(await fresh.run(job(argv))), () => fresh.warm());
  const inWarm = await timed(async () => check(await warm.run(job(argv))), () => warm.warm());
  const base = median(bare);
  const ratio = (values: number[]) => (base > 0 ? `${(median(values) / base).toFixed(2)}x` : '-');
  if (bare.length > 0) rows.push(`| ${name} | bare host (${python}) | ${base.toFixed(1)} | 1.00x |`);
  rows.push(`| ${name} | Docker, fresh container | ${median(inFresh).toFixed(1)} | ${ratio(inFresh)} |`);
  rows.push(`| ${name} | Docker, warm pool | ${median(inWarm).toFixed(1)} | ${ratio(inWarm)} |`);
}

// Sustained: a burst of pytest jobs with the pool refilling behind them.
const sustained: string[] = [];
for (const concurrency of [1, 4]) {
  await warm.warm();
  const total = concurrency * 6;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next += 1;
        await warm.run(job(pytest));
      }
    }),
  );
  sustained.push(`| ${concurrency} | ${(total / ((performance.now() - started) / 1000)).toFixed(2)} |`);
}
await warm.close();
rmSync(root, { recursive: true, force: true });

console.log(`\nSandbox time per job, median of ${runs} (ms), ${os.cpus().length} CPUs\n`);
console.log('| workload | where | p50 | vs bare |\n|---|---|---|---|');
for (const row of rows) console.log(row);
console.log('\nWarm pool (4 containers), 10-test pytest jobs back to back\n\n| concurrency | jobs/s |\n|---|---|');
for (const row of sustained) console.log(row);
