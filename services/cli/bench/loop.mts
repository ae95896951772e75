// Loop overhead and sandbox time, embedded mode, one run on this machine.
//
// 1. Loop overhead per iteration: tasks driven by a zero-latency scripted
//    model (each fails twice, reflects, then passes) in one embedded Ratchet,
//    timed from the task's own events: from an iteration's CODING start to
//    the next one's, minus its TESTING phase (the sandbox). What remains is
//    the orchestrator, storage (PGlite), memory, safety, the role services
//    and the bus. Goal: under 20 ms p50. The per-task work outside the
//    iterations (retrieve, plan, learn) is reported on its own line, and so
//    are the whole iteration (sandbox included) and its SAFETY_CHECK and
//    REFLECTING phases, to show where the time goes.
// 2. Sandbox time for a 10-test pytest file through the real path (tester ->
//    sandbox runner -> Docker, from the warm pool config/cli.yaml sets) next to bare
//    `python3 -m pytest` on the same files on the host, in the same run.
//
// Run with `npm run bench` (builds first) or
// `node services/cli/bench/loop.mts [tasks]` after `npm run build`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/cli:bench -c smoke`,
// as CI runs it) runs one task and no warm-up task, and bare pytest once,
// only to show the bench still runs; its figures then mean nothing. A
// [tasks] given still counts. It needs Docker, as the CLI's tests do.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { TaskEvent } from '@ratchet/contracts';
import { ScriptedModel, scriptedRoleModels, type RoleModels, type ScriptedTurn } from '@ratchet/llm';
// The bench runs the built package (dist), as a user's process would, not the sources.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { loadCliConfig, startEmbedded } from '@ratchet/cli';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const tasks = Number(process.argv[2] ?? (smoke ? 1 : 15));
// The first task pays for JIT and cache warm-up and is left out; a smoke run's figures are not read, so it has none.
const warmUps = smoke ? 0 : 1;
const root = mkdtempSync(path.join(os.tmpdir(), 'ratchet-bench-'));
process.env['RATCHET_CONFIG_DIR'] = path.resolve(import.meta.dirname, '../../../config');

const plan = JSON.stringify({
  summary: 'calc.py',
  steps: [{ description: 'write add', paths: ['calc.py'] }],
  files: [{ path: 'calc.py', purpose: 'code', isTest: false }],
  testStrategy: 'pytest',
  dependencies: [],
  appliedLessonIds: [],
});
// Every task's code is its own (a comment names the task), as in real work: the safety check's Bandit
// cache answers only for files it has seen, so each iteration pays for the scan as a real one would.
const code = (body: string, task: number) => JSON.stringify({ files: [{ path: 'calc.py', content: `# bench task ${task}\ndef add(a, b):\n    return ${body}\n` }], deletedPaths: [], summary: 's' });
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

function scripted(turns: readonly ScriptedTurn[]): RoleModels {
  const model = new ScriptedModel(turns, { name: 'bench' });
  return scriptedRoleModels(model);
}

const seconds = (duration: { seconds: number; nanos: number } | undefined) => (duration === undefined ? 0 : duration.seconds * 1000 + duration.nanos / 1e6);
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

const iterationOverheads: number[] = [];
// The whole iteration, sandbox included, and the phases that run in it other than coding: where an iteration's time goes.
const iterationTotals: number[] = [];
const phaseMs = { safety: [] as number[], reflecting: [] as number[] };
const taskOverheads: number[] = [];
const sandboxMs: number[] = [];
const dataDir = path.join(root, 'data');
const millis = (date: Date | undefined) => date?.getTime() ?? 0;
const turnsOf = (task: number): ScriptedTurn[] => [
  { role: 'planner', reply: plan },
  { role: 'coder', reply: code('a - b', task) },
  { role: 'tester', reply: tests },
  { role: 'reflector', reply: reflection },
  { role: 'coder', reply: code('b - a', task) },
  { role: 'reflector', reply: reflection.replace('add subtracts', 'add still subtracts') },
  { role: 'coder', reply: code('a + b', task) },
];
// One long-lived embedded Ratchet, as a server or a multi-task session runs it.
const configDir = path.resolve(import.meta.dirname, '../../../config');
const ratchet = await startEmbedded({ config: loadCliConfig(configDir), configDir, dataDir, models: scripted(Array.from({ length: tasks + warmUps }, (_, task) => turnsOf(task)).flat()) });
for (let index = 0; index < tasks + warmUps; index += 1) {
  const { task } = await ratchet.client.submitTask({ goal: 'add two numbers', language: 1, budget: undefined, workspace: [], dataFiles: [], setupCommand: '', acceptanceTests: [], approvalPolicy: undefined, labels: {}, requestId: '', testCommand: [], testEdits: 0, project: '', memory: 0, profile: '', reprompt: 0, questions: 0, review: 0, audit: 0 });
  const events: TaskEvent[] = [];
  const reader = await ratchet.transport.readEvents(task!.id);
  for await (const stored of reader) {
    const event = TaskEvent.decode(stored.data);
    events.push(event);
    if (event.payload?.$case === 'taskCompleted') break;
  }
  await reader.stop();
  const completed = events[events.length - 1]!;
  if (completed.payload?.$case !== 'taskCompleted' || completed.payload.taskCompleted.iterations !== 3 || completed.payload.taskCompleted.status !== 11) {
    throw new Error(`task ${index} did not go as scripted`);
  }
  if (index < warmUps) continue;
  // An iteration runs from its CODING start to the next CODING start (or to LEARNING); its sandbox time is the TESTING phase.
  const starts = events.filter((event) => event.payload?.$case === 'phaseStarted' && [3, 8].includes(event.payload.phaseStarted.phase));
  const testing = events.flatMap((event) => (event.payload?.$case === 'phaseCompleted' && event.payload.phaseCompleted.phase === 6 ? [seconds(event.payload.phaseCompleted.duration)] : []));
  for (let iteration = 0; iteration + 1 < starts.length; iteration += 1) {
    iterationOverheads.push(millis(starts[iteration + 1]!.time) - millis(starts[iteration]!.time) - (testing[iteration] ?? 0));
    iterationTotals.push(millis(starts[iteration + 1]!.time) - millis(starts[iteration]!.time));
  }
  const completedPhase = (phase: number) => events.flatMap((event) => (event.payload?.$case === 'phaseCompleted' && event.payload.phaseCompleted.phase === phase ? [seconds(event.payload.phaseCompleted.duration)] : []));
  phaseMs.safety.push(...completedPhase(4));
  phaseMs.reflecting.push(...completedPhase(7));
  sandboxMs.push(...testing);
  // Per task, outside the iterations: submit, retrieve lessons, plan; learn and finish.
  taskOverheads.push(millis(starts[0]!.time) - millis(events[0]!.time) + (millis(completed.time) - millis(starts[starts.length - 1]!.time)));
}
await ratchet.close();

// Bare host: the same ten tests with the host's python3 and pytest; Debian's
// /usr/bin/python3 first when it has pytest, as the sandbox image does.
const debianPytest = spawnSync('/usr/bin/python3', ['-m', 'pytest', '--version']).status === 0;
const python = debianPytest ? '/usr/bin/python3' : 'python3';
if (!debianPytest) {
  console.log("note: /usr/bin/python3 has no pytest (apt-get install python3-pytest); the bare-host figure uses the PATH's python3, which is not the sandbox's interpreter, so the ratio compares different pytests");
}
const bareDir = path.join(root, 'bare');
mkdirSync(path.join(bareDir, 'tests'), { recursive: true });
writeFileSync(path.join(bareDir, 'calc.py'), 'def add(a, b):\n    return a + b\n');
writeFileSync(path.join(bareDir, 'tests', 'test_calc.py'), tenTests());
const bare: number[] = [];
for (let index = 0; index < (smoke ? 1 : Math.max(10, tasks)); index += 1) {
  const started = performance.now();
  const run = spawnSync(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--junitxml=${path.join(bareDir, 'report.xml')}`, 'tests/test_calc.py'], { cwd: bareDir });
  bare.push(performance.now() - started);
  if (run.status !== 0) throw new Error(`bare pytest failed: ${run.stderr.toString()}`);
}
const hostPytest = `${python}, ${execFileSync(python, ['-m', 'pytest', '--version']).toString().trim()}`;
rmSync(root, { recursive: true, force: true });

const row = (name: string, values: number[]) => `| ${name} | ${values.length} | ${percentile(values, 50).toFixed(1)} | ${percentile(values, 90).toFixed(1)} |`;
console.log(`\nEmbedded loop, ${tasks} tasks x 3 iterations (two fail, one passes) in one warm process, zero-latency scripted model (ms)\n`);
console.log('| measure | n | p50 | p90 |\n|---|---|---|---|');
console.log(row('loop overhead per iteration (CODING to next CODING, minus the sandbox)', iterationOverheads));
console.log(row('per task outside iterations (submit, retrieve, plan; learn, finish)', taskOverheads));
console.log(row('whole iteration (CODING to next CODING, sandbox included)', iterationTotals));
console.log(row('  of which SAFETY_CHECK (code and import checks; Bandit runs in the test job)', phaseMs.safety));
console.log(row('  of which REFLECTING (lessons, reflector, failure record)', phaseMs.reflecting));
console.log(row('sandbox: 10-test pytest file, Docker warm pool of config/cli.yaml (TESTING phase)', sandboxMs));
console.log(row(`bare host: python3 -m pytest, same file (${hostPytest})`, bare));
console.log(`\nsandbox / bare at p50: ${(percentile(sandboxMs, 50) / percentile(bare, 50)).toFixed(2)}x; loop overhead goal < 20 ms p50: ${percentile(iterationOverheads, 50) < 20 ? 'met' : 'NOT met'}`);
