# Ratchet's sandbox supervisor. It runs inside the sandbox (a Docker container
# or a bubblewrap namespace) as the sandbox user, started by the runner as
# `python3 -I -S -c <this file> [--idle-seconds N]`, and runs one job:
#
#   stdin  <- u32 length + JSON spec, u32 length + tar of the job's files
#   stdout -> frames: u8 type + u32 length + payload (types below)
#
# The code under test never writes to stdout itself: its output goes through
# pipes this process reads, caps and frames, so it cannot forge a frame. This
# process is made non-dumpable, so the code (same uid) can neither ptrace it
# nor open its /proc/<pid>/fd. The code can kill or stop it; the runner then
# sees no DONE frame and reports the job as failed, never as passed.
# Only the standard library: it must run in any image that has python3.
import json
import os
import resource
import select
import signal
import stat
import struct
import subprocess
import sys
import tarfile
import time
from io import BytesIO

FRAME_STDOUT = 1
FRAME_STDERR = 2
FRAME_EVENT = 3
FRAME_TAR = 4
FRAME_DONE = 5
CHUNK = 65536


def make_undumpable():
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception:  # no ctypes in a minimal image: ptrace is still limited by the runtime
        pass


def send(kind, payload):
    header = struct.pack(">BI", kind, len(payload))
    data = memoryview(header + payload)
    while data:
        written = os.write(1, data)
        data = data[written:]


def event(**fields):
    send(FRAME_EVENT, json.dumps(fields).encode())


def read_exactly(count):
    parts = []
    while count > 0:
        chunk = os.read(0, min(count, 1 << 20))
        if not chunk:
            raise EOFError("the runner closed stdin before the whole job arrived")
        parts.append(chunk)
        count -= len(chunk)
    return b"".join(parts)


def read_block():
    (length,) = struct.unpack(">I", read_exactly(4))
    return read_exactly(length)


def oom_kills():
    """The OOM-kill counter of this sandbox's memory cgroup (v2 or v1), or None."""
    for path, key in (("/sys/fs/cgroup/memory.events", "oom_kill"), ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill")):
        try:
            with open(path) as handle:
                for line in handle:
                    name, _, value = line.partition(" ")
                    if name == key:
                        return int(value)
        except OSError:
            continue
    return None


def peak_memory():
    for path in ("/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes"):
        try:
            with open(path) as handle:
                return int(handle.read().strip())
        except (OSError, ValueError):
            continue
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def others():
    """Pids of live processes in this pid namespace other than init and this one."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (1, me):
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            found.append(int(entry))
    return found


def kill_everything_else(grace=2.0):
    """SIGKILLs every process the sandbox user owns except this one and init, until none is left."""
    end = time.monotonic() + grace
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        # Reap our own children so they do not count as live.
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not others() or time.monotonic() > end:
            return
        time.sleep(0.005)


class Output:
    def __init__(self, kind, limit):
        self.kind = kind
        self.room = limit
        self.truncated = False

    def write(self, data):
        if self.room <= 0:
            self.truncated = self.truncated or bool(data)
            return
        kept = data[: self.room]
        if len(kept) < len(data):
            self.truncated = True
        self.room -= len(kept)
        send(self.kind, kept)


def limiter(rlimits):
    def apply():
        for name, value in rlimits.items():
            if value is not None:
                number = getattr(resource, "RLIMIT_" + name.upper())
                resource.setrlimit(number, (value, value))
        try:
            # The code under test, not this process, is what the OOM killer should pick.
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")
        except OSError:
            pass

    return apply


def run_command(index, command, spec, outputs, deadline):
    budget = deadline - time.monotonic()
    if command.get("timeoutMs"):
        budget = min(budget, command["timeoutMs"] / 1000.0)
    if budget <= 0:
        event(ended=index, exitCode=-1, signal=0, timedOut=True, durationNs=0)
        return -1, True
    cwd = os.path.join(spec["workDir"], command.get("cwd") or "")
    started = time.monotonic_ns()
    try:
        process = subprocess.Popen(
            command["argv"],
            cwd=cwd,
            env=spec["env"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=limiter(spec.get("rlimits", {})),
            close_fds=True,
        )
    except OSError as error:
        outputs[1].write(("ratchet sandbox: cannot run %s: %s\n" % (command["argv"][0], error.strerror)).encode())
        event(started=index, monotonicNs=started)
        event(ended=index, exitCode=127, signal=0, timedOut=False, durationNs=time.monotonic_ns() - started)
        return 127, False
    event(started=index, monotonicNs=started, pid=process.pid)
    command_deadline = time.monotonic() + budget
    streams = {process.stdout.fileno(): outputs[0], process.stderr.fileno(): outputs[1]}
    exited_at = None
    timed_out = False
    while streams:
        now = time.monotonic()
        if now >= command_deadline:
            timed_out = True
            break
        if exited_at is None and process.poll() is not None:
            exited_at = now
        # Pipes still open after the command exited belong to processes it left
        # behind; take what they already wrote, then stop listening.
        if exited_at is not None and now - exited_at > 0.05:
            break
        ready, _, _ = select.select(list(streams), [], [], min(0.1, command_deadline - now))
        for fd in ready:
            data = os.read(fd, CHUNK)
            if data:
                streams[fd].write(data)
            else:
                del streams[fd]
    if timed_out:
        kill_everything_else()
    code = process.wait()
    ended = time.monotonic_ns()
    process.stdout.close()
    process.stderr.close()
    # Background processes a command started do not outlive it.
    kill_everything_else()
    signal_number = -code if code < 0 else 0
    exit_code = 128 + signal_number if signal_number else code
    if timed_out:
        exit_code = -1
    event(ended=index, exitCode=exit_code, signal=signal_number, timedOut=timed_out, durationNs=ended - started)
    return exit_code, timed_out


def collect(spec):
    """A tar of the requested files: regular files as they are, anything else as what it is (the runner refuses those)."""
    root = spec["workDir"]
    # [path in the sandbox (absolute, or relative to the work directory), name in the archive]
    wanted = [tuple(pair) for pair in spec.get("collect", [])]
    names = set(spec.get("collectNames", []))
    notes = []
    seen = 0
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        for name in sorted(files + subdirectories):
            seen += 1
            if name in names:
                relative = os.path.relpath(os.path.join(directory, name), root)
                wanted.append((relative, relative))
        if seen > spec.get("maxWalkEntries", 20000):
            notes.append("the work directory has more than %d entries; only the first were searched" % spec.get("maxWalkEntries", 20000))
            break
    buffer = BytesIO()
    archive = tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT)
    budget = spec.get("maxCollectBytes", 8 << 20)
    count = 0
    inodes = {}
    for source, relative in dict.fromkeys(wanted):
        path = os.path.join(root, source)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        count += 1
        if count > spec.get("maxCollectFiles", 2000):
            notes.append("more than %d files to collect; the rest were left" % spec.get("maxCollectFiles", 2000))
            break
        entry = tarfile.TarInfo(relative)
        entry.mode = info.st_mode & 0o7777
        entry.mtime = int(info.st_mtime)
        if stat.S_ISLNK(info.st_mode):
            entry.type = tarfile.SYMTYPE
            entry.linkname = os.readlink(path)
            archive.addfile(entry)
        elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            entry.type = tarfile.LNKTYPE
            entry.linkname = inodes.get(info.st_ino, "(a file with %d links)" % info.st_nlink)
            inodes.setdefault(info.st_ino, relative)
            archive.addfile(entry)
        elif stat.S_ISREG(info.st_mode):
            if info.st_size > budget:
                notes.append("%s is %d bytes, over what is left of the collection cap" % (relative, info.st_size))
                continue
            try:
                descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            with os.fdopen(descriptor, "rb") as handle:
                content = handle.read(budget + 1)
            if len(content) > budget:
                notes.append("%s grew past the collection cap" % relative)
                continue
            budget -= len(content)
            entry.size = len(content)
            archive.addfile(entry, BytesIO(content))
        else:
            entry.type = tarfile.DIRTYPE if stat.S_ISDIR(info.st_mode) else tarfile.FIFOTYPE
            archive.addfile(entry)
    archive.close()
    data = buffer.getvalue()
    for offset in range(0, len(data), CHUNK):
        send(FRAME_TAR, data[offset : offset + CHUNK])
    return notes


def main():
    make_undumpable()
    idle = None
    if "--idle-seconds" in sys.argv:
        idle = float(sys.argv[sys.argv.index("--idle-seconds") + 1])
    event(ready=True, pid=os.getpid())
    if idle is not None:
        readable, _, _ = select.select([0], [], [], idle)
        if not readable:
            return  # nobody came: the container ends and is removed
    spec = json.loads(read_block())
    files = read_block()
    begun = time.monotonic()
    deadline = begun + spec["timeoutMs"] / 1000.0
    with tarfile.open(fileobj=BytesIO(files), mode="r") as archive:
        archive.extractall(spec["workDir"])
    outputs = (Output(FRAME_STDOUT, spec["outputLimit"]), Output(FRAME_STDERR, spec["outputLimit"]))
    ooms_before = oom_kills()
    timed_out = False
    killed_by_signal = False
    for index, command in enumerate(spec["commands"]):
        exit_code, command_timed_out = run_command(index, command, spec, outputs, deadline)
        timed_out = timed_out or command_timed_out
        killed_by_signal = exit_code == 137
        if command_timed_out or exit_code != 0:
            break
    ooms_after = oom_kills()
    oom = ooms_before is not None and ooms_after is not None and ooms_after > ooms_before
    notes = collect(spec)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    send(
        FRAME_DONE,
        json.dumps(
            {
                "timedOut": timed_out,
                "oomKilled": oom,
                "oomCounter": ooms_after is not None,
                "sigkilled": killed_by_signal,
                "stdoutTruncated": outputs[0].truncated,
                "stderrTruncated": outputs[1].truncated,
                "cpuNs": int((usage.ru_utime + usage.ru_stime) * 1e9),
                "peakMemoryBytes": peak_memory(),
                "notes": notes,
            }
        ).encode(),
    )


try:
    main()
except Exception as error:  # the runner reports this as the job's error
    try:
        send(FRAME_DONE, json.dumps({"error": "%s: %s" % (type(error).__name__, error)}).encode())
    except OSError:
        pass
    sys.exit(1)
