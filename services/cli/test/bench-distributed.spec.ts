import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startStack, type Stack } from '@ratchet/testing';
import { learningLesson, learningSuite, learningTurns, sampleTurns, writeTurns } from './fixtures/bench/scripts';
import { ratchetArgv, temporaryDirectory } from './helpers';

// `ratchet bench --server`: the built command against distributed Ratchet
// (real nats-server and Postgres, every service its own process). Memory
// is scoped by project keys here, not by data directories: a fresh memory
// is a project of its own, searched without the global lessons.
jest.setTimeout(300_000);

const repoRoot = path.resolve(__dirname, '../../..');
const token = 'bench-secret-token';

let stack: Stack;
let dir: string;
let remove: () => Promise<void>;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

interface BenchJson {
  passes: { name: string; totals: { runs: number; passed: number; passedFirst: number } }[];
  lookCloser: string[];
  results: { pass: string; task: string; iterations: number; models: string[]; lessonsRetrieved: { title: string }[] }[];
}

function bench(args: string[]): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
  const child = spawn(process.execPath, ratchetArgv(['bench', ...args]), { cwd: dir, env: { ...clean, RATCHET_SERVER: stack.grpcAddress, RATCHET_TOKEN: token } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

function succeeded(run: Run): BenchJson {
  if (run.code !== 0) throw new Error(`ratchet bench exited ${String(run.code)}:\n${run.stderr}\n${stack.output().slice(-6000)}`);
  return JSON.parse(run.stdout) as BenchJson;
}

beforeAll(async () => {
  ({ dir, remove } = await temporaryDirectory());
  const script = path.join(dir, 'model-script.json');
  await writeTurns(script, [...sampleTurns(2), ...learningTurns()]);
  await writeFile(path.join(dir, 'learning.jsonl'), learningSuite());
  stack = await startStack({ repoRoot, token, env: { RATCHET_MODEL_SCRIPT: script } });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await remove?.();
});

describe('ratchet bench --server', () => {
  it('runs the sample suite on the server and reports it like embedded mode', async () => {
    const report = succeeded(await bench([path.join(repoRoot, 'examples', 'bench', 'sample.jsonl'), '--out', 'sample-run', '--max-iterations', '2', '--concurrency', '3', '--json']));
    expect(report.passes.map((pass) => [pass.name, pass.totals.runs, pass.totals.passed, pass.totals.passedFirst])).toEqual([['fresh', 6, 5, 4]]);
    // The server's models are its own business.
    expect(report.results.every((result) => result.models.length === 0)).toBe(true);
    expect(report.lookCloser).toEqual([`ratchet show TASK_ID --server ${stack.grpcAddress}`]);
  });

  it('--compare-memory: cold starts empty in a project of its own, and warm needs fewer iterations than off', async () => {
    const report = succeeded(await bench(['learning.jsonl', '--out', 'learning-run', '--compare-memory', '--json']));
    const iterations = (pass: string) => report.results.filter((result) => result.pass === pass).map((result) => result.iterations);
    expect(iterations('off')).toEqual([2, 2]);
    // Nothing the sample run learnt reaches this run's memory: task A fails first in the cold pass too.
    expect(iterations('cold')[0]).toBe(2);
    expect(iterations('warm')).toEqual([1, 1]);
    const warm = report.results.filter((result) => result.pass === 'warm');
    expect(warm.every((result) => result.lessonsRetrieved.some((lesson) => lesson.title === learningLesson))).toBe(true);
    const again = await bench(['learning.jsonl', '--out', 'learning-run', '--compare-memory']);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('nothing left to run: all 6 task run(s) have results');
  });
});
