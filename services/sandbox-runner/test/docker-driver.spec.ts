import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, SandboxDriver, SandboxRunnerServiceDefinition, TestCaseStatus, type SandboxJob } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { hostService } from '@ratchet/runtime';
import { createSandboxRunnerService, DockerDriver, jobLabel } from '../src';
import { sandboxJob } from './jobs';

// Real Docker engine and the real sandbox image; tools/ensure-docker.sh sets both up.
jest.setTimeout(60_000);

const driver = new DockerDriver();
let counter = 0;
const jobPrefix = `test-${process.pid}-`;

function job(files: Record<string, string>, argv: string[], overrides: Partial<SandboxJob> = {}): SandboxJob {
  counter += 1;
  const limits = { memoryBytes: 256 << 20, pids: 64, cpus: 1, timeout: { seconds: 30, nanos: 0 }, outputLimitBytes: 64 * 1024, workDirBytes: 16 << 20 };
  return sandboxJob(`${jobPrefix}${counter}`, argv, files, { limits, driver: SandboxDriver.SANDBOX_DRIVER_DOCKER, ...overrides });
}

const sh = (script: string, overrides: Partial<SandboxJob> = {}) => driver.run(job({}, ['sh', '-c', script], overrides));
const pytest = ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/report.xml', 'tests'];

beforeAll(async () => {
  await driver.ping().catch((error: unknown) => {
    throw new Error(`Docker or the sandbox image is not available (${(error as Error).message}); run tools/ensure-docker.sh`);
  });
});

afterAll(async () => {
  // Removal of finished jobs' containers runs behind the results; close() waits for it.
  await driver.close();
  // Other projects' tests may run jobs at the same time (nx runs targets in
  // parallel), so only this file's jobs, by their id prefix, must be gone.
  const left = execFileSync('docker', ['ps', '-a', '--filter', `label=${jobLabel}`, '--format', `{{.Label "${jobLabel}"}}`])
    .toString()
    .split('\n')
    .filter((jobId) => jobId.startsWith(jobPrefix));
  expect(left).toEqual([]);
});

describe('DockerDriver with a warm pool', () => {
  const limits = { memoryBytes: 256 << 20, pids: 64, cpus: 1, timeoutMs: 30_000, outputLimitBytes: 64 * 1024, workDirBytes: 16 << 20 };
  const pooledDriver = new DockerDriver({ warmPool: 2, defaults: limits, runnerId: `test-${process.pid}-pool` });
  const pooledLabel = `pool-test-${process.pid}-pool`;
  const containersOf = (label: string) =>
    execFileSync('docker', ['ps', '-q', '--filter', `label=${jobLabel}=${label}`]).toString().split('\n').filter((id) => id !== '');
  afterAll(async () => {
    await pooledDriver.close();
    expect(containersOf(pooledLabel)).toEqual([]);
  });

  it("waits before a finished job's housekeeping, so the caller's next step has the CPU; warm() and close() do it at once", async () => {
    const runnerId = `test-${process.pid}-settle`;
    const settling = new DockerDriver({ warmPool: 1, defaults: limits, runnerId, housekeepingDelayMs: 3_000 });
    const all = (label: string) => execFileSync('docker', ['ps', '-aq', '--no-trunc', '--filter', `label=${jobLabel}=${label}`]).toString().split('\n').filter((id) => id !== '');
    try {
      await settling.warm();
      const [pooled] = all(`pool-${runnerId}`);
      const first = await settling.run(job({}, ['true'], { limits: undefined }));
      expect(first.exitCode).toBe(0);
      // Long after a removal would have ended (about 100 ms), the used container is still there and nothing was refilled.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(all(`pool-${runnerId}`)).toEqual([pooled]);
      expect(settling.warmContainers).toBe(0);
      await settling.warm();
      expect(settling.warmContainers).toBe(1);
      expect(all(`pool-${runnerId}`)).not.toContain(pooled);
      // A job's housekeeping still pending at close() is done by it, without a refill.
      await settling.run(job({}, ['true'], { limits: undefined }));
    } finally {
      await settling.close();
    }
    expect(all(`pool-${runnerId}`)).toEqual([]);
  });

  it('runs jobs in pre-started containers, never one container twice, and refills', async () => {
    await pooledDriver.warm();
    expect(pooledDriver.warmContainers).toBe(2);
    const ready = new Set(containersOf(pooledLabel));
    expect(ready.size).toBe(2);
    // The first job leaves a file behind; the second must not see it (a container is never reused).
    const first = await pooledDriver.run(job({}, ['sh', '-c', 'echo secret > /work/left-behind; hostname'], { limits: undefined, env: { GREETING: 'hi' } }));
    const second = await pooledDriver.run(job({}, ['sh', '-c', 'ls /work; echo "$GREETING"; hostname'], { limits: undefined, env: { GREETING: 'hello' } }));
    expect(first.exitCode).toBe(0);
    expect(second.exitCode).toBe(0);
    expect(second.stdout.toString()).not.toContain('left-behind');
    expect(second.stdout.toString()).toContain('hello');
    const hosts = [first, second].map((result) => result.stdout.toString().trim().split('\n').at(-1));
    expect(hosts[0]).not.toBe(hosts[1]);
    // Both ran in containers that were already up, which are gone now; the pool made new ones.
    for (const host of hosts) expect([...ready].some((id) => id.startsWith(host ?? '-'))).toBe(true);
    await pooledDriver.warm();
    expect(pooledDriver.warmContainers).toBe(2);
    expect(containersOf(pooledLabel).filter((id) => ready.has(id))).toEqual([]);
  });

  it('keeps the same isolation in a pooled container, and times out the same way', async () => {
    const result = await pooledDriver.run(job({}, ['sh', '-c', 'id -u; grep NoNewPrivs /proc/self/status; touch /etc/x 2>&1; true'], { limits: undefined }));
    expect(result.stdout.toString()).toMatch(/^10001\nNoNewPrivs:\s+1\n.*Read-only file system/s);
    // A shorter timeout than the pool's fits its containers too.
    const slow = await pooledDriver.run(job({}, ['sleep', '30'], { limits: { ...job({}, []).limits!, timeout: { seconds: 1, nanos: 0 } } }));
    expect(slow.timedOut).toBe(true);
    expect(slow.resourceUsage?.wallTime?.seconds ?? 99).toBeLessThan(5);
  });

  it("runs a job with its own output cap in a pooled container, capped at the job's limit, not the pool's", async () => {
    await pooledDriver.warm();
    const ready = new Set(containersOf(pooledLabel));
    const own = (outputLimitBytes: number) => ({ limits: { memoryBytes: limits.memoryBytes, pids: limits.pids, cpus: limits.cpus, workDirBytes: limits.workDirBytes, timeout: { seconds: 30, nanos: 0 }, outputLimitBytes } });
    // More than the pool's 64 KiB, as the safety service's Bandit job asks for its report.
    const larger = await pooledDriver.run(job({}, ['sh', '-c', 'hostname >&2; head -c 200000 /dev/zero | tr "\\0" x'], own(1024 * 1024)));
    expect(larger.stdout.length).toBe(200_000);
    expect(larger.stdoutTruncated).toBe(false);
    const smaller = await pooledDriver.run(job({}, ['sh', '-c', 'hostname >&2; head -c 200000 /dev/zero | tr "\\0" x'], own(1000)));
    expect(smaller.stdout.length).toBe(1000);
    expect(smaller.stdoutTruncated).toBe(true);
    for (const result of [larger, smaller]) expect([...ready].some((id) => id.startsWith(result.stderr.toString().trim().split('\n')[0] ?? '-'))).toBe(true);
  });
});

describe('DockerDriver', () => {
  it('runs pytest and reads results from the JUnit report', async () => {
    const result = await driver.run(
      job({ 'calc.py': 'def add(a, b):\n    return a - b\n', 'tests/test_calc.py': 'from calc import add\n\ndef test_ok():\n    assert add(2, 0) == 2\n\ndef test_bad():\n    assert add(2, 3) == 5\n' }, pytest, { testReportPath: '/tmp/report.xml' }),
    );
    expect(result.exitCode).toBe(1);
    expect(result.testReport).toMatchObject({ parsed: true, framework: 'pytest', total: 2, passed: 1, failed: 1 });
    const bad = result.testReport!.cases.find((testCase) => testCase.name === 'test_bad');
    expect(bad).toMatchObject({ status: TestCaseStatus.TEST_CASE_STATUS_FAILED, suite: 'tests.test_calc', failureMessage: expect.stringContaining('AssertionError: assert -1 == 5') });
    expect(result.stdout.toString()).toContain('1 failed, 1 passed');
    expect(result.driver).toBe(SandboxDriver.SANDBOX_DRIVER_DOCKER);
  });

  it("runs node's test runner on TypeScript through type stripping", async () => {
    const result = await driver.run(
      job(
        { 'src/add.ts': 'export const add = (a: number, b: number): number => a + b;\n', 'tests/add.test.ts': "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/add.ts';\ntest('adds', () => assert.equal(add(1, 2), 3));\n" },
        ['node', '--test', '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=junit', '--test-reporter-destination=/tmp/report.xml', 'tests/add.test.ts'],
        { language: Language.LANGUAGE_TYPESCRIPT, testReportPath: '/tmp/report.xml' },
      ),
    );
    expect(result.exitCode).toBe(0);
    expect(result.testReport).toMatchObject({ parsed: true, total: 1, passed: 1, framework: 'node:test' });
  });

  it('does not claim a result without a report, even when the exit code is 0', async () => {
    const result = await driver.run(job({ 'tests/test_x.py': 'import os\nos._exit(0)\n' }, pytest, { testReportPath: '/tmp/report.xml' }));
    expect(result.exitCode).toBe(0);
    expect(result.testReport).toMatchObject({ parsed: false, parseError: expect.stringContaining('no JUnit report') });
  });

  it('kills the whole process tree on timeout and says so', async () => {
    const started = Date.now();
    const result = await sh('sleep 100 & sleep 100 & (sh -c "sleep 100") ; wait', { limits: { memoryBytes: 128 << 20, pids: 32, cpus: 1, timeout: { seconds: 2, nanos: 0 }, outputLimitBytes: 1024, workDirBytes: 1 << 20 } });
    expect(result.timedOut).toBe(true);
    expect(result.commandResults[0]?.timedOut).toBe(true);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('has no network, a read-only root, an unprivileged user and none of the runner\'s environment', async () => {
    process.env['RATCHET_TEST_SECRET'] = 'do-not-leak';
    const result = await sh(
      'id -u; (touch /etc/x 2>&1 || true); python3 -c "import socket; s=socket.socket(); s.settimeout(2); s.connect((\'1.1.1.1\', 80))" 2>&1 | tail -1; env; cat /proc/self/status | grep CapEff',
      { env: { GIVEN: 'yes' } },
    );
    const out = result.stdout.toString();
    expect(out.split('\n')[0]).toBe('10001');
    expect(out).toContain('Read-only file system');
    expect(out).toMatch(/Network is unreachable|OSError/);
    expect(out).toContain('GIVEN=yes');
    expect(out).not.toContain('do-not-leak');
    expect(out).toContain('CapEff:\t0000000000000000');
  });

  it('caps output and flags the truncation', async () => {
    const result = await sh('yes ratchet | head -c 1000000; head -c 200000 /dev/zero 1>&2');
    expect(result.stdout.length).toBe(64 * 1024);
    expect(result.stdoutTruncated).toBe(true);
    expect(result.stderrTruncated).toBe(true);
  });

  it('reports an out-of-memory kill', async () => {
    const result = await driver.run(job({}, ['python3', '-c', 'x = bytearray(400 * 1024 * 1024)'], { limits: { memoryBytes: 64 << 20, pids: 32, cpus: 1, timeout: { seconds: 20, nanos: 0 }, outputLimitBytes: 4096, workDirBytes: 1 << 20 } }));
    expect(result.exitCode).toBe(137);
    expect(result.oomKilled).toBe(true);
  });

  it('kills and removes the container when the caller cancels, and ends CANCELLED', async () => {
    const controller = new AbortController();
    const cancelled = job({}, ['sleep', '60']);
    const running = driver.run(cancelled, controller.signal);
    setTimeout(() => controller.abort(), 500);
    await expect(running).rejects.toMatchObject({ code: ErrorCode.CANCELLED });
    await driver.warm(); // waits for the removal
    const left = execFileSync('docker', ['ps', '-a', '--filter', `label=${jobLabel}=${cancelled.jobId}`, '-q']).toString().trim();
    expect(left).toBe('');
  });

  it("removes a dead runner's leftovers on warm(): a stopped container and one created but never started", async () => {
    const stopped = execFileSync('docker', ['run', '-d', '--label', `${jobLabel}=${jobPrefix}leftover-stopped`, 'ratchet-sandbox:3', 'true']).toString().trim();
    const created = execFileSync('docker', ['create', '--label', `${jobLabel}=${jobPrefix}leftover-created`, 'ratchet-sandbox:3', 'true']).toString().trim();
    execFileSync('docker', ['wait', stopped]);
    // Older than the threshold; a runner between create and start is milliseconds old.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const sweeper = new DockerDriver({ leftoverAgeMs: 1_000, runnerId: `test-${process.pid}-sweeper` });
    await sweeper.warm();
    await sweeper.close();
    const exists = (id: string) => execFileSync('docker', ['ps', '-aq', '--no-trunc', '--filter', `id=${id}`]).toString().trim() !== '';
    expect(exists(stopped)).toBe(false);
    expect(exists(created)).toBe(false);
  });

  it('says how long the job took to reach its first instruction', async () => {
    const result = await sh('true');
    const startupMs = (result.startup?.seconds ?? 0) * 1000 + (result.startup?.nanos ?? 0) / 1e6;
    const wallMs = (result.resourceUsage?.wallTime?.seconds ?? 0) * 1000 + (result.resourceUsage?.wallTime?.nanos ?? 0) / 1e6;
    expect(startupMs).toBeGreaterThan(0);
    expect(startupMs).toBeLessThan(wallMs);
  });

  // gVisor is optional: tools/ensure-docker.sh registers runsc when Debian's package installs.
  const runscRegistered = execFileSync('docker', ['info', '--format', '{{json .Runtimes}}']).toString().includes('"runsc"');
  (runscRegistered ? it : it.skip)('runs a job under gVisor with sandbox.runtime runsc, with the same limits and checks', async () => {
    const gvisor = new DockerDriver({ runtime: 'runsc', runnerId: `test-${process.pid}-runsc` });
    try {
      const result = await gvisor.run(
        job({ 'calc.py': 'def add(a, b):\n    return a + b\n', 'tests/test_calc.py': 'from calc import add\n\ndef test_ok():\n    assert add(2, 3) == 5\n' }, ['sh', '-c', `uname -r; ${pytest.join(' ')}`], { testReportPath: '/tmp/report.xml' }),
      );
      expect(result.exitCode).toBe(0);
      expect(result.testReport).toMatchObject({ parsed: true, total: 1, passed: 1 });
      // gVisor's own kernel, not the host's.
      expect(result.stdout.toString().split('\n')[0]).not.toBe(execFileSync('uname', ['-r']).toString().trim());
      // gVisor's own threads and memory count against the container's limits, so it needs more of both than runc.
      const bomb = await gvisor.run(job({}, ['python3', '-c', 'x = bytearray(1024 * 1024 * 1024)'], { limits: { memoryBytes: 256 << 20, pids: 128, cpus: 1, timeout: { seconds: 20, nanos: 0 }, outputLimitBytes: 4096, workDirBytes: 1 << 20 } }));
      expect(bomb.oomKilled).toBe(true);
      expect(bomb.testReport?.parsed).toBe(false);
    } finally {
      await gvisor.close();
    }
  });

  it('rejects a job whose files leave the work directory, before creating a container', async () => {
    await expect(driver.run(job({ '../escape.py': '' }, ['true']))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('leaves the workspace') });
    await expect(driver.run(job({ '/etc/passwd': '' }, ['true']))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await expect(driver.run(job({}, ['true'], { limits: { memoryBytes: 64 * 2 ** 30, pids: 0, cpus: 0, timeout: undefined, outputLimitBytes: 0, workDirBytes: 0 } }))).rejects.toMatchObject({ message: expect.stringContaining('limits.memoryBytes') });
  });

  it('says how to build a missing image and how to reach a missing engine', async () => {
    await expect(driver.run(job({}, ['true'], { image: 'ratchet-sandbox:does-not-exist' }))).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('build-image.sh') });
    const nowhere = new DockerDriver({ socketPath: '/tmp/no-docker-here.sock' });
    await expect(nowhere.run(job({}, ['true']))).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true, message: expect.stringContaining('not reachable') });
  });

  it('serves RunJob over the in-process bus', async () => {
    const transport = new InProcessTransport();
    const service = createSandboxRunnerService();
    const running = hostService({ name: 'sandbox-runner', version: 'test', definition: SandboxRunnerServiceDefinition, implementation: service.implementation, checks: service.checks }, { transport });
    try {
      const client = createClient(transport, SandboxRunnerServiceDefinition, { defaultTimeoutMs: 30_000 });
      const response = await client.runJob({ job: job({ 'a.txt': 'hello' }, ['cat', 'a.txt']) });
      expect(response.result?.stdout.toString()).toBe('hello');
      const health = await client.health({});
      expect(health.dependencies.find((dependency) => dependency.name === 'docker')).toMatchObject({ detail: expect.stringMatching(/^engine up, image ratchet-sandbox:3 present, \d+ warm$/) });
    } finally {
      await running.stop(100);
      await service.close();
    }
  });
});
