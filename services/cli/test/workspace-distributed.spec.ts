import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ScriptedTurn } from '@ratchet/llm';
import { planReply, startStack, type Stack } from '@ratchet/testing';
import { ratchetArgv, temporaryDirectory } from './helpers';

// Workspace mode distributed: real nats-server and Postgres, every service
// its own process, the files travelling in SubmitTaskRequest.workspace over
// gRPC, the coder's session pinned to the runner that opened it. A runner
// killed in the middle of a session makes the coding phase run again, with
// a fresh session on another runner, and the task still succeeds.
jest.setTimeout(300_000);

const repoRoot = path.resolve(__dirname, '../../..');
const token = 'workspace-e2e-token';
const gitEnv = { GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@example.com' };
const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', env: { ...process.env, ...gitEnv } });

/**
 * The turns of one task, matched by what the request holds (the stack's
 * services share one script): later turns first, so a turn that needs a
 * tool's result wins over the opening turn, which matches every request of
 * the task. Each may answer twice, for a phase that runs again.
 */
function fixTurns(goal: string, firstCommand: string): ScriptedTurn[] {
  const own = `Goal: ${goal}\n`;
  return [
    { role: 'planner', expect: [own], reply: planReply('calc.py', 'tests/test_calc.py', { changesTests: false }), times: 2 },
    { role: 'coder', expect: [own, 'edited calc.py'], toolCalls: [{ name: 'finish', arguments: { summary: 'add() adds' } }], times: 2 },
    { role: 'coder', expect: [own, '1 failed'], toolCalls: [{ name: 'edit_file', arguments: { path: 'calc.py', search: 'return a - b', replace: 'return a + b' } }], times: 2 },
    { role: 'coder', expect: [own], toolCalls: [{ name: 'run', arguments: { command: firstCommand, timeout_seconds: 10 } }], times: 2 },
  ];
}

/** A task whose coder asks to install a package: the policy asks a person, the task waits on a gate, an approval lets it run. */
function askTurns(goal: string): ScriptedTurn[] {
  const own = `Goal: ${goal}\n`;
  const install = 'python3 -m pip install --no-index requests';
  return [
    { role: 'planner', expect: [own], reply: planReply('calc.py', 'tests/test_calc.py', { changesTests: false }) },
    { role: 'coder', expect: [own, 'edited calc.py'], toolCalls: [{ name: 'finish', arguments: { summary: 'add() adds; requests was not needed after all' } }] },
    { role: 'coder', expect: [own, 'exit code'], toolCalls: [{ name: 'edit_file', arguments: { path: 'calc.py', search: 'return a - b', replace: 'return a + b' } }] },
    { role: 'coder', expect: [own, 'A person approved running'], toolCalls: [{ name: 'run', arguments: { command: install } }] },
    { role: 'coder', expect: [own], toolCalls: [{ name: 'run', arguments: { command: install } }] },
  ];
}

const branchGoal = 'workspace-e2e: make the failing test pass';
const askGoal = 'workspace-e2e-ask: make the failing test pass';
const killGoal = 'workspace-e2e-kill: make the failing test pass';

async function project(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'tests'), { recursive: true });
  await writeFile(path.join(dir, 'calc.py'), 'def add(a, b):\n    return a - b\n');
  await writeFile(path.join(dir, 'tests', 'test_calc.py'), 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n');
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'calc');
}

let stack: Stack;
let dir: string;
let remove: () => Promise<void>;

interface Run {
  readonly code: number | null;
  readonly stderr: string;
}

function ratchet(args: string[], onStderr?: (text: string) => void): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
  const child = spawn(process.execPath, ratchetArgv(args), { cwd: dir, env: { ...clean, RATCHET_SERVER: stack.grpcAddress, RATCHET_TOKEN: token } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    onStderr?.(stderr);
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

beforeAll(async () => {
  ({ dir, remove } = await temporaryDirectory());
  const script = path.join(dir, 'model-script.json');
  await writeFile(script, JSON.stringify({ order: 'by-expect', turns: [...fixTurns(branchGoal, 'python3 -m pytest -q'), ...fixTurns(killGoal, 'sleep 4; python3 -m pytest -q'), ...askTurns(askGoal)] }));
  stack = await startStack({
    repoRoot,
    runners: 2,
    token,
    // Sandboxes of a killed runner end on their own soon after.
    env: { RATCHET_MODEL_SCRIPT: script, RATCHET_LOG_LEVEL: 'info', RATCHET_SANDBOX_SESSION_IDLE_SECONDS: '30' },
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await remove?.();
});

describe('ratchet run --workspace against a distributed Ratchet', () => {
  it('fixes the project through the tools on the server and commits the patch to a branch', async () => {
    const repo = path.join(dir, 'branch-project');
    await project(repo);
    const run = await ratchet(['run', branchGoal, '--workspace', repo, '--branch', 'ratchet/fix', '--out', 'branch-out']);
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${stack.output().slice(-8000)}`);
    expect(run.stderr).toMatch(/#1 run python3 -m pytest -q \[allow\] -> exit code 1/);
    expect(run.stderr).toMatch(/#2 edit_file calc.py -> edited calc.py/);
    expect(run.stderr).toContain('committed to branch ratchet/fix');
    expect(git(repo, 'show', 'ratchet/fix:calc.py')).toBe('def add(a, b):\n    return a + b\n');
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(await readFile(path.join(dir, 'branch-out', 'ratchet.patch'), 'utf8')).toContain('+    return a + b');
  });

  it('re-runs the coding phase with a fresh session when the runner holding it dies, and succeeds', async () => {
    const repo = path.join(dir, 'kill-project');
    await project(repo);
    let killed: Promise<void> | undefined;
    const run = await ratchet(['run', killGoal, '--workspace', repo, '--out', 'kill-out'], (stderr) => {
      // While the first command (a 4 s sleep) runs in the session: kill every runner, then start a fresh one.
      if (killed === undefined && stderr.includes('coding...')) {
        killed = (async () => {
          await new Promise((resolve) => setTimeout(resolve, 2_500));
          await stack.killService('sandbox-runner', 0);
          await stack.killService('sandbox-runner', 0);
          await stack.startService('sandbox-runner');
        })();
      }
    });
    await killed;
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${stack.output().slice(-8000)}`);
    expect(run.stderr).toMatch(/SUCCEEDED after 1 iteration/);
    // The first attempt's command never finished; the second ran it in a new session.
    expect(run.stderr.match(/#1 run sleep 4; python3 -m pytest -q \[allow\]/g)).toHaveLength(1);
    expect(stack.output().split('\n').some((line) => line.includes('task paused') && line.includes('sandbox session was lost'))).toBe(true);
    const patch = await readFile(path.join(dir, 'kill-out', 'ratchet.patch'), 'utf8');
    expect(patch).toContain('+    return a + b');
  });

  it('stops at a command the policy asks about, waits on a gate, and goes on from the kept change once approved', async () => {
    const repo = path.join(dir, 'ask-project');
    await project(repo);
    let approval: Promise<Run> | undefined;
    const run = await ratchet(['run', askGoal, '--workspace', repo, '--out', 'ask-out'], (stderr) => {
      const gate = /ratchet approve (\S+) (\S+)\n/.exec(stderr);
      if (approval === undefined && gate !== null) approval = ratchet(['approve', gate[1]!, gate[2]!, '--comment', 'once']);
    });
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${stack.output().slice(-8000)}`);
    expect((await approval)?.code).toBe(0);
    expect(run.stderr).toMatch(/#1 run python3 -m pip install --no-index requests \[ask\] -> waiting for a person/);
    expect(run.stderr).toMatch(/WAITING FOR APPROVAL \(command execution\): may the coder run `python3 -m pip install --no-index requests`\?/);
    expect(run.stderr).toMatch(/command execution approved by \S+: once/);
    // After the approval the command really ran (it fails: the sandbox has no network and no index).
    expect(run.stderr).toMatch(/#1 run python3 -m pip install --no-index requests \[ask\] -> exit code [1-9]/);
    expect(run.stderr).toMatch(/SUCCEEDED after 1 iteration/);
    expect(await readFile(path.join(dir, 'ask-out', 'ratchet.patch'), 'utf8')).toContain('+    return a + b');
  });

  it('kept every service within its NATS permissions', () => {
    expect(stack.natsViolations()).toEqual([]);
  });
});
