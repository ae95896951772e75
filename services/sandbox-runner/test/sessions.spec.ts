import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createClient, InProcessBroker, InProcessTransport, type ServiceClient } from '@ratchet/bus';
import { Language, SandboxDriver, SandboxRunnerServiceDefinition, type OpenSessionRequest } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { hostService, type RunningService } from '@ratchet/runtime';
import { createSandboxRunnerService, type SandboxRunnerService } from '../src';

// Sandbox sessions through the runner's RPCs, over the bus, on both real
// drivers: open with files, exec, read, write, list, diff, close, idle close.
jest.setTimeout(120_000);

const limits = { memoryBytes: 256 << 20, pids: 64, cpus: 1, timeout: { seconds: 20, nanos: 0 }, outputLimitBytes: 64 * 1024, workDirBytes: 16 << 20 };

let counter = 0;
function openRequest(overrides: Partial<OpenSessionRequest> = {}): OpenSessionRequest {
  counter += 1;
  return {
    sessionId: `s-${process.pid}-${counter}`,
    taskId: 'task-1',
    iteration: 1,
    language: Language.LANGUAGE_PYTHON,
    dataFiles: [],
    setupCommand: '',
    files: [
      { path: 'calc.py', content: 'def add(a, b):\n    return a - b\n' },
      { path: 'tests/test_calc.py', content: 'from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n' },
      { path: 'README.md', content: 'calc\n' },
    ],
    env: {},
    limits,
    driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
    image: '',
    idleTimeout: undefined,
    ...overrides,
  };
}

/**
 * SIGKILLs, from the host, the supervisor of the sandbox whose work directory
 * holds `marker`: the process that is PID 1 of its own namespace (last NSpid)
 * and sees the file (as root, through /proc/<pid>/root).
 */
function killSupervisorOf(marker: string): void {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || !existsSync(`/proc/${entry}/root/work/${marker}`)) continue;
    const nsPids = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]?.trim().split(/\s+/);
    if (nsPids !== undefined && nsPids.length > 1 && nsPids.at(-1) === '1') {
      process.kill(Number(entry), 'SIGKILL');
      return;
    }
  }
  throw new Error(`no sandbox supervisor with ${marker} in its work directory; the test must run as root`);
}

describe.each([
  ['docker', 'docker' as const],
  ['bubblewrap', 'bwrap' as const],
])('sandbox sessions (%s)', (_name, driver) => {
  const broker = new InProcessBroker();
  const transport = new InProcessTransport(broker);
  let service: SandboxRunnerService;
  let running: RunningService;
  let any: ServiceClient<typeof SandboxRunnerServiceDefinition>;
  const pinned = (runnerId: string) => createClient(transport, SandboxRunnerServiceDefinition, { instance: runnerId, defaultTimeoutMs: 60_000, maxAttempts: 1 });

  beforeAll(async () => {
    service = createSandboxRunnerService({ driver, runnerId: `${driver}.test:${process.pid}`, sessionIdleMs: 60_000 });
    running = hostService({ name: 'sandbox-runner', version: 'test', definition: SandboxRunnerServiceDefinition, implementation: service.implementation, instance: service.instance }, { transport });
    await running.server.ready;
    any = createClient(transport, SandboxRunnerServiceDefinition, { defaultTimeoutMs: 60_000, maxAttempts: 1 });
  });
  afterEach(async () => {
    // A failed test must not leave its sessions to the next one.
    await service.sessions.closeAll({ reopen: true });
  });
  afterAll(async () => {
    await running.stop(1_000);
    await service.close();
    await transport.close();
  });

  it('opens with the files, runs commands, reads, writes, lists and diffs, then closes', async () => {
    const opened = await any.openSession(openRequest());
    expect(opened.runnerId).toBe(service.instance);
    expect(opened.runnerId).not.toContain('.');
    const runner = pinned(opened.runnerId);
    const { sessionId } = opened;

    const failing = await runner.sessionExec({ sessionId, argv: ['python3', '-m', 'pytest', '-q', 'tests'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
    expect(failing.exitCode).toBe(1);
    expect(failing.stdout.toString()).toContain('1 failed');

    // State survives between commands: it is one sandbox.
    await runner.sessionExec({ sessionId, argv: ['sh', '-c', 'echo scratch > notes.txt && mkdir -p build && echo x > build/out.txt'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
    const listed = await runner.sessionListFiles({ sessionId, directory: '', limit: 0 });
    expect(listed.files.map((file) => file.path)).toEqual(['README.md', 'build/out.txt', 'calc.py', 'notes.txt', 'tests/test_calc.py']);

    await runner.sessionWriteFiles({ sessionId, files: [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }], deletedPaths: ['README.md', 'not-there.txt'] });
    const read = await runner.sessionReadFiles({ sessionId, paths: ['calc.py', 'missing.py', 'build'] });
    expect(read.files).toEqual([{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }]);
    expect(read.problems.map((problem) => problem.path)).toEqual(['missing.py', 'build']);
    expect(read.problems[0]?.reason).toBe('no such file');
    expect(read.problems[1]?.reason).toContain('directory');

    const passing = await runner.sessionExec({ sessionId, argv: ['python3', '-m', 'pytest', '-q', 'tests'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
    expect(passing.exitCode).toBe(0);

    const diff = await runner.sessionDiff({ sessionId });
    expect(diff.changedFiles.map((file) => file.path)).toEqual(['build/out.txt', 'calc.py', 'notes.txt']);
    expect(diff.changedFiles.find((file) => file.path === 'calc.py')?.content).toContain('a + b');
    expect(diff.deletedPaths).toEqual(['README.md']);
    // pytest's cache is not part of the change.
    expect(diff.changedFiles.some((file) => file.path.includes('.pytest_cache'))).toBe(false);

    expect(await runner.closeSession({ sessionId })).toEqual({ closed: true });
    expect(await runner.closeSession({ sessionId })).toEqual({ closed: false });
    await expect(runner.sessionExec({ sessionId, argv: ['true'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 })).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect(service.sessions.size).toBe(0);
  });

  it('starts as a git repository of the files it opened with: git diff shows the change, git stash the original; .git stays out of list and diff', async () => {
    const opened = await any.openSession(openRequest());
    expect(opened.gitRepository).toBe(true);
    const runner = pinned(opened.runnerId);
    const { sessionId } = opened;
    const sh = async (script: string) => {
      const result = await runner.sessionExec({ sessionId, argv: ['sh', '-c', script], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
      return { exitCode: result.exitCode, out: result.stdout.toString() + result.stderr.toString() };
    };
    expect(await sh('git log --format=%s')).toEqual({ exitCode: 0, out: 'The workspace as the task started\n' });
    await runner.sessionWriteFiles({ sessionId, files: [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }], deletedPaths: [] });
    // A test run's caches are not part of the change.
    expect((await sh('python3 -m pytest -q tests')).out).toContain('1 passed');
    expect(await sh('git status --porcelain')).toEqual({ exitCode: 0, out: ' M calc.py\n' });
    expect((await sh('git diff')).out).toContain('-    return a - b\n+    return a + b');
    // The original, run again with the change set aside, still fails; the change comes back.
    expect((await sh('git stash -q && python3 -m pytest -q tests; git stash pop -q')).out).toContain('1 failed');
    expect((await sh('python3 -m pytest -q tests')).out).toContain('1 passed');

    const listed = await runner.sessionListFiles({ sessionId, directory: '', limit: 0 });
    expect(listed.files.map((file) => file.path)).toEqual(['README.md', 'calc.py', 'tests/test_calc.py']);
    const diff = await runner.sessionDiff({ sessionId });
    expect(diff.changedFiles.map((file) => file.path)).toEqual(['calc.py']);
    expect(diff.deletedPaths).toEqual([]);
    expect(diff.skipped).toEqual([]);
  });

  it('times a hanging command out, caps a flood of output, and keeps serving', async () => {
    const { sessionId, runnerId } = await any.openSession(openRequest());
    const runner = pinned(runnerId);
    const hang = await runner.sessionExec({ sessionId, argv: ['sleep', '60'], workingDirectory: '', timeout: { seconds: 1, nanos: 0 }, outputLimitBytes: 0 });
    expect(hang.timedOut).toBe(true);
    expect(hang.exitCode).toBe(-1);
    const flood = await runner.sessionExec({ sessionId, argv: ['sh', '-c', 'yes ratchet | head -c 10000000'], workingDirectory: '', timeout: undefined, outputLimitBytes: 4096 });
    expect(flood.stdout.length).toBeLessThanOrEqual(4096);
    expect(flood.stdoutTruncated).toBe(true);
    const colour = await runner.sessionExec({ sessionId, argv: ['printf', '\\033[31mred\\033[0m'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
    expect(colour.stdout.toString()).toBe('red');
    const after = await runner.sessionExec({ sessionId, argv: ['echo', 'still here'], workingDirectory: 'tests', timeout: undefined, outputLimitBytes: 0 });
    expect(after.stdout.toString()).toBe('still here\n');
    await runner.closeSession({ sessionId });
  });

  it('refuses paths outside the work directory, a missing program and bad ids with clear errors', async () => {
    await expect(any.openSession(openRequest({ sessionId: 'has.dot' }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await expect(any.openSession(openRequest({ files: [{ path: '../escape.py', content: '' }] }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('leaves the workspace') });
    const { sessionId, runnerId } = await any.openSession(openRequest());
    const runner = pinned(runnerId);
    await expect(runner.sessionWriteFiles({ sessionId, files: [{ path: '/etc/passwd', content: '' }], deletedPaths: [] })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await expect(runner.sessionExec({ sessionId, argv: ['ls'], workingDirectory: '../..', timeout: undefined, outputLimitBytes: 0 })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    const missing = await runner.sessionExec({ sessionId, argv: ['no-such-program'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
    expect(missing.exitCode).toBe(127);
    expect(missing.stderr.toString()).toContain('no-such-program');
    // A symlink the code planted is not followed by a read, and a diff names it without carrying it.
    await runner.sessionExec({ sessionId, argv: ['ln', '-s', '/etc/passwd', 'link.txt'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
    const read = await runner.sessionReadFiles({ sessionId, paths: ['link.txt'] });
    expect(read.files).toEqual([]);
    expect(read.problems[0]?.reason).toContain('symlink');
    const diff = await runner.sessionDiff({ sessionId });
    expect(diff.skipped.map((entry) => entry.path)).toContain('link.txt');
    await runner.closeSession({ sessionId });
  });

  it("never writes, deletes or runs inside the session's .git (or other repository metadata) but reads it; a diff does not carry metadata or a git HEAD", async () => {
    const fsmonitor = '[core]\n\tfsmonitor = touch /tmp/x\n';
    await expect(any.openSession(openRequest({ files: [{ path: '.git/config', content: fsmonitor }] }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('inside version-control metadata') });
    const opened = await any.openSession(openRequest());
    expect(opened.gitRepository).toBe(true);
    const runner = pinned(opened.runnerId);
    const { sessionId } = opened;
    const sh = async (script: string) => (await runner.sessionExec({ sessionId, argv: ['sh', '-c', script], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 })).stdout.toString();

    for (const path of ['.git/config', '.GIT/config', 'GIT~1/config', '.git./hooks/pre-commit', 'sub/.hg/hgrc']) {
      await expect(runner.sessionWriteFiles({ sessionId, files: [{ path, content: fsmonitor }], deletedPaths: [] })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('inside version-control metadata') });
    }
    await expect(runner.sessionWriteFiles({ sessionId, files: [], deletedPaths: ['.git/index'] })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await expect(runner.sessionExec({ sessionId, argv: ['ls'], workingDirectory: '.git', timeout: undefined, outputLimitBytes: 0 })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    expect(await sh('git config --get core.fsmonitor; git status --porcelain')).toBe('');

    // The session's own repository can still be read.
    const head = await runner.sessionReadFiles({ sessionId, paths: ['.git/HEAD'] });
    expect(head.files[0]?.content).toMatch(/^ref: refs\/heads\//);
    expect((await runner.sessionListFiles({ sessionId, directory: '.git/info', limit: 0 })).files.map((file) => file.path)).toEqual(['.git/info/exclude']);

    // A command can still make metadata under another spelling; the change never carries it.
    await sh(`mkdir -p .GIT sub/.hg && printf '${'[core]\\n\\tfsmonitor = touch /tmp/x\\n'}' > .GIT/config && echo '[hooks]' > sub/.hg/hgrc && echo 'ref: refs/heads/main' > HEAD && echo ok > notes.txt`);
    const diff = await runner.sessionDiff({ sessionId });
    expect(diff.changedFiles.map((file) => file.path)).toEqual(['notes.txt']);
    expect(diff.skipped.map((entry) => entry.path).sort()).toEqual(['.GIT/config', 'HEAD', 'sub/.hg/hgrc']);
    expect(diff.skipped.find((entry) => entry.path === '.GIT/config')?.reason).toContain('inside version-control metadata');
    expect(diff.skipped.find((entry) => entry.path === 'HEAD')?.reason).toContain('is a git HEAD');
    await runner.closeSession({ sessionId });
  });

  it('reopening the same id returns the live session; a killed sandbox makes calls UNAVAILABLE and retryable', async () => {
    const request = openRequest();
    const first = await any.openSession(request);
    const again = await any.openSession(request);
    expect(again.sessionId).toBe(first.sessionId);
    expect(service.sessions.size).toBe(1);
    const runner = pinned(first.runnerId);
    // The code kills everything it can see. On both drivers the supervisor is its sandbox's PID 1, which the namespace's own processes cannot signal: the session goes on.
    const marker = `marker-${first.sessionId}`;
    await runner.sessionExec({ sessionId: first.sessionId, argv: ['sh', '-c', `touch ${marker}; kill -9 -1; sleep 1`], workingDirectory: '', timeout: { seconds: 5, nanos: 0 }, outputLimitBytes: 0 });
    const next = () => runner.sessionExec({ sessionId: first.sessionId, argv: ['echo', 'ok'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
    expect((await next()).stdout.toString()).toBe('ok\n');
    // Killed from the host, the sandbox is gone: every call of the session is then UNAVAILABLE, retryable, never a result.
    const running = runner.sessionExec({ sessionId: first.sessionId, argv: ['sleep', '30'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 });
    killSupervisorOf(marker);
    await expect(running).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true });
    await expect(next()).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
    await runner.closeSession({ sessionId: first.sessionId });
    expect(service.sessions.size).toBe(0);
  });

  it('closes a session left idle', async () => {
    const { sessionId, runnerId } = await any.openSession(openRequest({ idleTimeout: { seconds: 1, nanos: 0 } }));
    expect(service.sessions.size).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(service.sessions.size).toBe(0);
    await expect(pinned(runnerId).sessionExec({ sessionId, argv: ['true'], workingDirectory: '', timeout: undefined, outputLimitBytes: 0 })).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
  });
});
