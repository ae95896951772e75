import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { hostname } from 'node:os';
import path from 'node:path';
import { SANDBOX_JOB_QUEUE } from '@ratchet/agent';
import { createQueueCaller, NatsTransport } from '@ratchet/bus';
import { RunJobRequest, RunJobResponse, SandboxDriver } from '@ratchet/contracts';
import { jobLabel } from '../src';
import { sandboxJob } from './jobs';
import { startNatsServer, startNodeProcess, type NatsServerFixture, type NodeProcessFixture } from '@ratchet/testing';

// Sandbox-runner processes (the built main.js) pulling jobs from the JetStream
// work queue of a real nats-server, running them in the real Docker sandbox.
jest.setTimeout(90_000);

const packageDir = path.join(__dirname, '..');
const repoRoot = path.resolve(packageDir, '../..');
const codecs = { request: RunJobRequest, response: RunJobResponse };

let nats: NatsServerFixture;
let client: NatsTransport;
const runners: NodeProcessFixture[] = [];

async function startRunner(): Promise<NodeProcessFixture> {
  const runner = await startNodeProcess({
    script: path.join(packageDir, 'dist', 'main.js'),
    cwd: repoRoot,
    env: {
      RATCHET_CONFIG_DIR: path.join(repoRoot, 'config'),
      RATCHET_BUS_NATS_URL: nats.url,
      RATCHET_RUNNER_CONCURRENCY: '1',
      // Short, so a dead runner's job comes back quickly.
      RATCHET_RUNNER_ACK_WAIT_MS: '2000',
    },
  });
  runners.push(runner);
  await runner.waitForLine(/"msg":"ready"/, 20_000);
  return runner;
}

let counter = 0;
function shellJob(script: string): RunJobRequest {
  counter += 1;
  const job = sandboxJob(`queue-${process.pid}-${counter}`, ['sh', '-c', script], {}, {
    limits: { memoryBytes: 128 << 20, pids: 32, cpus: 1, timeout: { seconds: 30, nanos: 0 }, outputLimitBytes: 4096, workDirBytes: 4 << 20 },
    driver: SandboxDriver.SANDBOX_DRIVER_DOCKER,
    enqueuedAt: new Date(),
  });
  return { job };
}

beforeAll(async () => {
  nats = await startNatsServer();
  client = await NatsTransport.connect({ url: nats.url, name: 'job-queue-test' });
});

afterAll(async () => {
  await Promise.all(runners.map((runner) => runner.kill()));
  await client?.close();
  await nats?.stop();
  // A runner killed mid-job leaves its (stopped) container for the next runner's start to remove; these are this file's.
  const leftovers = execFileSync('docker', ['ps', '-a', '--filter', `label=${jobLabel}`, '--format', `{{.ID}} {{.Label "${jobLabel}"}}`])
    .toString()
    .split('\n')
    .filter((line) => line.includes(` queue-${process.pid}-`))
    .map((line) => line.split(' ')[0] as string);
  for (const id of leftovers) {
    try {
      execFileSync('docker', ['rm', '-f', id], { stdio: 'pipe' });
    } catch (error) {
      // The runner's own removal may have got there first: gone, or going, is what this wants.
      if (!/already in progress|No such container/.test(String((error as { stderr?: Buffer }).stderr ?? error))) throw error;
    }
  }
});

describe('sandbox-runner processes on the job queue', () => {
  it('share jobs: each runs only as many as its concurrency, and both take some', async () => {
    const [a, b] = await Promise.all([startRunner(), startRunner()]);
    const caller = createQueueCaller(client, SANDBOX_JOB_QUEUE, codecs);
    try {
      const requests = [1, 2, 3, 4].map(() => shellJob('echo "$HOSTNAME"; sleep 1'));
      const results = await Promise.all(requests.map((request) => caller.call(request.job!.jobId, request, { timeoutMs: 60_000 })));
      expect(results.map(({ result }) => result?.exitCode)).toEqual([0, 0, 0, 0]);
      expect(results.map(({ result }) => result?.jobId)).toEqual(requests.map((request) => request.job!.jobId));
      const byRunner = new Set(results.map(({ result }) => result?.runnerId));
      expect(byRunner).toEqual(new Set([hostnameOf(a), hostnameOf(b)]));
    } finally {
      await caller.close();
    }
  });

  it('reruns the job of a runner killed mid-job on the other runner', async () => {
    const [first, second] = runners;
    const caller = createQueueCaller(client, SANDBOX_JOB_QUEUE, codecs);
    try {
      // Both runners busy with a long job each, then one dies holding it.
      const long = shellJob('sleep 4; echo done');
      const other = shellJob('sleep 4; echo done');
      const results = [long, other].map((request) => caller.call(request.job!.jobId, request, { timeoutMs: 60_000 }));
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await first!.kill();
      const settled = await Promise.all(results);
      expect(settled.map(({ result }) => result?.exitCode)).toEqual([0, 0]);
      expect(settled.map(({ result }) => result?.stdout.toString().trim())).toEqual(['done', 'done']);
      // Whatever the killed runner held was finished by the survivor.
      expect(settled.every(({ result }) => result?.runnerId === hostnameOf(second!))).toBe(true);
    } finally {
      await caller.close();
    }
  });
});

/** The runner id a process reports: its host name and pid. */
function hostnameOf(runner: NodeProcessFixture): string {
  return `${hostname()}-${runner.pid}`;
}
