# Ratchet's sandbox supervisor. It runs inside the sandbox (a Docker container
# or a bubblewrap namespace) as the sandbox user, started by the runner as
# `python3 -I -S -c <this file> [--idle-seconds N]`, and runs one job:
#
#   stdin  <- u32 length + JSON spec, u32 length + the job's files as
#             records (u32 name length, name, u32 size, content)
#   stdout -> frames: u8 type + u32 length + payload (types below); events
#             and the last frame are JSON, the output files a tar archive
#
# With "relay" in the spec ({"port", "socket"}), a thread relays TCP
# connections to 127.0.0.1:port to a Unix socket (the install sandbox's only
# way out: the runner's filtering proxy). With "export" ({"directory"}), after
# every command succeeded, the files under that directory follow as EXPORT
# frames: a tar streamed file by file (the dependency layer).
#
# With "session": true in the spec, it does not run commands but serves
# requests until stdin closes or none comes for idleSeconds: each request is
# u32 length + JSON ({"op": "exec" | "read" | "write" | "list" | "hashes"}),
# for "write" followed by a block of files, and each is answered by frames
# ending in one DONE frame whose JSON carries the answer.
#
# The code under test never writes to stdout itself: its output goes through
# pipes this process reads, caps and frames, so it cannot forge a frame. The
# runner's pipes are held in the sandbox by this process alone: it must be the
# sandbox's PID 1 (Docker makes it so; bubblewrap with --as-pid-1, so no bwrap
# init inside holds them), whose namespace's own processes cannot stop or kill
# it, and it makes itself non-dumpable before it reads a job, so the code
# (same uid) can neither ptrace it, nor take its descriptors (pidfd_getfd,
# /proc/<pid>/fd), nor read its memory. Either step failing ends it with an
# error before any command runs. bubblewrap's seccomp filter (and Docker's
# default profile) refuse ptrace and pidfd_getfd besides.
# Only the standard library, and only its cheap modules (no json, re,
# subprocess or tarfile): in a fresh sandbox its start is part of every job.
import os
import resource
import select
import stat
import struct
import sys
import time

FRAME_STDOUT = 1
FRAME_STDERR = 2
FRAME_EVENT = 3
FRAME_TAR = 4
FRAME_DONE = 5
FRAME_EXPORT = 6
CHUNK = 65536
SIGKILL = 9  # not the signal module: importing it costs milliseconds per job


def guard_result_channel():
    """Makes this process the sole holder of the runner's pipes in the
    sandbox, or raises: non-dumpable (execve made it dumpable, so no launcher
    can do this for it; it happens before any job is read, so before any
    other process exists in the sandbox), PID 1, and no descriptor but 0, 1
    and 2 for a command to inherit."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0 or libc.prctl(3, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0, then PR_GET_DUMPABLE
        raise OSError(ctypes.get_errno(), "cannot make the supervisor non-dumpable; the code under test could take its result channel")
    if os.getpid() != 1:
        raise RuntimeError("the supervisor runs as pid %d, not as its sandbox's PID 1, so another process there may hold the runner's pipes; start it as the container's command (docker) or with bwrap --as-pid-1" % os.getpid())
    os.closerange(3, 1 << 20)


def send(kind, payload):
    header = struct.pack(">BI", kind, len(payload))
    data = memoryview(header + payload)
    while data:
        written = os.write(1, data)
        data = data[written:]


def to_json(value):
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        escaped = []
        for char in value:
            code = ord(char)
            if char == '"' or char == "\\":
                escaped.append("\\" + char)
            elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
                escaped.append("\\u%04x" % code)
            else:
                escaped.append(char)
        return '"' + "".join(escaped) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(to_json(str(key)) + ":" + to_json(item) for key, item in value.items()) + "}"
    return "[" + ",".join(to_json(item) for item in value) + "]"


def from_json(text):
    # The spec comes from the runner, which wrote it with JSON.stringify: a
    # Python literal once true/false/null are named. No builtins are reachable.
    return eval(text, {"__builtins__": {}, "true": True, "false": False, "null": None})


def event(**fields):
    send(FRAME_EVENT, to_json(fields).encode())


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


def reap(pid):
    """Reaps every exited child (as PID 1 in Docker, orphans are ours too); returns pid's status if it was among them."""
    found = None
    while True:
        try:
            done, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if done == 0:
            return found
        if done == pid:
            found = status


def kill_everything_else(grace=2.0):
    """SIGKILLs every process the sandbox user owns except this one and init, until none is left."""
    end = time.monotonic() + grace
    while True:
        try:
            os.kill(-1, SIGKILL)
        except OSError:
            pass
        # Reap our own children (and, as PID 1, orphans) so they do not count as live.
        reap(None)
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


def spawn(argv, cwd, env, rlimits):
    """Forks and execs argv with /dev/null as stdin, pipes as stdout and
    stderr, the rlimits set and a high OOM score. Returns (pid, stdout fd,
    stderr fd); raises OSError when the program cannot be run."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    status_read, status_write = os.pipe()  # close-on-exec: EOF means exec worked
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_write, 1)
            os.dup2(err_write, 2)
            os.setsid()
            for name, value in rlimits.items():
                if value is not None:
                    number = getattr(resource, "RLIMIT_" + name.upper())
                    resource.setrlimit(number, (value, value))
            try:
                # The code under test, not this process, is what the OOM killer should pick.
                adjust = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
                os.write(adjust, b"1000")
                os.close(adjust)
            except OSError:
                pass
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        except OSError as error:
            os.write(status_write, struct.pack(">i", error.errno or 0))
        finally:
            os._exit(127)
    os.close(out_write)
    os.close(err_write)
    os.close(status_write)
    failure = os.read(status_read, 4)
    os.close(status_read)
    if failure:
        os.waitpid(pid, 0)
        os.close(out_read)
        os.close(err_read)
        (number,) = struct.unpack(">i", failure)
        raise OSError(number, os.strerror(number))
    return pid, out_read, err_read


def exit_code_of(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status), os.WTERMSIG(status)
    return os.WEXITSTATUS(status), 0


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
        pid, stdout_fd, stderr_fd = spawn(command["argv"], cwd, spec["env"], spec.get("rlimits", {}))
    except OSError as error:
        outputs[1].write(("ratchet sandbox: cannot run %s: %s\n" % (command["argv"][0], error.strerror)).encode())
        event(started=index, monotonicNs=started)
        event(ended=index, exitCode=127, signal=0, timedOut=False, durationNs=time.monotonic_ns() - started)
        return 127, False
    event(started=index, monotonicNs=started, pid=pid)
    command_deadline = time.monotonic() + budget
    streams = {stdout_fd: outputs[0], stderr_fd: outputs[1]}
    status = None
    exited_at = None
    timed_out = False
    idle_rounds = 0
    while True:
        now = time.monotonic()
        if now >= command_deadline:
            timed_out = True
            break
        if status is None:
            waited = reap(pid)
            if waited is not None:
                status = waited
                exited_at = now
        # Pipes still open after the command exited belong to processes it left
        # behind; take what they already wrote, then stop listening.
        if status is not None and (not streams or now - exited_at > 0.05):
            break
        if not streams:
            # The command closed its output but runs on: poll, backing off.
            time.sleep(min(0.05, 0.001 * (2 ** min(idle_rounds, 6)), command_deadline - now))
            idle_rounds += 1
            continue
        ready, _, _ = select.select(list(streams), [], [], min(0.1, command_deadline - now))
        for fd in ready:
            data = os.read(fd, CHUNK)
            if data:
                streams[fd].write(data)
            else:
                del streams[fd]
    if status is None:
        if timed_out:
            try:
                os.kill(pid, SIGKILL)
            except OSError:
                pass
        status = os.waitpid(pid, 0)[1]
    ended = time.monotonic_ns()
    os.close(stdout_fd)
    os.close(stderr_fd)
    # Background processes a command started do not outlive it (nor can they
    # rewrite its report afterwards).
    kill_everything_else()
    exit_code, signal_number = exit_code_of(status)
    if timed_out:
        exit_code = -1
    event(ended=index, exitCode=exit_code, signal=signal_number, timedOut=timed_out, durationNs=ended - started)
    return exit_code, timed_out


def tar_block(name, size, kind, mode, mtime, link):
    header = bytearray(512)
    header[0 : len(name)] = name
    header[100:108] = b"%07o\0" % mode
    header[108:116] = b"%07o\0" % 10001
    header[116:124] = b"%07o\0" % 10001
    header[124:136] = b"%011o\0" % size
    header[136:148] = b"%011o\0" % mtime
    header[148:156] = b"        "
    header[156:157] = kind
    header[157 : 157 + len(link)] = link
    header[257:265] = b"ustar\x0000"
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


def tar_entry(name, kind, mode, mtime, content=b"", link=""):
    """One ustar entry (a pax header first when a name is too long for ustar)."""
    blocks = [tar_header(name, kind, mode, mtime, len(content), link)]
    if content:
        blocks.append(content + b"\0" * (-len(content) % 512))
    return b"".join(blocks)


def tar_header(name, kind, mode, mtime, size, link=""):
    """The header blocks of one entry of size bytes (a pax header first when a name is too long for ustar)."""
    encoded = name.encode("utf-8", "surrogateescape")
    target = link.encode("utf-8", "surrogateescape")
    blocks = []
    if len(encoded) > 99 or len(target) > 99:
        records = b""
        for key, value in ((b"path", encoded), (b"linkpath", target)):
            if value:
                body = b" " + key + b"=" + value + b"\n"
                length = len(body) + len(str(len(body)))
                if len(str(length)) > len(str(len(body))):
                    length += 1
                records += str(length).encode() + body
        blocks.append(tar_block(b"././@PaxHeader", len(records), b"x", 0o644, mtime, b""))
        blocks.append(records + b"\0" * (-len(records) % 512))
        encoded, target = encoded[:99], target[:99]
    blocks.append(tar_block(encoded, size, kind, mode, mtime, target))
    return b"".join(blocks)


def export_tree(root, directory):
    """Streams the files under root/directory as EXPORT frames, a tar with
    names relative to root: directories, regular files (read in chunks, so a
    large layer costs no memory) and symlinks (node_modules/.bin has them);
    anything else is left out and noted. Returns the notes."""
    notes = []
    start = os.path.join(root, directory)
    pending = bytearray()

    def emit(data):
        pending.extend(data)
        if len(pending) >= CHUNK:
            send(FRAME_EXPORT, bytes(pending))
            del pending[:]

    if not os.path.isdir(start) or os.path.islink(start):
        notes.append("nothing was installed in %s" % directory)
    else:
        emit(tar_header(directory, b"5", 0o755, int(time.time()), 0))
        for entry in entries_below(start, 10 ** 7):
            if entry is None:
                break
            relative = os.path.relpath(entry.path, root)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            mode = info.st_mode & 0o777
            mtime = int(info.st_mtime)
            if stat.S_ISDIR(info.st_mode):
                emit(tar_header(relative, b"5", mode, mtime, 0))
            elif stat.S_ISLNK(info.st_mode):
                emit(tar_header(relative, b"2", 0o777, mtime, 0, os.readlink(entry.path)))
            elif stat.S_ISREG(info.st_mode):
                try:
                    descriptor = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                except OSError:
                    notes.append("%s could not be read" % relative)
                    continue
                try:
                    size = os.fstat(descriptor).st_size
                    emit(tar_header(relative, b"0", mode, mtime, size))
                    left = size
                    while left > 0:
                        chunk = os.read(descriptor, min(CHUNK, left)) or b"\0" * min(CHUNK, left)
                        emit(chunk)
                        left -= len(chunk)
                    emit(b"\0" * (-size % 512))
                finally:
                    os.close(descriptor)
            else:
                notes.append("%s is not a file, directory or link; left out" % relative)
    emit(b"\0" * 1024)
    if pending:
        send(FRAME_EXPORT, bytes(pending))
    return notes


def start_relay(port, socket_path, failures):
    """Relays each TCP connection to 127.0.0.1:port to the Unix socket
    socket_path, in daemon threads (the supervisor's only ones: commands are
    forked from the main thread and exec at once). The sockets are
    close-on-exec, so the commands do not inherit them. The first error
    reaching the socket goes to failures (a list), for the job's notes."""
    import socket
    import threading

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)

    def pump(source, target, done):
        try:
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with done[0]:
            done[1] += 1
            last = done[1] == 2
        if last:
            source.close()
            target.close()

    def serve():
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(socket_path)
            except OSError as error:
                if not failures:
                    failures.append("the relay could not reach the runner's package proxy at %s: %s" % (socket_path, error))
                upstream.close()
                client.close()
                continue
            done = [threading.Lock(), 0]
            threading.Thread(target=pump, args=(client, upstream, done), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client, done), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def entries_below(start, limit, skip=()):
    """Every entry below start (links not followed; directories named in skip
    not entered), one directory at a time: a directory of a million files must
    not cost this process (which has the job's memory limit) a list of them.
    Yields None, and stops, once more than limit entries were seen."""
    pending = [start]
    seen = 0
    while pending:
        directory = pending.pop()
        try:
            entries = os.scandir(directory)
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > limit:
                    yield None
                    return
                if entry.is_dir(follow_symlinks=False) and entry.name not in skip:
                    pending.append(entry.path)
                yield entry


def collect(spec):
    """A tar of the requested files: regular files as they are, anything else as what it is (the runner refuses those)."""
    root = spec["workDir"]
    # [path in the sandbox (absolute, or relative to the work directory), name in the archive]
    wanted = [tuple(pair) for pair in spec.get("collect", [])]
    names = set(spec.get("collectNames", []))
    notes = []
    limit = spec.get("maxWalkEntries", 20000)
    for entry in entries_below(root, limit) if names else ():
        if entry is None:
            notes.append("the work directory has more than %d entries; only the first were searched" % limit)
            break
        if entry.name in names:
            relative = os.path.relpath(entry.path, root)
            wanted.append((relative, relative))
    archive = []
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
        mode = info.st_mode & 0o7777
        mtime = int(info.st_mtime)
        if stat.S_ISLNK(info.st_mode):
            archive.append(tar_entry(relative, b"2", mode, mtime, link=os.readlink(path)))
        elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            first = inodes.setdefault(info.st_ino, relative)
            archive.append(tar_entry(relative, b"1", mode, mtime, link=first if first != relative else "(a file with %d links)" % info.st_nlink))
        elif stat.S_ISREG(info.st_mode):
            if info.st_size > budget:
                notes.append("%s is %d bytes, over what is left of the collection cap" % (relative, info.st_size))
                continue
            try:
                descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                content = os.read(descriptor, budget + 1)
            finally:
                os.close(descriptor)
            if len(content) > budget:
                notes.append("%s grew past the collection cap" % relative)
                continue
            budget -= len(content)
            archive.append(tar_entry(relative, b"0", mode, mtime, content))
        else:
            archive.append(tar_entry(relative, b"5" if stat.S_ISDIR(info.st_mode) else b"6", mode, mtime))
    archive.append(b"\0" * 1024)
    data = b"".join(archive)
    for offset in range(0, len(data), CHUNK):
        send(FRAME_TAR, data[offset : offset + CHUNK])
    return notes


def unpack_files(data, root):
    """Writes the job's files: records of u32 name length, name, u32 size, content."""
    offset = 0
    made = set()
    while offset < len(data):
        (length,) = struct.unpack_from(">I", data, offset)
        name = data[offset + 4 : offset + 4 + length].decode("utf-8")
        offset += 4 + length
        (size,) = struct.unpack_from(">I", data, offset)
        content = data[offset + 4 : offset + 4 + size]
        offset += 4 + size
        path = os.path.normpath(os.path.join(root, name))
        if not path.startswith(root + "/"):
            raise ValueError("file name %r leaves the work directory" % name)
        directory = os.path.dirname(path)
        if directory not in made:
            os.makedirs(directory, mode=0o755, exist_ok=True)
            made.add(directory)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(descriptor, view) :]
        finally:
            os.close(descriptor)


def inside(root, relative):
    """The absolute path of relative under root; raises ValueError when it leaves root."""
    path = os.path.normpath(os.path.join(root, relative or "."))
    if path != root and not path.startswith(root + "/"):
        raise ValueError("%r leaves the work directory" % relative)
    return path


def walk_files(root, start, limit):
    """(relative path, size) of regular files under start, links never followed, .git left out; stops past limit entries."""
    found = []
    for entry in entries_below(start, limit, skip=(".git",)):
        if entry is None:
            return found, True
        if entry.is_file(follow_symlinks=False):
            try:
                found.append((os.path.relpath(entry.path, root), entry.stat(follow_symlinks=False).st_size))
            except OSError:
                continue
    return found, False


def file_hashes(root, limit):
    """[path, size, sha256 hex] of every regular file, and the paths that are links or other non-files (.git left out)."""
    import hashlib  # session mode only: a job never pays for it

    rows = []
    others = []
    for entry in entries_below(root, limit, skip=(".git",)):
        if entry is None:
            return rows, others, True
        if entry.is_dir(follow_symlinks=False):
            continue
        relative = os.path.relpath(entry.path, root)
        if not entry.is_file(follow_symlinks=False):
            others.append(relative)
            continue
        digest = hashlib.sha256()
        try:
            descriptor = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            others.append(relative)
            continue
        size = 0
        try:
            while True:
                chunk = os.read(descriptor, CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                digest.update(chunk)
        finally:
            os.close(descriptor)
        rows.append([relative, size, digest.hexdigest()])
    return rows, others, False


def serve_session(spec):
    """Answers requests until stdin closes or stays silent for idleSeconds."""
    root = spec["workDir"]
    idle = spec.get("idleSeconds", 600)
    send(FRAME_DONE, to_json({"ready": True}).encode())
    while True:
        readable, _, _ = select.select([0], [], [], idle)
        if not readable:
            return
        try:
            request = from_json(read_block().decode("utf-8"))
        except EOFError:
            return
        op = request.get("op")
        try:
            if op == "exec":
                limit = request.get("outputLimit") or spec["outputLimit"]
                outputs = (Output(FRAME_STDOUT, limit), Output(FRAME_STDERR, limit))
                command = {"argv": request["argv"], "cwd": request.get("cwd") or "", "timeoutMs": request.get("timeoutMs") or spec["timeoutMs"]}
                inside(root, command["cwd"])
                ooms_before = oom_kills()
                started = time.monotonic_ns()
                exit_code, timed_out = run_command(0, command, spec, outputs, time.monotonic() + command["timeoutMs"] / 1000.0)
                ooms_after = oom_kills()
                answer = {
                    "exitCode": exit_code,
                    "timedOut": timed_out,
                    "durationNs": time.monotonic_ns() - started,
                    "stdoutTruncated": outputs[0].truncated,
                    "stderrTruncated": outputs[1].truncated,
                    "oomKilled": ooms_before is not None and ooms_after is not None and ooms_after > ooms_before,
                }
            elif op == "read":
                for path in request["paths"]:
                    inside(root, path)
                notes = collect({"workDir": root, "collect": [[path, path] for path in request["paths"]], "maxCollectBytes": request.get("maxBytes", 8 << 20), "maxCollectFiles": len(request["paths"]) + 1})
                answer = {"notes": notes}
            elif op == "write":
                files = read_block()
                deleted = 0
                for path in request.get("delete", []):
                    target = inside(root, path)
                    try:
                        os.unlink(target)
                        deleted += 1
                    except FileNotFoundError:
                        pass
                    except IsADirectoryError:
                        raise ValueError("%s is a directory; only files can be deleted" % path)
                unpack_files(files, root)
                answer = {"deleted": deleted}
            elif op == "list":
                found, truncated = walk_files(root, inside(root, request.get("directory") or ""), request.get("limit", 20000))
                answer = {"files": [[path, size] for path, size in found], "truncated": truncated}
            elif op == "hashes":
                rows, others, truncated = file_hashes(root, request.get("limit", 100000))
                answer = {"files": rows, "others": others, "truncated": truncated}
            else:
                answer = {"error": "unknown request %r" % op}
        except EOFError:
            return
        except Exception as error:  # one bad request fails alone; the session goes on
            answer = {"error": "%s: %s" % (type(error).__name__, error)}
        send(FRAME_DONE, to_json(answer).encode())


def main():
    guard_result_channel()
    idle = None
    if "--idle-seconds" in sys.argv:
        idle = float(sys.argv[sys.argv.index("--idle-seconds") + 1])
    event(ready=True, pid=os.getpid())
    if idle is not None:
        readable, _, _ = select.select([0], [], [], idle)
        if not readable:
            return  # nobody came: the container ends and is removed
    spec = from_json(read_block().decode("utf-8"))
    files = read_block()
    deadline = time.monotonic() + spec["timeoutMs"] / 1000.0
    unpack_files(files, spec["workDir"])
    if spec.get("session"):
        serve_session(spec)
        return
    outputs = (Output(FRAME_STDOUT, spec["outputLimit"]), Output(FRAME_STDERR, spec["outputLimit"]))
    relay_failures = []
    if spec.get("relay"):
        start_relay(spec["relay"]["port"], spec["relay"]["socket"], relay_failures)
    ooms_before = oom_kills()
    timed_out = False
    killed_by_signal = False
    succeeded = True
    for index, command in enumerate(spec["commands"]):
        exit_code, command_timed_out = run_command(index, command, spec, outputs, deadline)
        timed_out = timed_out or command_timed_out
        killed_by_signal = exit_code == 137
        if command_timed_out or exit_code != 0:
            succeeded = False
            break
    ooms_after = oom_kills()
    oom = ooms_before is not None and ooms_after is not None and ooms_after > ooms_before
    notes = collect(spec) + relay_failures[:1]
    exported = False
    if spec.get("export") and succeeded:
        # Every process of the commands is gone (kill_everything_else), so nothing changes the files while they are read.
        notes.extend(export_tree(spec["workDir"], spec["export"]["directory"]))
        exported = True
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    send(
        FRAME_DONE,
        to_json(
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
                "exported": exported,
            }
        ).encode(),
    )


try:
    main()
except Exception as error:  # the runner reports this as the job's error
    try:
        send(FRAME_DONE, to_json({"error": "%s: %s" % (type(error).__name__, error)}).encode())
    except OSError:
        pass
    sys.exit(1)
