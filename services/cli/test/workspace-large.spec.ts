import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ScriptedTurn } from '@ratchet/llm';
import { planReply, startStack, type Stack } from '@ratchet/testing';
import { ratchetArgv, temporaryDirectory } from './helpers';

// A workspace of about 6 MB against a distributed Ratchet: more than a NATS
// message (1 MiB max_payload, the server's default) and more than grpc-js
// takes by default (4 MiB). The files travel CLI -> orchestrator over gRPC,
// then orchestrator -> coder -> sandbox runner over NATS through the
// JetStream object store, and the task still succeeds.
jest.setTimeout(120_000);

const repoRoot = path.resolve(__dirname, '../../..');
const token = 'workspace-large-token';
const gitEnv = { GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@example.com' };
const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', env: { ...process.env, ...gitEnv } });

const goal = 'workspace-large: make the failing test pass';
const dataFiles = 60;
const dataFileBytes = 100 * 1024;

/** Run the tests, fix add(), finish: the turns of one task, later ones first (see workspace-distributed.spec.ts). */
function fixTurns(): ScriptedTurn[] {
  const own = `Goal: ${goal}\n`;
  return [
    { role: 'planner', expect: [own], reply: planReply('calc.py', 'tests/test_calc.py', { changesTests: false }), times: 2 },
    { role: 'coder', expect: [own, 'edited calc.py'], toolCalls: [{ name: 'finish', arguments: { summary: 'add() adds' } }], times: 2 },
    { role: 'coder', expect: [own, '1 failed'], toolCalls: [{ name: 'edit_file', arguments: { path: 'calc.py', search: 'return a - b', replace: 'return a + b' } }], times: 2 },
    { role: 'coder', expect: [own], toolCalls: [{ name: 'run', arguments: { command: 'python3 -m pytest -q tests', timeout_seconds: 30 } }], times: 2 },
  ];
}

/** A Python project with a failing test and 60 data files of 100 KB: about 6 MB of text to send. */
async function project(dir: string): Promise<number> {
  await mkdir(path.join(dir, 'tests'), { recursive: true });
  await mkdir(path.join(dir, 'data'), { recursive: true });
  await writeFile(path.join(dir, 'calc.py'), 'def add(a, b):\n    return a - b\n');
  await writeFile(path.join(dir, 'tests', 'test_calc.py'), 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n');
  let bytes = 0;
  for (let index = 0; index < dataFiles; index++) {
    // Distinct lines per file, so nothing along the way can shrink them to nothing.
    const line = (row: number) => `${index},${row},${((index * 7919 + row * 104729) % 1_000_003).toString(36).padStart(8, '0')}\n`;
    let text = 'file,row,value\n';
    for (let row = 0; text.length < dataFileBytes; row++) text += line(row);
    await writeFile(path.join(dir, 'data', `measurements-${String(index).padStart(3, '0')}.csv`), text);
    bytes += text.length;
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'calc and its data');
  return bytes;
}

let stack: Stack;
let dir: string;
let remove: () => Promise<void>;

function ratchet(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
  const child = spawn(process.execPath, ratchetArgv(args), { cwd: dir, env: { ...clean, RATCHET_SERVER: stack.grpcAddress, RATCHET_TOKEN: token } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

beforeAll(async () => {
  ({ dir, remove } = await temporaryDirectory());
  const script = path.join(dir, 'model-script.json');
  await writeFile(script, JSON.stringify({ order: 'by-expect', turns: fixTurns() }));
  stack = await startStack({ repoRoot, token, env: { RATCHET_MODEL_SCRIPT: script, RATCHET_LOG_LEVEL: 'info' } });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
  await remove?.();
});

describe('ratchet run --workspace with a 6 MB workspace against a distributed Ratchet', () => {
  it('sends the files through gRPC and the bus, fixes the bug and commits the patch to a branch', async () => {
    const repo = path.join(dir, 'large-project');
    const bytes = await project(repo);
    expect(bytes).toBeGreaterThan(5.5 * 1024 * 1024);
    const run = await ratchet(['run', goal, '--workspace', repo, '--branch', 'ratchet/fix', '--out', 'large-out']);
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${stack.output().slice(-8000)}`);
    expect(run.stderr).toMatch(/#1 run python3 -m pytest -q tests \[allow\] -> exit code 1/);
    expect(run.stderr).toMatch(/SUCCEEDED after 1 iteration/);
    expect(git(repo, 'show', 'ratchet/fix:calc.py')).toBe('def add(a, b):\n    return a + b\n');
    // Only the fix changed: the data files came back untouched.
    expect(git(repo, 'diff', '--stat', 'main', 'ratchet/fix')).toMatch(/^ calc\.py \| 2 \+-\n 1 file changed/);
    expect(await readFile(path.join(dir, 'large-out', 'ratchet.patch'), 'utf8')).toContain('+    return a + b');
    // The files went through the payload stream, and every object was deleted once read.
    const payloads = async () => {
      const response = await fetch(`http://127.0.0.1:${stack.nats.monitorPort}/jsz?streams=true`);
      const jsz = (await response.json()) as { account_details?: { stream_detail?: { name: string; state: { messages: number; bytes: number; last_seq: number } }[] }[] };
      return jsz.account_details?.flatMap((account) => account.stream_detail ?? []).find((stream) => stream.name === 'RATCHET_PAYLOADS')?.state;
    };
    // A deleted object leaves one empty rollup per chunk (under 256 bytes each): the rest would be data nobody deleted.
    const dataLeft = async () => {
      const state = await payloads();
      return (state?.bytes ?? 0) - (state?.messages ?? 0) * 256;
    };
    // At least the coder's WriteCode and the runner's OpenSession: six chunks of under 1 MiB each.
    expect((await payloads())?.last_seq).toBeGreaterThanOrEqual(2 * 6);
    const deadline = Date.now() + 10_000;
    while ((await dataLeft()) > 64 * 1024 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await dataLeft()).toBeLessThan(64 * 1024);
  });

  it('kept every service within its NATS permissions', () => {
    expect(stack.natsViolations()).toEqual([]);
  });
});
