import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { scriptedGoals, servePackageIndex, startStack, wheel, writeScript, type PackageIndex, type Stack } from '@ratchet/testing';
import { ratchetArgv, temporaryDirectory } from './helpers';

// Distributed mode as teams run it: a real nats-server and Postgres, every
// service its own process (two sandbox runners), the orchestrator's gRPC API,
// and the built `ratchet` command as its client. Only the model is scripted.
jest.setTimeout(300_000);

const repoRoot = path.resolve(__dirname, '../../..');
const token = 'e2e-secret-token';

const concurrent = scriptedGoals('e2e', 10);
const slow = scriptedGoals('slow', 1, { slowSeconds: 60 })[0]!;
const resumable = scriptedGoals('resume', 1, { failFirst: true })[0]!;
const reviewed = scriptedGoals('review', 1)[0]!;
const packaged = scriptedGoals('deps', 1, { dependencies: [{ name: 'padkit', versionSpec: '' }] })[0]!;
const vague = scriptedGoals('vague', 1, { questions: ['Integers only, or floats too?'] })[0]!;

let stack: Stack;
let index: PackageIndex;
let dir: string;
let remove: () => Promise<void>;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built `ratchet` command against the stack; `onStderr` sees its progress as it comes. */
function ratchet(args: string[], options: { env?: Record<string, string>; onStderr?: (text: string, child: ReturnType<typeof spawn>) => void } = {}): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
  const child = spawn(process.execPath, ratchetArgv(args), { cwd: dir, env: { ...clean, RATCHET_SERVER: stack.grpcAddress, RATCHET_TOKEN: token, ...options.env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    options.onStderr?.(stderr, child);
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

beforeAll(async () => {
  ({ dir, remove } = await temporaryDirectory());
  const script = path.join(dir, 'model-script.json');
  // Two answers per turn: the resumed task plans (and writes tests) a second time.
  await writeScript(script, [...concurrent, slow, resumable, reviewed, packaged, vague], { times: 2 });
  // The runners install packages from an index this test serves (PyPI is not reachable from CI).
  index = await servePackageIndex({ padkit: [wheel('padkit', '0.3.0', { 'padkit/__init__.py': 'def pad(text, width):\n    return text.rjust(width)\n' })] });
  stack = await startStack({
    repoRoot,
    runners: 2,
    token,
    env: {
      RATCHET_MODEL_SCRIPT: script,
      RATCHET_LOG_LEVEL: 'info',
      RATCHET_ORCHESTRATOR_MAX_CONCURRENT_TASKS: '12',
      RATCHET_SANDBOX_DEPENDENCIES_PYTHON_INDEX_URL: index.url,
      RATCHET_SANDBOX_DEPENDENCIES_CACHE_DIRECTORY: path.join(dir, 'deps'),
    },
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await index?.close();
  await remove?.();
});

describe('distributed Ratchet through the CLI over gRPC', () => {
  it('runs ten tasks at once to success, spread over both sandbox runners', async () => {
    const runs = await Promise.all(concurrent.map(({ goal }, index) => ratchet(['run', goal, '--out', `out-${index}`])));
    for (const run of runs) {
      if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${stack.output().slice(-8000)}`);
      expect(run.stderr).toMatch(/submitted to server 127\.0\.0\.1:\d+/);
      expect(run.stderr).toMatch(/SUCCEEDED after 1 iteration/);
    }
    const code = await readFile(path.join(dir, 'out-0', 'adder_e2e_01.py'), 'utf8');
    expect(code).toContain('return a + b');

    const history = await ratchet(['history', '--json', '--limit', '50']);
    expect(history.code).toBe(0);
    const tasks = history.stdout.trim().split('\n').map((line) => JSON.parse(line) as { id: string; goal: string; status: string; iterations: number });
    const ours = tasks.filter((task) => concurrent.some(({ goal }) => goal === task.goal));
    expect(ours).toHaveLength(10);
    expect(ours.every((task) => task.status === 'SUCCEEDED' && task.iterations === 1)).toBe(true);

    // Both runner processes took jobs: each result names its runner. (The tasks are read at once: each command is a process.)
    const runnerIds = new Set<string>();
    const read = await Promise.all(ours.map(async (task) => ({ show: await ratchet(['show', task.id, '--json']), events: await ratchet(['watch', task.id, '--json']) })));
    for (const { show, events } of read) {
      expect(show.code).toBe(0);
      const shown = JSON.parse(show.stdout) as { iterations: { outcome: string; tests: string }[] };
      expect(shown.iterations).toEqual([expect.objectContaining({ outcome: 'passed', tests: '2/2 passed' })]);
      for (const line of events.stdout.trim().split('\n')) {
        const event = JSON.parse(line) as { testRunCompleted?: { runnerId?: string } };
        const runner = event.testRunCompleted?.runnerId;
        if (runner) runnerIds.add(runner);
      }
    }
    expect(runnerIds.size).toBe(2);
  });

  it('refuses a client without the token, saying what is wrong', async () => {
    const run = await ratchet(['history'], { env: { RATCHET_TOKEN: 'wrong' } });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/token/i);
  });

  it('detaches on Ctrl-C, keeps the task going, and cancels it with ratchet cancel', async () => {
    let interrupted = false;
    const run = await ratchet(['run', slow.goal, '--out', 'out-slow'], {
      onStderr: (text, child) => {
        // Interrupt once the tests run (the sandbox job sleeps for a minute).
        if (!interrupted && /testing\.\.\./i.test(text)) {
          interrupted = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(run.code).toBe(130);
    const taskId = /ratchet watch ([0-9a-f-]{36})/.exec(run.stderr)?.[1];
    expect(taskId).toBeDefined();
    const shown = await ratchet(['show', taskId!, '--json']);
    expect(JSON.parse(shown.stdout).task.status).toBe('TESTING');

    const cancelled = await ratchet(['cancel', taskId!, '--reason', 'no longer needed']);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toContain(`task ${taskId} CANCELLED`);
    // Watching an ended task replays it to the end and exits 1: it did not succeed.
    const watched = await ratchet(['watch', taskId!]);
    expect(watched.code).toBe(1);
    expect(watched.stderr).toContain('CANCELLED');
  });

  it('resumes a task that ran out of iterations and follows it to success', async () => {
    const failed = await ratchet(['run', resumable.goal, '--max-iterations', '1', '--out', 'out-resume']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('reached the maximum of 1 iterations');
    const taskId = /see what happened: ratchet show ([0-9a-f-]{36})/.exec(failed.stderr)?.[1];
    expect(taskId).toBeDefined();
    const resumed = await ratchet(['resume', taskId!, '--add-iterations', '2', '--hint', 'add, do not subtract', '--out', 'out-resume']);
    if (resumed.code !== 0) throw new Error(`ratchet resume exited ${resumed.code}:\n${resumed.stderr}`);
    expect(resumed.stderr).toContain(`task ${taskId} resumed (PLANNING)`);
    expect(resumed.stderr).toContain('SUCCEEDED after 2 iteration(s)');
    expect(await readFile(path.join(dir, 'out-resume', 'adder_resume_01.py'), 'utf8')).toContain('return a + b');
    // The failing attempt written by the first run was replaced, and its marker removed.
    await expect(readFile(path.join(dir, 'out-resume', 'FAILING.md'), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('waits for approval of the result: a rejection sends it back with the comment, an approval finishes it', async () => {
    const decisions: Promise<Run>[] = [];
    const run = await ratchet(['run', reviewed.goal, '--require-approval', '--out', 'out-review'], {
      onStderr: (text) => {
        // Each time a gate is raised: reject the first, approve the second.
        const gates = [...text.matchAll(/approve: ratchet approve (\S+) (\S+)/g)];
        if (gates.length > decisions.length) {
          const [, taskId, gateId] = gates[decisions.length]!;
          decisions.push(
            ratchet(decisions.length === 0 ? ['approve', taskId!, gateId!, '--reject', '--comment', 'name the function plus'] : ['approve', taskId!, gateId!]),
          );
        }
      },
    });
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}`);
    const [rejected, approved] = await Promise.all(decisions);
    expect(rejected?.stdout).toMatch(/rejected; the task is PLANNING/);
    expect(approved?.stdout).toMatch(/approved; the task is LEARNING/);
    expect(run.stderr).toContain('final result rejected by');
    expect(run.stderr).toContain('SUCCEEDED after 2 iteration(s)');

    const taskId = /task (\S+) submitted to server/.exec(run.stderr)?.[1];
    const shown = await ratchet(['show', taskId!]);
    expect(shown.stdout.match(/approval gate \S+ \(final result, iteration \d\): (rejected|approved) by/g)).toHaveLength(2);
    expect(shown.stdout).toContain(': name the function plus');
    // A decided gate stays decided.
    const gateId = /approve: ratchet approve \S+ (\S+)/.exec(run.stderr)?.[1];
    const again = await ratchet(['approve', taskId!, gateId!]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is SUCCEEDED, not waiting for approval/);
  });

  it('waits at a DEPENDENCY_INSTALL gate until a person approves, then installs the package for the tests', async () => {
    let decision: Promise<Run> | undefined;
    const run = await ratchet(['run', packaged.goal, '--out', 'out-deps'], {
      onStderr: (text) => {
        const gate = /WAITING FOR APPROVAL \(dependency install\)[^\n]*padkit[\s\S]*?approve: ratchet approve (\S+) (\S+)/.exec(text);
        if (gate !== null && decision === undefined) decision = ratchet(['approve', gate[1]!, gate[2]!, '--comment', 'padkit is fine']);
      },
    });
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}`);
    expect((await decision)?.stdout).toMatch(/approved; the task is CODING/);
    const taskId = /task (\S+) submitted to server/.exec(run.stderr)?.[1];
    const shown = await ratchet(['show', taskId!]);
    expect(shown.stdout).toMatch(/approval gate \S+ \(dependency install, iteration 1\): approved by \S+: padkit is fine/);
    expect(shown.stdout).toMatch(/package padkit: allowed \(approved by \S+: padkit is fine\)/);
    expect(shown.stdout).toMatch(/install: 1 package\(s\) installed in/);
  });

  it('waits for answers to the reprompter\'s questions (ratchet answer), then plans from the spec', async () => {
    let answered: Promise<Run> | undefined;
    const run = await ratchet(['run', vague.goal, '--reprompt', '--out', 'out-vague'], {
      onStderr: (text) => {
        const asked = /QUESTIONS before planning \(answer: ratchet answer (\S+)\)/.exec(text);
        if (asked !== null && answered === undefined) answered = ratchet(['answer', asked[1]!, '--answer', 'q1=floats too']);
      },
    });
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}`);
    expect((await answered)?.stdout).toMatch(/answered; task \S+ is REPROMPTING/);
    const taskId = /task (\S+) submitted to server/.exec(run.stderr)?.[1];
    const shown = await ratchet(['show', taskId!]);
    expect(shown.stdout).toMatch(/question q1: Integers only, or floats too\? -> floats too \(\S+\)/);
    expect(shown.stdout).toContain(`spec: add(a, b) for ${vague.tag}`);
    expect(shown.stdout).toContain('    - add(2, 3) returns 5');
    // Answering again is refused: nothing waits.
    const again = await ratchet(['answer', taskId!, '--answer', 'q1=integers']);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/is not waiting for answers/);
  });

  it('resumes only failed tasks, and approves only tasks that wait', async () => {
    const [cancelled] = JSON.parse(`[${(await ratchet(['history', '--json', '--status', 'cancelled'])).stdout.trim().split('\n').join(',')}]`) as { id: string }[];
    const resume = await ratchet(['resume', cancelled!.id, '--add-iterations', '1']);
    expect(resume.code).toBe(1);
    expect(resume.stderr).toContain('is CANCELLED; only a FAILED task can be resumed');
    const approve = await ratchet(['approve', cancelled!.id, 'gate-1']);
    expect(approve.code).toBe(1);
    expect(approve.stderr).toContain('is CANCELLED, not waiting for approval');
  });

  it('kept every service within its NATS permissions', () => {
    expect(stack.natsViolations()).toEqual([]);
  });
});
