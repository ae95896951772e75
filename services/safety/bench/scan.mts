// Scan time per file on this machine, one run, side by side on the files of
// services/safety/corpus: the tree-sitter pre-check (the built-in rules) on
// every file; Bandit on the Python files in the real sandbox, once over all
// of them in one job (as CheckCode sends it) and once per file; and
// eslint-plugin-security on every TypeScript file. Medians and p95 per file,
// over `runs` rounds (default 5).
//
// Bandit runs as CheckCode's job does: on the sandbox job queue of a real
// nats-server, taken by a real sandbox-runner process (Docker, the sandbox
// image, a warm pool of 2). Its times are seen from the caller (queue,
// container, Bandit) and inside the sandbox (the bandit command alone).
//
// Run with `npx nx run @ratchet/safety:bench` (builds the safety service and
// the runner first) or `node services/safety/bench/scan.mts [runs]` after
// `npm run build`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/safety:bench -c smoke`,
// as CI runs it) makes one round and sends Bandit one job per file for the
// first two Python files only, so it shows in seconds that the bench still
// runs; its figures then mean nothing. A [runs] given still counts.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SANDBOX_JOB_QUEUE } from '@ratchet/agent';
import { createQueueCaller, NatsTransport } from '@ratchet/bus';
import { RunJobRequest, RunJobResponse, type SandboxJobResult } from '@ratchet/contracts';
// The bench runs the built package (dist), as the safety process does.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { analyzeFile, createEslintScanner, loadParsers, runBandit, type SandboxJobs, type SourceText } from '@ratchet/safety';
import { startNatsServer, startNodeProcess } from '@ratchet/testing';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const runs = Number(process.argv[2] ?? (smoke ? 1 : 5));
const here = path.dirname(fileURLToPath(import.meta.url));
const corpusDir = path.join(here, '..', 'corpus');
const repoRoot = path.resolve(here, '..', '..', '..');

function listFiles(prefix = ''): string[] {
  return readdirSync(path.join(corpusDir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) return listFiles(relative);
    return /\.(py|ts|tsx)$/.test(entry.name) ? [relative] : [];
  });
}

const files: SourceText[] = listFiles().map((file) => ({ path: file, content: readFileSync(path.join(corpusDir, file), 'utf8') }));
const python = files.filter((file) => file.path.endsWith('.py'));
/** The Python files Bandit gets one job each for: a sandbox job per file takes about a second. */
const perFile = smoke ? python.slice(0, 2) : python;
const typescript = files.filter((file) => !file.path.endsWith('.py'));

const sorted = (values: readonly number[]) => [...values].sort((left, right) => left - right);
const quantile = (values: readonly number[], q: number) => sorted(values)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? Number.NaN;
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(0));
const durationMs = (value: { seconds: number; nanos: number } | undefined) => (value === undefined ? Number.NaN : value.seconds * 1000 + value.nanos / 1e6);
const rows: string[][] = [];
function row(scanner: string, unit: string, samples: readonly number[], note = ''): void {
  rows.push([scanner, unit, String(samples.length), ms(quantile(samples, 0.5)), ms(quantile(samples, 0.95)), note]);
}

// --- tree-sitter pre-check and ESLint, in-process --------------------------
const parsers = await loadParsers();
const eslint = createEslintScanner();
// One warm-up round: the first parse of each grammar and the first lint pay for JIT and lazy loading.
for (const file of files) analyzeFile(parsers, file);
for (const file of typescript) eslint.scan(file);
const treeSitter = { python: [] as number[], typescript: [] as number[] };
const eslintTimes: number[] = [];
for (let round = 0; round < runs; round += 1) {
  for (const file of files) {
    const started = performance.now();
    analyzeFile(parsers, file);
    (file.path.endsWith('.py') ? treeSitter.python : treeSitter.typescript).push(performance.now() - started);
  }
  for (const file of typescript) {
    const started = performance.now();
    eslint.scan(file);
    eslintTimes.push(performance.now() - started);
  }
}
parsers.close();

// --- Bandit in the real sandbox ---------------------------------------------
const nats = await startNatsServer();
const runner = await startNodeProcess({
  script: path.join(repoRoot, 'services', 'sandbox-runner', 'dist', 'main.js'),
  cwd: repoRoot,
  env: { RATCHET_CONFIG_DIR: path.join(repoRoot, 'config'), RATCHET_BUS_NATS_URL: nats.url, RATCHET_RUNNER_CONCURRENCY: '1', RATCHET_SANDBOX_WARM_POOL: '2' },
});
const transport = await NatsTransport.connect({ url: nats.url, name: 'safety-bench' });
const caller = createQueueCaller(transport, SANDBOX_JOB_QUEUE, { request: RunJobRequest, response: RunJobResponse });
/** The queue caller as CheckCode's sandbox port, keeping the last result so the bandit command's own time can be read. */
let lastResult: SandboxJobResult | undefined;
const sandbox: SandboxJobs = {
  async runJob(request, options) {
    const response = await caller.call(request.job?.jobId ?? '', request, options);
    lastResult = response.result;
    return response;
  },
};
async function bandit(batch: readonly SourceText[]): Promise<{ wallMs: number; commandMs: number; findings: number }> {
  const started = performance.now();
  // The real path: CheckCode's own Bandit job, built and parsed by runBandit.
  const outcome = await runBandit(sandbox, batch, { taskId: 'bench', iteration: 1, deadline: Date.now() + 180_000, signal: new AbortController().signal });
  const wallMs = performance.now() - started;
  if (!outcome.ran) throw new Error(`bandit did not run: ${outcome.reason}`);
  return { wallMs, commandMs: durationMs(lastResult?.commandResults[0]?.duration), findings: outcome.report.detections.length };
}

try {
  await runner.waitForLine(/"msg":"ready"/, 30_000);
  await bandit(python.slice(0, 1)); // warm-up: image layers, pool
  const together = { wall: [] as number[], command: [] as number[], findings: 0 };
  const single = { wall: [] as number[], command: [] as number[] };
  for (let round = 0; round < runs; round += 1) {
    const all = await bandit(python);
    together.wall.push(all.wallMs / python.length);
    together.command.push(all.commandMs / python.length);
    together.findings = all.findings;
    for (const file of perFile) {
      const one = await bandit([file]);
      single.wall.push(one.wallMs);
      single.command.push(one.commandMs);
    }
  }
  row('tree-sitter pre-check', `per Python file (${python.length})`, treeSitter.python);
  row('tree-sitter pre-check', `per TypeScript file (${typescript.length})`, treeSitter.typescript);
  row('eslint-plugin-security', `per TypeScript file (${typescript.length})`, eslintTimes, 'in-process, types stripped by Node');
  row('Bandit, one job for all files', 'per Python file, caller side', together.wall, `job total / ${python.length}; ${together.findings} findings`);
  row('Bandit, one job for all files', 'per Python file, bandit command', together.command, 'inside the sandbox');
  row('Bandit, one job per file', 'per Python file, caller side', single.wall, 'queue + container + bandit');
  row('Bandit, one job per file', 'per Python file, bandit command', single.command, 'inside the sandbox');
  const header = ['scanner', 'unit', 'samples', 'median ms', 'p95 ms', 'note'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((cells) => cells[column]?.length ?? 0)));
  console.log(`Safety scan times, ${runs} rounds over services/safety/corpus (${files.length} files), node ${process.version}`);
  for (const cells of [header, widths.map((width) => '-'.repeat(width)), ...rows]) console.log(cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  '));
  const together1 = quantile(together.wall, 0.5) * python.length;
  console.log(`\nBandit over all ${python.length} Python files in one job: ${ms(together1)} ms median per job; CheckCode runs it while the pre-check and ESLint work.`);
} finally {
  await caller.close();
  await runner.terminate('SIGTERM', 20_000);
  await transport.close();
  await nats.stop();
}
