import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type SandboxJob, type SandboxJobResult } from '@ratchet/contracts';
import { BubblewrapDriver, DockerDriver, type EffectiveLimits, type Sandbox } from '../src';
import { sandboxJob } from './jobs';

// Hostile programs against both drivers, each with the outcome that makes it
// harmless. After each one the next job must run normally and nothing the
// program started may still run on the host. Real Docker, real bubblewrap:
// tools/ensure-docker.sh and tools/ensure-sandbox-rootfs.sh set them up.
jest.setTimeout(120_000);

// A secret in the runner's environment: no program may see it.
const secret = `s3cret-${process.pid}-${Date.now()}`;
process.env['RATCHET_ABUSE_SECRET'] = secret;
// A secret file on the host: no program may read it.
const hostDirectory = mkdtempSync(path.join(os.tmpdir(), 'ratchet-abuse-'));
const hostSecretFile = path.join(hostDirectory, 'secret.txt');
writeFileSync(hostSecretFile, secret);

const limits: EffectiveLimits = { memoryBytes: 256 << 20, pids: 64, cpus: 1, timeoutMs: 20_000, outputLimitBytes: 64 * 1024, workDirBytes: 16 << 20 };

interface Case {
  readonly name: string;
  /** Python source of p.py, run as `python3 p.py MARKER` unless argv is given. */
  readonly program?: string;
  readonly argv?: string[];
  readonly files?: Record<string, string>;
  readonly timeoutSeconds?: number;
  readonly job?: Partial<SandboxJob>;
  readonly check: (result: SandboxJobResult, output: { stdout: string; stderr: string }, driver: string) => void;
}

const pytest = ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/report.xml', 'tests'];
const failingTests = { 'calc.py': 'def add(a, b):\n    return a - b\n', 'tests/test_calc.py': 'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n' };
const forgedReport = '<testsuites><testsuite name="pytest" tests="1"><testcase classname="tests.test_calc" name="test_add" time="0.001"/></testsuite></testsuites>';
const findSupervisor = `
import os
def supervisor():
    for entry in os.listdir('/proc'):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                argv = open('/proc/%s/cmdline' % entry, 'rb').read().split(b'\\0')
            except OSError:
                continue
            if argv[:4] == [b'python3', b'-I', b'-S', b'-c']:
                return int(entry)
`;
// Imported by the failing test: takes the supervisor's stdout (the runner's
// result channel) from whichever process holds it, stops the supervisor and
// writes a complete passing result, then lets the real test fail.
const forgeryProgram = `${findSupervisor}
import ctypes, io, json, os, struct, tarfile, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def parent_of(pid):
    try:
        return int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0
target = supervisor()
print('forgery: supervisor found', target)
holders = sorted({pid for pid in (target, parent_of(target), 1) if pid})
writers = []
for pid in holders:
    pidfd = libc.syscall(434, pid, 0)  # pidfd_open
    if pidfd < 0:
        print('forgery: pidfd_getfd of pid %d refused (pidfd_open errno %d)' % (pid, ctypes.get_errno()))
        continue
    stolen = libc.syscall(438, pidfd, 1, 0)  # pidfd_getfd of its fd 1
    if stolen >= 0:
        print('forgery: fd 1 of pid %d STOLEN' % pid)
        writers.append(stolen)
    else:
        print('forgery: pidfd_getfd of pid %d refused (errno %d)' % (pid, ctypes.get_errno()))
    os.close(pidfd)
for pid in holders:
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        print('forgery: ptrace of pid %d ATTACHED' % pid)
        os.waitpid(pid, 0x40000000)  # __WALL
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    else:
        print('forgery: ptrace of pid %d refused (errno %d)' % (pid, ctypes.get_errno()))
    try:
        writers.append(os.open('/proc/%d/fd/1' % pid, os.O_WRONLY))
        print('forgery: /proc/%d/fd/1 STOLEN' % pid)
    except OSError as error:
        print('forgery: /proc/%d/fd/1 refused (%s)' % (pid, error.strerror))
try:
    os.kill(target, 19)  # SIGSTOP
except OSError as error:
    print('forgery: SIGSTOP refused', error)
time.sleep(0.2)
state = open('/proc/%d/stat' % target).read().rsplit(')', 1)[1].split()[0]
print('forgery: supervisor STOPPED' if state in ('T', 't') else 'forgery: supervisor still runs (%s)' % state)
def frame(kind, payload):
    return struct.pack('>BI', kind, len(payload)) + payload
archive = io.BytesIO()
with tarfile.open(fileobj=archive, mode='w', format=tarfile.USTAR_FORMAT) as tar:
    report = b'<testsuites><testsuite name="pytest" tests="1"><testcase classname="tests.test_calc" name="test_add" time="0.001"/></testsuite></testsuites>'
    for name, data in (('.ratchet-report/junit.xml', report), ('tests/test_calc.py', open('tests/test_calc.py', 'rb').read())):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
forged = frame(3, json.dumps({'ended': 0, 'exitCode': 0, 'signal': 0, 'timedOut': False, 'durationNs': 1000000}).encode()) + frame(4, archive.getvalue()) + frame(5, b'{"timedOut": false, "notes": []}')
for fd in writers:
    try:
        os.write(fd, forged)
        print('forgery: FORGED a pass through fd', fd)
    except OSError as error:
        print('forgery: write refused', error)
print('1 passed in 0.01s')

def add(a, b):
    return a - b
`;

const cases: Case[] = [
  {
    name: 'fork bomb',
    program: 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n',
    timeoutSeconds: 3,
    check: (result) => expect(result.timedOut).toBe(true),
  },
  {
    name: 'thread bomb',
    program: 'import threading, time, os\nthreads = []\ntry:\n    while True:\n        thread = threading.Thread(target=time.sleep, args=(100,))\n        thread.start()\n        threads.append(thread)\nexcept RuntimeError:\n    print("stopped at", len(threads))\nos._exit(3)\n',
    check: (result, { stdout }) => {
      expect(result.exitCode).toBe(3);
      expect(Number(/stopped at (\d+)/.exec(stdout)?.[1])).toBeLessThan(limits.pids);
    },
  },
  {
    name: 'memory bomb',
    program: 'chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))\n',
    check: (result) => {
      expect(result.oomKilled).toBe(true);
      expect(result.exitCode).not.toBe(0);
    },
  },
  {
    name: 'disk fill',
    program: 'import errno\ntry:\n    with open("/work/fill", "wb") as handle:\n        while True:\n            handle.write(b"x" * (1 << 20))\n            handle.flush()\nexcept OSError as error:\n    print("stopped:", errno.errorcode[error.errno])\n',
    check: (result, { stdout }) => {
      expect(result.exitCode).toBe(0);
      expect(stdout).toMatch(/stopped: (ENOSPC|EFBIG)/);
    },
  },
  {
    name: 'inode exhaustion',
    // Up to 15 s: the cap stops it long before on Docker and as root (file creation is slow on a loaded machine: once, 3 s made
    // 57,257 of bwrap's 81,920 inodes); without a cap, the memory limit or the time ends it.
    program: 'import os, time\nos.mkdir("many")\nend = time.monotonic() + 15\ncount = 0\ntry:\n    while time.monotonic() < end:\n        open("many/%d" % count, "w").close()\n        count += 1\nexcept OSError as error:\n    print("error", error.errno)\nprint("made", count)\n',
    check: (result, { stdout }, driver) => {
      // Docker's tmpfs has an inode cap, and so has bubblewrap's when the
      // runner is root (a tmpfs of its own per sandbox): ENOSPC, errno 28.
      // Without root, bwrap's tmpfs has none: the inodes' kernel memory fills
      // the job's memory limit, or time runs out first; either way a result.
      if (driver === 'docker' || process.getuid?.() === 0) expect(stdout).toMatch(/error 28\nmade \d+/);
      else if (result.oomKilled) expect(result.testReport?.parsed).toBe(false);
      else expect(stdout).toMatch(/made \d+/);
    },
  },
  {
    name: 'infinite loop',
    program: 'while True:\n    pass\n',
    timeoutSeconds: 2,
    check: (result) => {
      expect(result.timedOut).toBe(true);
      expect(result.commandResults[0]?.timedOut).toBe(true);
      expect(result.exitCode).toBe(-1);
    },
  },
  {
    name: 'sleep forever',
    program: 'import time\ntime.sleep(10 ** 6)\n',
    timeoutSeconds: 2,
    check: (result) => expect(result.timedOut).toBe(true),
  },
  {
    name: 'blocking on stdin',
    program: 'import sys\ndata = sys.stdin.read()\nprint("eof after", len(data))\n',
    check: (result, { stdout }) => {
      expect(result.timedOut).toBe(false);
      expect(stdout).toContain('eof after 0');
    },
  },
  {
    name: 'a daemon that double-forks to outlive the job',
    program: 'import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(300)\n    os._exit(0)\nos.wait()\nprint("parent done")\n',
    check: (result, { stdout }) => {
      expect(result.exitCode).toBe(0);
      expect(result.timedOut).toBe(false);
      expect(stdout).toContain('parent done');
    },
  },
  {
    name: 'zombie flood',
    program: 'import os, time\nfor _ in range(50):\n    if os.fork() == 0:\n        os._exit(0)\ntime.sleep(0.3)\nprint("zombies made")\n',
    check: (result, { stdout }) => {
      expect(result.exitCode).toBe(0);
      expect(stdout).toContain('zombies made');
    },
  },
  {
    name: '`yes` to stdout',
    argv: ['yes'],
    timeoutSeconds: 2,
    check: (result) => {
      expect(result.timedOut).toBe(true);
      expect(result.stdoutTruncated).toBe(true);
      expect(result.stdout.length).toBeLessThanOrEqual(limits.outputLimitBytes);
    },
  },
  {
    name: 'a 100 MB single line',
    program: 'import sys\nsys.stdout.write("x" * (100 << 20))\n',
    check: (result) => {
      expect(result.exitCode).toBe(0);
      expect(result.stdoutTruncated).toBe(true);
      expect(result.stdout.length).toBe(limits.outputLimitBytes);
    },
  },
  {
    name: 'invalid UTF-8 and terminal escape sequences',
    program: 'import sys\nsys.stdout.buffer.write(b"\\xff\\xfe bad \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\x1b[0m \\xc2\\x9b31m done\\r\\n over\\rwritten\\x08\\n")\nsys.stderr.buffer.write(b"\\x1b]52;c;Y2xpcGJvYXJk\\x07clip\\n")\n',
    check: (result, { stdout }) => {
      for (const stream of [result.stdout, result.stderr]) {
        expect(stream.includes(0x1b)).toBe(false);
        expect(stream.includes(0x07)).toBe(false);
        expect(stream.includes(0x08)).toBe(false);
        expect(stream.includes(Buffer.from([0xc2, 0x9b]))).toBe(false);
      }
      expect(stdout).toContain('red');
      expect(stdout).toContain('done');
      expect(stdout).not.toContain('pwned');
      expect(result.stdout.includes(Buffer.from([0xff, 0xfe]))).toBe(true);
      expect(result.stderr.toString()).toContain('clip');
    },
  },
  {
    name: 'TCP egress',
    program: 'import socket\nfor host, port in [("1.1.1.1", 80), ("8.8.8.8", 443), ("172.17.0.1", 2375), ("127.0.0.1", 4222), ("10.0.0.1", 22)]:\n    sock = socket.socket()\n    sock.settimeout(2)\n    try:\n        sock.connect((host, port))\n        print("CONNECTED", host)\n    except OSError as error:\n        print("blocked", host, error)\n',
    check: (_result, { stdout }) => {
      expect(stdout).not.toContain('CONNECTED');
      expect(stdout.match(/blocked/g)).toHaveLength(5);
    },
  },
  {
    name: 'UDP egress',
    program: 'import socket\nsock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ntry:\n    sock.sendto(b"x", ("8.8.8.8", 53))\n    print("SENT")\nexcept OSError as error:\n    print("blocked", error)\n',
    check: (_result, { stdout }) => {
      expect(stdout).not.toContain('SENT');
      expect(stdout).toContain('blocked');
    },
  },
  {
    name: 'DNS lookup',
    program: 'import socket\ntry:\n    print("RESOLVED", socket.getaddrinfo("example.com", 80))\nexcept OSError as error:\n    print("blocked", error)\n',
    check: (_result, { stdout }) => {
      expect(stdout).not.toContain('RESOLVED');
      expect(stdout).toContain('blocked');
    },
  },
  {
    name: 'the cloud metadata address',
    program: 'import socket\nsock = socket.socket()\nsock.settimeout(2)\ntry:\n    sock.connect(("169.254.169.254", 80))\n    print("CONNECTED")\nexcept OSError as error:\n    print("blocked", error)\n',
    check: (_result, { stdout }) => {
      expect(stdout).not.toContain('CONNECTED');
      expect(stdout).toContain('blocked');
    },
  },
  {
    name: 'reading host files',
    program: `import os\nfor path in [${JSON.stringify(hostSecretFile)}, "/var/run/docker.sock", "/run/docker.sock", "/root/.bash_history", "/etc/shadow", "/proc/1/root/etc/shadow", "/sys/fs/cgroup"]:\n    try:\n        if os.path.isdir(path):\n            print("LISTED", path, os.listdir(path))\n        else:\n            print("READ", path, open(path, "rb").read(200))\n    except OSError as error:\n        print("denied", path, error.strerror)\n`,
    check: (_result, { stdout }) => {
      expect(stdout).not.toContain(secret);
      expect(stdout).toContain(`denied ${hostSecretFile}`);
      expect(stdout).not.toMatch(/READ \/(var\/)?run\/docker\.sock/);
      expect(stdout).toContain('denied /etc/shadow');
    },
  },
  {
    name: "the runner's environment and other processes' secrets",
    program: 'import os\nprint(dict(os.environ))\nfor entry in os.listdir("/proc"):\n    if entry.isdigit():\n        for name in ("environ", "cmdline"):\n            try:\n                print(entry, name, open("/proc/%s/%s" % (entry, name), "rb").read())\n            except OSError as error:\n                print(entry, name, "denied")\n',
    check: (_result, { stdout }) => {
      expect(stdout).not.toContain(secret);
      expect(stdout).not.toContain('RATCHET_ABUSE_SECRET');
    },
  },
  {
    name: 'writes to the root filesystem',
    program: 'for path in ["/usr/bin/evil", "/etc/passwd", "/evil", "/bin/sh"]:\n    try:\n        open(path, "a").write("x")\n        print("WROTE", path)\n    except OSError as error:\n        print("denied", path, error.strerror)\n',
    check: (_result, { stdout }) => {
      expect(stdout).not.toContain('WROTE');
      expect(stdout.match(/^denied/gm)).toHaveLength(4);
    },
  },
  {
    name: 'executing a dropped binary',
    program: 'import shutil, os, subprocess\nshutil.copy("/bin/cat", "/work/mycat")\nos.chmod("/work/mycat", 0o755)\nprint(subprocess.run(["/work/mycat", "/proc/self/status"], capture_output=True, text=True).stdout)\n',
    check: (_result, { stdout }) => {
      // It may run, but as the sandbox user with no capabilities and no way to gain any.
      expect(stdout).toMatch(/Uid:\s+10001\s/);
      expect(stdout).toMatch(/CapEff:\s+0000000000000000/);
      expect(stdout).toMatch(/CapPrm:\s+0000000000000000/);
      expect(stdout).toMatch(/NoNewPrivs:\s+1/);
    },
  },
  {
    name: 'mount, chroot, unshare and nsenter',
    program:
      'import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\ndef attempt(name, call):\n    result = call()\n    print(name, "SUCCEEDED" if result == 0 else "refused %d" % ctypes.get_errno())\nattempt("unshare-user", lambda: libc.unshare(0x10000000))\nattempt("unshare-mount", lambda: libc.unshare(0x00020000))\nattempt("unshare-net", lambda: libc.unshare(0x40000000))\nattempt("mount", lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))\nattempt("remount-root", lambda: libc.mount(b"none", b"/", None, 0x20 | 0x1000, None))\ndef chroot():\n    try:\n        os.chroot("/tmp")\n        return 0\n    except OSError as error:\n        ctypes.set_errno(error.errno)\n        return -1\nattempt("chroot", chroot)\ndef setns():\n    try:\n        fd = os.open("/proc/1/ns/mnt", os.O_RDONLY)\n    except OSError as error:\n        ctypes.set_errno(error.errno)\n        return -1\n    return libc.setns(fd, 0)\nattempt("setns", setns)\n',
    check: (_result, { stdout }) => {
      expect(stdout).not.toContain('SUCCEEDED');
      expect(stdout.match(/refused/g)).toHaveLength(7);
    },
  },
  {
    name: 'setuid tricks',
    program:
      'import os, shutil, subprocess\ntry:\n    os.setuid(0)\n    print("SETUID WORKED")\nexcept OSError as error:\n    print("setuid refused", error.strerror)\nshutil.copy("/usr/bin/id", "/work/myid")\ntry:\n    os.chmod("/work/myid", 0o4755)\nexcept OSError:\n    pass\nprint("id -u:", subprocess.run(["/work/myid", "-u"], capture_output=True, text=True).stdout.strip())\nfor path in ["/usr/bin/su", "/bin/su", "/usr/bin/passwd", "/bin/mount"]:\n    if os.path.exists(path):\n        done = subprocess.run([path, "--help"], capture_output=True, text=True)\n        print(path, "uid stays", os.getuid())\n',
    check: (_result, { stdout }) => {
      expect(stdout).toContain('setuid refused');
      expect(stdout).toContain('id -u: 10001');
      expect(stdout).not.toContain('SETUID WORKED');
    },
  },
  {
    name: 'a symlink planted as the test report',
    program: 'import os\nos.symlink("/etc/passwd", "/tmp/report.xml")\n',
    job: { testReportPath: '/tmp/report.xml' },
    check: (result) => {
      expect(result.testReport?.parsed).toBe(false);
      expect(result.rejectedOutputs.join('\n')).toMatch(/symlink/);
    },
  },
  {
    name: 'a hardlink planted as the test report',
    program: `open("/tmp/forged.xml", "w").write(${JSON.stringify(forgedReport)})\nimport os\nos.link("/tmp/forged.xml", "/tmp/report.xml")\n`,
    job: { testReportPath: '/tmp/report.xml' },
    check: (result) => {
      expect(result.testReport?.parsed).toBe(false);
      expect(result.rejectedOutputs.join('\n')).toMatch(/hardlink/);
    },
  },
  {
    name: 'tar-slip names, links and odd files in the output',
    program:
      'import os\nos.makedirs("tests/" + "d" * 120, exist_ok=True)\nos.symlink("/etc/passwd", "tests/conftest.py")\nopen("tests/" + "d" * 120 + "/conftest.py", "w").write("x = 1\\n")\nopen("..\\\\..\\\\evil", "w").write("x")\nopen("new\\nline", "w").write("x")\nos.mkfifo("pyproject.toml")\n',
    files: { 'tests/test_calc.py': 'def test_ok():\n    assert True\n' },
    job: { protectedPaths: ['tests/test_calc.py'] },
    check: (result) => {
      expect(result.tamperedPaths).toEqual(expect.arrayContaining([expect.stringMatching(/^tests\/conftest\.py \(a symlink/), expect.stringMatching(/^tests\/d{120}\/conftest\.py \(created by the run\)/), expect.stringMatching(/^pyproject\.toml/)]));
      expect(result.rejectedOutputs.join('\n')).toMatch(/tests\/conftest\.py: a symlink/);
    },
  },
  {
    name: 'code that edits its own tests',
    files: { ...failingTests, 'calc.py': 'open("tests/test_calc.py", "w").write("def test_add():\\n    assert True\\n")\n\ndef add(a, b):\n    return a - b\n' },
    argv: pytest,
    job: { testReportPath: '/tmp/report.xml', protectedPaths: ['tests/test_calc.py'] },
    check: (result) => {
      expect(result.tamperedPaths).toEqual(['tests/test_calc.py (changed)']);
      expect(result.testReport?.parsed).toBe(false);
      expect(result.testReport?.parseError).toContain('changed its tests');
    },
  },
  {
    name: 'a conftest.py written before the tests run, turning failures into passes',
    files: failingTests,
    job: {
      testReportPath: '/tmp/report.xml',
      protectedPaths: ['tests/test_calc.py'],
      commands: [
        { name: 'setup', argv: ['python3', '-c', 'open("conftest.py", "w").write("import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n    outcome = yield\\n    outcome.get_result().outcome = \\"passed\\"\\n")'], workingDirectory: '', timeout: undefined },
        { name: 'tests', argv: pytest, workingDirectory: '', timeout: undefined },
      ],
    },
    check: (result) => {
      expect(result.tamperedPaths).toEqual(['conftest.py (created by the run)']);
      expect(result.testReport?.parsed).toBe(false);
    },
  },
  {
    name: 'os._exit(0) to fake success',
    files: { ...failingTests, 'calc.py': 'import os\nos._exit(0)\n' },
    argv: pytest,
    job: { testReportPath: '/tmp/report.xml', protectedPaths: ['tests/test_calc.py'] },
    check: (result) => {
      expect(result.exitCode).toBe(0);
      expect(result.testReport?.parsed).toBe(false);
      expect(result.testReport?.total).toBe(0);
    },
  },
  {
    name: "ptrace and /proc of the supervisor, to forge its frames",
    program: `${findSupervisor}
import ctypes
pid = supervisor()
print("supervisor found", pid is not None)
libc = ctypes.CDLL(None, use_errno=True)
print("ptrace", "ATTACHED" if libc.ptrace(16, pid, None, None) == 0 else "refused")
for name in ("fd/1", "mem", "environ"):
    try:
        open("/proc/%d/%s" % (pid, name), "r+b").write(b"\\x05\\x00\\x00\\x00\\x02{}")
        print(name, "WRITTEN")
    except OSError as error:
        print(name, "refused", error.strerror)
`,
    check: (result, { stdout }) => {
      expect(stdout).toContain('supervisor found True');
      expect(stdout).not.toContain('ATTACHED');
      expect(stdout).not.toContain('WRITTEN');
      expect(stdout.match(/refused/g)).toHaveLength(4);
      expect(result.exitCode).toBe(0);
    },
  },
  {
    name: 'killing the supervisor',
    program: `${findSupervisor}\nimport os\ntry:\n    os.kill(supervisor(), 9)\nexcept OSError as error:\n    print("kill refused", error)\nimport time\ntime.sleep(0.5)\nprint("supervisor survived")\n`,
    files: failingTests,
    job: { testReportPath: '/tmp/report.xml' },
    check: (result, { stdout }) => {
      // On both drivers the supervisor is its sandbox's PID 1 and ignores the signal.
      expect(result.testReport?.parsed).toBe(false);
      expect(stdout).toContain('supervisor survived');
      expect(result.exitCode).toBe(0);
    },
  },
  {
    // Found under bubblewrap: the code took the runner's pipe from the
    // sandbox's PID 1 (bwrap's own init) with pidfd_getfd, stopped the
    // supervisor and wrote a whole passing result itself.
    name: "stealing the supervisor's result channel to forge a pass for a failing test",
    files: { ...failingTests, 'calc.py': forgeryProgram },
    // -s: what the program says about its attempts reaches the result's stdout.
    argv: [...pytest.slice(0, 3), '-s', ...pytest.slice(3)],
    job: { testReportPath: '/tmp/report.xml', protectedPaths: ['tests/test_calc.py'] },
    check: (result, { stdout }) => {
      // The real outcome: pytest's own failure, never a pass.
      expect({ exitCode: result.exitCode, passed: result.testReport?.passed, failed: result.testReport?.failed, parsed: result.testReport?.parsed }).toEqual({ exitCode: 1, passed: 0, failed: 1, parsed: true });
      expect(result.tamperedPaths).toEqual([]);
      // What the code tried, each refused: it ran, and never held the channel.
      expect(stdout).toContain('forgery: supervisor found');
      expect(stdout).toMatch(/forgery: pidfd_getfd of pid \d+ refused/);
      expect(stdout).toMatch(/forgery: ptrace of pid \d+ refused/);
      expect(stdout).toMatch(/forgery: \/proc\/\d+\/fd\/1 refused/);
      expect(stdout).not.toMatch(/STOLEN|ATTACHED|FORGED|STOPPED/);
    },
  },
  {
    name: 'stopping the supervisor',
    program: `${findSupervisor}\nimport os, time\nos.kill(supervisor(), 19)\ntime.sleep(600)\n`,
    timeoutSeconds: 1,
    check: (result) => {
      expect(result.timedOut).toBe(true);
      expect(result.exitCode).toBe(-1);
    },
  },
];

const drivers: [string, () => Sandbox][] = [
  ['docker', () => new DockerDriver({ defaults: limits, warmPool: 1, runnerId: `abuse-${process.pid}` })],
  ['bwrap', () => new BubblewrapDriver({ defaults: limits, warmPool: 1, runnerId: `abuse-${process.pid}` })],
];

afterAll(() => rmSync(hostDirectory, { recursive: true, force: true }));

describe.each(drivers)('abuse suite on the %s driver', (driverName, makeDriver) => {
  const driver = makeDriver();
  let counter = 0;

  beforeAll(async () => {
    await driver.ping().catch((error: unknown) => {
      throw new Error(`the ${driverName} driver cannot run here (${(error as Error).message}); run tools/ensure-docker.sh and tools/ensure-sandbox-rootfs.sh`);
    });
    await driver.warm();
  });
  afterAll(() => driver.close());

  function job(testCase: Case, marker: string): SandboxJob {
    counter += 1;
    const files = { ...(testCase.program === undefined ? {} : { 'p.py': testCase.program }), ...testCase.files };
    return sandboxJob(`abuse-${driverName}-${process.pid}-${counter}`, testCase.argv ?? ['python3', 'p.py', marker], files, {
      taskId: 'abuse',
      limits: { ...toLimits(limits), ...(testCase.timeoutSeconds === undefined ? {} : { timeout: { seconds: testCase.timeoutSeconds, nanos: 0 } }) },
      ...testCase.job,
    });
  }

  it.each(cases.map((testCase) => [testCase.name, testCase] as const))('%s', async (_name, testCase) => {
    const marker = `abuse-marker-${process.pid}-${counter + 1}`;
    const result = await driver.run(job(testCase, marker));
    testCase.check(result, { stdout: result.stdout.toString('utf8'), stderr: result.stderr.toString('utf8') }, driverName);
    // Nothing it started runs on after the job (Docker removes its container a moment after the result).
    await waitFor(() => !hostProcesses().some((line) => line.includes(marker)), `a process of "${testCase.name}" outlived its job`);
    // The next job runs normally.
    const next = await driver.run(job({ name: 'next', argv: ['python3', '-c', 'print("still fine")'], check: () => undefined }, marker));
    expect(next.exitCode).toBe(0);
    expect(next.stdout.toString()).toContain('still fine');
    expect(readFileSync(hostSecretFile, 'utf8')).toBe(secret);
  });
});

function toLimits(value: EffectiveLimits) {
  return { memoryBytes: value.memoryBytes, pids: value.pids, cpus: value.cpus, timeout: { seconds: value.timeoutMs / 1000, nanos: 0 }, outputLimitBytes: value.outputLimitBytes, workDirBytes: value.workDirBytes };
}

function hostProcesses(): string[] {
  return execFileSync('ps', ['-eo', 'args'], { maxBuffer: 64 << 20 }).toString().split('\n');
}

async function waitFor(condition: () => boolean, message: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(message);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
