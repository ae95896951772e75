// Loop overhead and sandbox time, embedded mode, one run on this machine.
//
// 1. Loop overhead per iteration: tasks driven by a zero-latency scripted
//    model (each task fails once, reflects, then passes), timed from the
//    task's own events: task duration minus the TESTING phases (the sandbox),
//    divided by iterations. What remains is the orchestrator, storage
//    (PGlite), memory, safety and the bus. Goal: under 20 ms p50.
// 2. Sandbox time for a 10-test pytest file through the real path (tester ->
//    sandbox runner -> fresh Docker container) next to bare
//    `python3 -m pytest` on the same files on the host, in the same run.
//
// Run with `npm run bench` (builds first) or
// `node services/cli/bench/loop.mts [tasks]` after `npm run build`.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { TaskEvent } from '@ratchet/contracts';
import { ScriptedModel, type RoleModel, type RoleModels, type ScriptedTurn } from '@ratchet/llm';
// The bench runs the built package (dist), as a user's process would, not the sources.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { runGoal } from '@ratchet/cli';

const tasks = Number(process.argv[2] ?? 20);
const root = mkdtempSync(path.join(os.tmpdir(), 'ratchet-bench-'));
process.env['RATCHET_CONFIG_DIR'] = path.resolve(import.meta.dirname, '../../../config');

const plan = JSON.stringify({
  summary: 'calc.py',
  steps: [{ description: 'write add', paths: ['calc.py'] }],
  files: [{ path: 'calc.py', purpose: 'code', isTest: false }],
  testStrategy: 'pytest',
  appliedLessonIds: [],
});
const code = (body: string) => JSON.stringify({ files: [{ path: 'calc.py', content: `def add(a, b):\n    return ${body}\n` }], deletedPaths: [], summary: 's' });
const tests = JSON.stringify({ tests: [{ path: 'tests/test_calc.py', content: tenTests() }], summary: 'ten tests' });
const reflection = JSON.stringify({
  rootCause: 'add subtracts',
  hypothesis: 'use +',
  fixDirection: 'return a + b',
  confidence: 0.9,
  replanRecommended: false,
  lesson: { title: 'Check the operator', body: 'Arithmetic helpers need the right operator.', tags: [] },
  relevantLessonIds: [],
});

function tenTests(): string {
  const cases = Array.from({ length: 10 }, (_, index) => `def test_add_${index}():\n    assert add(${index}, ${index + 1}) == ${2 * index + 1}\n`);
  return `from calc import add\n\n\n${cases.join('\n\n')}`;
}

function scripted(turns: ScriptedTurn[]): RoleModels {
  const model = new ScriptedModel(turns, { name: 'bench' });
  const entry: RoleModel = { model, modelName: 'scripted:bench', temperature: 0, maxTokens: 4096 };
  return { planner: entry, coder: entry, tester: entry, reflector: entry };
}

const seconds = (duration: { seconds: number; nanos: number } | undefined) => (duration === undefined ? 0 : duration.seconds * 1000 + duration.nanos / 1e6);
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

const overheads: number[] = [];
const sandboxMs: number[] = [];
const dataDir = path.join(root, 'data');
for (let index = 0; index < tasks; index += 1) {
  const events: TaskEvent[] = [];
  const output = { out: (line: string) => events.push(TaskEvent.fromJSON(JSON.parse(line))), err: () => undefined };
  const models = scripted([
    { role: 'planner', reply: plan },
    { role: 'coder', reply: code('a - b') },
    { role: 'tester', reply: tests },
    { role: 'reflector', reply: reflection },
    { role: 'coder', reply: code('a + b') },
  ]);
  const result = await runGoal('add two numbers', { lang: 'python', out: path.join(root, `out-${index}`), dataDir, models, json: true }, output);
  const completed = events.find((event) => event.payload?.$case === 'taskCompleted');
  if (completed?.payload?.$case !== 'taskCompleted' || result.task.currentIteration !== 2) throw new Error(`task ${index} did not go as scripted: ${result.task.statusReason}`);
  const testing = events.flatMap((event) => (event.payload?.$case === 'phaseCompleted' && event.payload.phaseCompleted.phase === 6 ? [seconds(event.payload.phaseCompleted.duration)] : []));
  const total = seconds(completed.payload.taskCompleted.duration);
  sandboxMs.push(...testing);
  overheads.push((total - testing.reduce((sum, value) => sum + value, 0)) / result.task.currentIteration);
}

// Bare host: the same ten tests with the host's python3 and pytest; Debian's
// /usr/bin/python3 first when it has pytest, as the sandbox image does.
const python = spawnSync('/usr/bin/python3', ['-m', 'pytest', '--version']).status === 0 ? '/usr/bin/python3' : 'python3';
const bareDir = path.join(root, 'bare');
mkdirSync(path.join(bareDir, 'tests'), { recursive: true });
writeFileSync(path.join(bareDir, 'calc.py'), 'def add(a, b):\n    return a + b\n');
writeFileSync(path.join(bareDir, 'tests', 'test_calc.py'), tenTests());
const bare: number[] = [];
for (let index = 0; index < Math.max(10, tasks); index += 1) {
  const started = performance.now();
  const run = spawnSync(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--junitxml=${path.join(bareDir, 'report.xml')}`, 'tests/test_calc.py'], { cwd: bareDir });
  bare.push(performance.now() - started);
  if (run.status !== 0) throw new Error(`bare pytest failed: ${run.stderr.toString()}`);
}
const hostPytest = `${python}, ${execFileSync(python, ['-m', 'pytest', '--version']).toString().trim()}`;
rmSync(root, { recursive: true, force: true });

const row = (name: string, values: number[]) => `| ${name} | ${values.length} | ${percentile(values, 50).toFixed(1)} | ${percentile(values, 90).toFixed(1)} |`;
console.log(`\nEmbedded loop, ${tasks} tasks x 2 iterations, zero-latency scripted model (ms)\n`);
console.log('| measure | n | p50 | p90 |\n|---|---|---|---|');
console.log(row('loop overhead per iteration (task time minus sandbox)', overheads));
console.log(row('sandbox: 10-test pytest file, fresh Docker container (TESTING phase)', sandboxMs));
console.log(row(`bare host: python3 -m pytest, same file (${hostPytest})`, bare));
console.log(`\nsandbox / bare at p50: ${(percentile(sandboxMs, 50) / percentile(bare, 50)).toFixed(2)}x; loop overhead goal < 20 ms p50: ${percentile(overheads, 50) < 20 ? 'met' : 'NOT met'}`);
