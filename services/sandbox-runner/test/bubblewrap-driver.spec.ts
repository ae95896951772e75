import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { Language, SandboxDriver, type SandboxJob } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { BubblewrapDriver, defaultRootfs, type EffectiveLimits } from '../src';
import { sandboxJob } from './jobs';

// Real bubblewrap over the exported sandbox image (tools/ensure-sandbox-rootfs.sh).
// The abuse suite covers hostile programs; this covers the driver's own duties.
jest.setTimeout(60_000);

const limits: EffectiveLimits = { memoryBytes: 256 << 20, pids: 64, cpus: 1, timeoutMs: 20_000, outputLimitBytes: 64 * 1024, workDirBytes: 16 << 20 };
let counter = 0;

function job(argv: string[], overrides: Partial<SandboxJob> = {}): SandboxJob {
  counter += 1;
  return sandboxJob(`bwrap-${process.pid}-${counter}`, argv, {}, overrides);
}

/** This file's job cgroups still present (v1 or v2 layout). */
function leftoverCgroups(): string[] {
  const parents = ['/sys/fs/cgroup/ratchet-sandbox', '/sys/fs/cgroup/memory/ratchet-sandbox', '/sys/fs/cgroup/pids/ratchet-sandbox'];
  return parents.flatMap((parent) => {
    try {
      return readdirSync(parent, { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && entry.name.startsWith(`bwrap-${process.pid}-`))
        .map((entry) => entry.name);
    } catch {
      return [];
    }
  });
}

describe('BubblewrapDriver', () => {
  const pooled = new BubblewrapDriver({ defaults: limits, warmPool: 2, runnerId: `bwrap-test-${process.pid}` });
  afterAll(() => pooled.close());

  it('runs jobs from its warm pool, never one sandbox twice, and refills after each job', async () => {
    await pooled.warm();
    expect(pooled.warmSandboxes).toBe(2);
    const first = await pooled.run(job(['sh', '-c', 'echo secret > /work/left-behind; echo $$']));
    const second = await pooled.run(job(['sh', '-c', 'ls /work; echo "$GREETING"'], { env: { GREETING: 'hello' } }));
    expect(first.exitCode).toBe(0);
    expect(second.stdout.toString()).not.toContain('left-behind');
    expect(second.stdout.toString()).toContain('hello');
    expect(second.driver).toBe(SandboxDriver.SANDBOX_DRIVER_BUBBLEWRAP);
    const startupMs = (second.startup?.seconds ?? 0) * 1000 + (second.startup?.nanos ?? 0) / 1e6;
    expect(startupMs).toBeGreaterThan(0);
    await pooled.warm();
    expect(pooled.warmSandboxes).toBe(2);
  });

  it('runs pytest with hypothesis, and JavaScript and TypeScript with node\'s test runner, reading the JUnit reports', async () => {
    const python = await pooled.run(
      job(['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/report.xml', 'tests'], {
        files: [{ path: 'tests/test_sort.py', content: 'from hypothesis import given, strategies as st\n\n@given(st.lists(st.integers()))\ndef test_sorted_is_idempotent(items):\n    assert sorted(sorted(items)) == sorted(items)\n' }],
        testReportPath: '/tmp/report.xml',
        protectedPaths: ['tests/test_sort.py'],
      }),
    );
    expect(python.testReport).toMatchObject({ parsed: true, total: 1, passed: 1 });
    const node = await pooled.run(
      job(['node', '--test', '--test-concurrency=1', '--test-reporter=junit', '--test-reporter-destination=/tmp/report.xml', 'tests/a.test.js', 'tests/b.test.ts'], {
        language: Language.LANGUAGE_TYPESCRIPT,
        files: [
          { path: 'tests/a.test.js', content: "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => assert.strictEqual(1 + 1, 2));\n" },
          { path: 'tests/b.test.ts', content: "import test from 'node:test';\nimport assert from 'node:assert';\nconst double = (value: number): number => value * 2;\ntest('doubles', () => assert.strictEqual(double(2), 5));\n" },
        ],
        testReportPath: '/tmp/report.xml',
      }),
    );
    expect(node.testReport).toMatchObject({ parsed: true, total: 2, passed: 1, failed: 1 });
  });

  it('loads its seccomp filter: calls that reach another process, the keyring and large kernel surfaces fail with EPERM', async () => {
    // Each call is aimed where it works without the filter (the job's own
    // child, itself, a mode no privilege is needed for), so only the filter
    // answers EPERM; the numbers are the kernel's, independent of the filter's table.
    const program = `
import ctypes, errno, os, time
def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
inherited = [fd for fd in range(3, 1024) if is_open(fd)]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
numbers = {
    'x86_64': {'kcmp': 312, 'add_key': 248, 'keyctl': 250, 'perf_event_open': 298, 'userfaultfd': 323, 'bpf': 321},
    'aarch64': {'kcmp': 272, 'add_key': 217, 'keyctl': 219, 'perf_event_open': 241, 'userfaultfd': 282, 'bpf': 280},
}[os.uname().machine]
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
def attempt(name, call):
    result = call()
    print(name, 'ALLOWED' if result >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())))
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('length', ctypes.c_size_t)]
source = ctypes.create_string_buffer(b'x' * 8)
target = ctypes.create_string_buffer(8)
local, remote = iovec(ctypes.addressof(target), 8), iovec(ctypes.addressof(source), 8)
attempt('ptrace', lambda: libc.ptrace(16, child, None, None))
attempt('pidfd_getfd', lambda: libc.syscall(438, libc.syscall(434, child, 0), 0, 0))
attempt('process_vm_readv', lambda: libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
attempt('kcmp', lambda: libc.syscall(numbers['kcmp'], os.getpid(), child, 0, 0, 0))
attempt('add_key', lambda: libc.syscall(numbers['add_key'], b'user', b'ratchet', b'value', 5, -2))
attempt('keyctl', lambda: libc.syscall(numbers['keyctl'], 0, -2, 0))
attempt('userfaultfd', lambda: libc.syscall(numbers['userfaultfd'], 1))
attempt('io_uring_setup', lambda: libc.syscall(425, 1, ctypes.create_string_buffer(120)))
attempt('unshare', lambda: libc.unshare(0x10000000))
os.kill(child, 9)
print('pid 1 is', open('/proc/1/cmdline', 'rb').read().split(b'\\0')[:4])
print('inherited descriptors', inherited)
try:
    print('supervisor fds LISTED', os.listdir('/proc/1/fd'))
except OSError as error:
    print('supervisor fds', errno.errorcode[error.errno])
`;
    const result = await pooled.run(job(['python3', '-c', program]));
    const stdout = result.stdout.toString();
    expect(result.stderr.toString()).toBe('');
    for (const call of ['ptrace', 'pidfd_getfd', 'process_vm_readv', 'kcmp', 'add_key', 'keyctl', 'userfaultfd', 'io_uring_setup', 'unshare']) expect(stdout).toContain(`${call} EPERM\n`);
    // The supervisor is PID 1 and the only holder of the runner's pipes: a command inherits no other descriptor (the filter's socket included) and cannot list the supervisor's.
    expect(stdout).toContain("pid 1 is [b'python3', b'-I', b'-S', b'-c']");
    expect(stdout).toContain('inherited descriptors []');
    expect(stdout).toMatch(/supervisor fds (EACCES|EPERM)/);
  });

  it('limits memory and processes with a cgroup per job, and removes it afterwards', async () => {
    const driver = new BubblewrapDriver({ defaults: limits });
    try {
      expect(await driver.ping()).toMatch(/limits by cgroup v[12]/);
      const bomb = await driver.run(job(['python3', '-c', 'x = bytearray(400 << 20)']));
      expect(bomb.oomKilled).toBe(true);
      expect(bomb.resourceUsage?.peakMemoryBytes).toBeGreaterThan(100 << 20);
      const threads = await driver.run(job(['python3', '-c', 'import threading, time\nn = 0\ntry:\n    while True:\n        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n        n += 1\nexcept RuntimeError:\n    print("threads", n)\n']));
      expect(Number(/threads (\d+)/.exec(threads.stdout.toString())?.[1])).toBeLessThan(limits.pids);
    } finally {
      await driver.close();
    }
    expect(leftoverCgroups()).toEqual([]);
  });

  it('falls back to setrlimit without cgroups, and says so', async () => {
    const driver = new BubblewrapDriver({ defaults: limits, cgroups: false });
    try {
      expect(await driver.ping()).toContain('limits by setrlimit only');
      const bomb = await driver.run(job(['python3', '-c', 'x = bytearray(400 << 20)']));
      expect(bomb.exitCode).toBe(1);
      expect(bomb.stderr.toString()).toContain('MemoryError');
    } finally {
      await driver.close();
    }
  });

  it('says what to install or build when bwrap or the root filesystem is missing', async () => {
    await expect(new BubblewrapDriver({ rootfs: '/nonexistent/rootfs' }).ping()).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('tools/ensure-sandbox-rootfs.sh') });
    await expect(new BubblewrapDriver({ bwrap: '/nonexistent/bwrap' }).ping()).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('apt-get install bubblewrap') });
    await expect(pooled.run(job(['true'], { image: 'python:3.12' }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('use the docker driver') });
  });

  describe('host state it did not make itself', () => {
    // Each test gets state directories of its own under /run, so the other
    // sandbox suites running at the same time keep theirs.
    const made: string[] = [];
    const stateDirectory = (name: string): string => {
      const directory = `/run/ratchet-sandbox-test-${process.pid}-${name}`;
      made.push(directory);
      return directory;
    };
    afterAll(() => {
      for (const directory of made) {
        execFileSync('sh', ['-c', `umount -l '${directory}' 2>/dev/null; rm -rf '${directory}'`]);
      }
    });
    const recordingLogger = () => {
      const lines: string[] = [];
      return { lines, warn: (_fields: Record<string, unknown>, message: string) => void lines.push(message) };
    };
    const permissions = (directory: string) => {
      const found = statSync(directory);
      return { mode: found.mode & 0o7777, uid: found.uid, gid: found.gid };
    };

    it('repairs a state directory left 0700 root, logging what it changed, and runs the job', async () => {
      // What a new machine got from an older runner: mkdir(..., { mode: 0o700 }) of the shared parent.
      const directory = stateDirectory('repair');
      mkdirSync(directory);
      chmodSync(directory, 0o700);
      const logger = recordingLogger();
      const driver = new BubblewrapDriver({ defaults: limits, stateDirectory: directory, logger });
      try {
        // A runner's start repairs it.
        await driver.warm();
        expect(permissions(directory)).toEqual({ mode: 0o711, uid: 0, gid: 0 });
        expect(logger.lines).toEqual([`repaired the sandbox state directory ${directory}: mode 0700 -> 0711`]);
        // Broken again while the runner runs (another owner, too open): the next job repairs it and runs.
        chownSync(directory, 4242, 4242);
        chmodSync(directory, 0o700);
        const result = await driver.run(job(['sh', '-c', 'echo written > /work/out.txt; cat /work/out.txt; id -u']));
        expect(result.exitCode).toBe(0);
        expect(result.stdout.toString()).toBe('written\n10001\n');
        expect(permissions(directory)).toEqual({ mode: 0o711, uid: 0, gid: 0 });
        expect(logger.lines[1]).toBe(`repaired the sandbox state directory ${directory}: mode 0700 -> 0711, owner 4242:4242 -> 0:0`);
      } finally {
        await driver.close();
      }
      // Each sandbox's own tmpfs went with it.
      expect(readdirSync(directory)).toEqual([]);
    });

    it('makes a missing state directory 0711 root whatever the umask', async () => {
      const directory = stateDirectory('umask');
      const logger = recordingLogger();
      const previous = process.umask(0o077);
      const driver = new BubblewrapDriver({ defaults: limits, stateDirectory: directory, logger });
      try {
        const result = await driver.run(job(['true']));
        expect(result.exitCode).toBe(0);
      } finally {
        process.umask(previous);
        await driver.close();
      }
      expect(permissions(directory)).toEqual({ mode: 0o711, uid: 0, gid: 0 });
      expect(logger.lines).toEqual([]);
    });

    it('says what is wrong and how to fix it where it cannot repair the state directory', async () => {
      const link = stateDirectory('link');
      symlinkSync('/tmp', link);
      const linked = new BubblewrapDriver({ defaults: limits, stateDirectory: link });
      await expect(linked.ping()).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: `${link} is a symbolic link, not a directory; the sandbox runner keeps its sandboxes' file systems there and will not follow or replace it: remove it (rm ${link}) and start the runner again` });
      await expect(linked.run(job(['true']))).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('is a symbolic link') });
      await linked.close();

      // A read-only file system: chmod fails with EROFS.
      const readOnly = stateDirectory('read-only');
      mkdirSync(readOnly);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,mode=0700,size=1m', 'ratchet-test', readOnly]);
      const driver = new BubblewrapDriver({ defaults: limits, stateDirectory: readOnly });
      const expected = `the sandbox directory ${readOnly} is mode 0700, owner 0:0, and the runner cannot change it (EROFS); it needs mode 0711, owner 0:0: as root, chown 0:0 ${readOnly} && chmod 0711 ${readOnly}`;
      await expect(driver.ping()).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expected });
      await expect(driver.run(job(['true']))).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expected });
      await driver.close();
    });

    it('names the directory that keeps the sandbox user from the root filesystem, instead of bwrap\'s EACCES', async () => {
      const parent = stateDirectory('closed-parent');
      mkdirSync(parent);
      chmodSync(parent, 0o700);
      const rootfs = path.join(parent, 'rootfs');
      symlinkSync(defaultRootfs(), rootfs);
      const driver = new BubblewrapDriver({ defaults: limits, rootfs, stateDirectory: stateDirectory('closed-parent-state') });
      const expected = `bubblewrap runs sandboxes as host uid 10001, which cannot enter ${parent} (mode 0700, owner 0:0) on the way to the sandbox root filesystem ${rootfs}; let it through (chmod o+x ${parent}) or move the root filesystem (sandbox.rootfs) to a directory everyone may enter, such as /var/lib/ratchet/sandbox-rootfs`;
      await expect(driver.ping()).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expected });
      await expect(driver.run(job(['true']))).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expected });
      await driver.close();
    });
  });

  it('kills the job and ends it CANCELLED when the caller aborts', async () => {
    const controller = new AbortController();
    const running = pooled.run(job(['sleep', '30']), controller.signal);
    setTimeout(() => controller.abort(), 300);
    await expect(running).rejects.toMatchObject({ code: ErrorCode.CANCELLED });
  });
});
