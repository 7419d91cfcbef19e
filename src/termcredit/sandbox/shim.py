"""In-container shim: one persistent bash under strace, driven over stdin/stdout.

This file runs *inside* the sandbox: a one-line bootstrap (``BOOTSTRAP`` in shell.py) reads this
source from stdin and executes it, so it is never written into the container's file system (the
agent cannot alter it) and ``ps`` shows one short line. Stdlib only.

Process tree:  shim -> strace -f ... -o FIFO -> bash --norc --noprofile
The FIFO is unlinked as soon as strace has opened it, so the trace exists only as a pipe between
strace and the shim (never a file the agent could read or edit), and bash does not inherit it
(strace opens its output close-on-exec).

Wire protocol (both directions): frames of ``>I`` header length, JSON header, then the raw blobs
whose byte lengths the header lists in ``"blobs"``.
  host -> shim: {"op": "run", "seq", "cmd", "timeout", "cap"} | {"op": "snapshot", "paths",
                "content_cap"} | {"op": "finish", "grace"} | {"op": "close"}
  shim -> host: {"op": "ready"} + startup trace | {"op": "result", "seq", "exit_code", ...} +
                stdout, stderr, trace of the command | {"op": "snapshot", "entries"} + one
                content blob per entry (empty unless UTF-8 text within the cap) |
                {"op": "finished"} + the trace written after the last command
"""
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time

# importable for tests; configured from argv when run as the shim
CFG = json.loads(sys.argv[2]) if __name__ == "__main__" else {"nonce": "", "strace": []}
NONCE = CFG["nonce"]
MARK_DIR = "/__termcredit__/" + NONCE
STRACE = CFG["strace"]  # argv prefix up to and including "-o"
GRACE_S = 1.0  # after killing a timed-out command's processes, wait this long before killing bash
TAIL_KEEP = 4096
BATCH_AFTER_S, BATCH_SLEEP_S = 0.01, 0.003
# Commands run inside a function so that a timeout can abandon the whole command list (the USR1
# trap returns from it) without killing the shell and its state. The EXIT trap reports the cwd
# through the trace, so a shell that a command ended restarts where it stood.
INIT_SCRIPT = (
    "__tc_run() { eval \"$__tc_c\"; }\ntrap 'return 137 2>/dev/null' USR1\n"
    "trap 'cd \"%s/cwd$PWD\" 2>/dev/null' EXIT\n"
)


def send(header, *blobs):
    header = dict(header, blobs=[len(b) for b in blobs])
    raw = json.dumps(header).encode()
    out = sys.stdout.buffer
    out.write(struct.pack(">I", len(raw)) + raw)
    for b in blobs:
        out.write(b)
    out.flush()


def read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def recv():
    (n,) = struct.unpack(">I", read_exact(4))
    return json.loads(read_exact(n))


def ansi_c_quote(text):
    """bash $'...' quoting that survives any byte, so the command text reaches eval intact."""
    out = []
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no byte decoded to: not a real byte
        raw = text.encode("utf-8", "replace")
    for ch in raw:
        if ch in (0x27, 0x5C) or ch < 0x20 or ch >= 0x7F:
            out.append("\\x%02x" % ch)
        else:
            out.append(chr(ch))
    return "$'" + "".join(out) + "'"


class Capped:
    """Keeps the head and a short tail of a stream; counts what was dropped in between."""

    def __init__(self, cap):
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data):
        room = self.cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > TAIL_KEEP:
                cut = len(self.tail) - TAIL_KEEP
                self.dropped += cut
                del self.tail[:cut]

    def value(self):
        if not self.dropped:
            return bytes(self.head + self.tail)
        note = b"\n[... termcredit: %d bytes of output omitted ...]\n" % self.dropped
        return bytes(self.head) + note + bytes(self.tail)


def children_map():
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def descendants(root):
    kids, out, todo = children_map(), [], [root]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_pids(pids):
    for pid in pids:  # stop first so nothing forks while we kill
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            pass
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def pin_to_cpu():
    """Runs in the strace child before exec: one CPU for strace and everything it traces."""
    index = CFG.get("pin_cpu")
    if index is None:
        return
    allowed = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {allowed[index % len(allowed)]})


class Shell:
    def __init__(self, cwd):
        self.cwd = cwd
        os.makedirs("/run/termcredit", mode=0o700, exist_ok=True)
        fifo = "/run/termcredit/%s.%d" % (NONCE, time.monotonic_ns())
        os.mkfifo(fifo, 0o600)
        self.trace_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:  # a big pipe lets strace run ahead while the shim reads in batches
            import fcntl

            fcntl.fcntl(self.trace_fd, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        argv = STRACE + [fifo, "--", "bash", "--norc", "--noprofile"]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd, bufsize=0, start_new_session=True, preexec_fn=pin_to_cpu,
        )
        self.strace_pid = self.proc.pid
        self.out_fd = self.proc.stdout.fileno()
        self.err_fd = self.proc.stderr.fileno()
        self.trace = bytearray()
        # Wait for strace to open the FIFO (its first line is bash's execve), then unlink it.
        deadline = time.monotonic() + 10
        while not self.trace and time.monotonic() < deadline:
            select.select([self.trace_fd], [], [], 0.05)
            self._drain_trace()
        os.unlink(fifo)
        self.bash_pid = self._find_bash()
        self.alive = self.bash_pid is not None
        self.proc.stdin.write((INIT_SCRIPT % MARK_DIR).encode())

    def _find_bash(self):
        for _ in range(200):
            kids = children_map().get(self.strace_pid, [])
            if kids:
                return kids[0]
            time.sleep(0.005)
        return None

    def _drain_trace(self):
        try:
            while True:
                chunk = os.read(self.trace_fd, 1 << 16)
                if not chunk:
                    return False
                self.trace += chunk
        except BlockingIOError:
            return True

    def _drain_pipes(self, streams):
        for fd, buf in streams.items():
            while select.select([fd], [], [], 0)[0]:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                buf.extend(chunk)

    def run(self, seq, cmd, timeout, cap):
        # The end marker's chdir carries the exit code. It is also the completion signal: the
        # command's own writes to stdout/stderr finished before bash made that syscall, so one
        # drain of both pipes after seeing it collects all of the command's output, even when
        # the command redirected or closed the shell's stdout/stderr.
        trace_end = ('chdir("%s/e%d.' % (MARK_DIR, seq)).encode()
        script = "__tc_c=%s\ncd %s/s%d 2>/dev/null\n__tc_run </dev/null\ncd %s/e%d.$? 2>/dev/null\n" % (
            ansi_c_quote(cmd), MARK_DIR, seq, MARK_DIR, seq)
        before = set(int(p) for p in os.listdir("/proc") if p.isdigit())
        start_trace = len(self.trace)
        streams = {self.out_fd: bytearray(), self.err_fd: bytearray()}
        open_fds = [self.out_fd, self.err_fd, self.trace_fd]
        t0 = time.monotonic()
        deadline = t0 + timeout
        timed_out = False
        killed_at = ended_at = exit_code = None
        try:
            self.proc.stdin.write(script.encode())
        except BrokenPipeError:
            self.alive = False
        while self.alive:
            now = time.monotonic()
            if ended_at is not None:
                self._drain_pipes(streams)
                break
            if now >= deadline and killed_at is None:
                timed_out, killed_at = True, now
                # USR1 makes bash's trap return from __tc_run once the foreground job is gone,
                # so the rest of the command list (or a builtin loop) is abandoned too.
                try:
                    os.kill(self.bash_pid, signal.SIGUSR1)
                except OSError:
                    pass
                kill_pids([p for p in descendants(self.bash_pid) if p not in before])
            elif killed_at is not None and now - killed_at > GRACE_S:
                self.cwd = self.cwd_now()
                kill_pids([self.bash_pid])  # USR1 trapped or ignored: only bash can go
                killed_at = float("inf")
            wait = 0.05 if timed_out else max(0.0, min(0.5, deadline - now))
            ready, _, _ = select.select(open_fds, [], [], wait)
            if now - t0 > BATCH_AFTER_S:
                # a long, syscall-heavy command: waking for every trace line would steal CPU
                # from strace and the command, so let lines pile up in the pipe for a moment
                time.sleep(BATCH_SLEEP_S)
            for fd in ready:
                if fd == self.trace_fd:
                    if not self._drain_trace():
                        open_fds.remove(fd)
                    continue
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    streams[fd].extend(chunk)
                else:
                    open_fds.remove(fd)
            if ended_at is None:
                i = self.trace.find(trace_end, start_trace)
                if i >= 0:
                    j = self.trace.find(b'"', i + len(trace_end))  # `")` or `" <unfinished`
                    if j >= 0:
                        exit_code = int(self.trace[i + len(trace_end) : j])
                        ended_at = time.monotonic()
            if self.trace_fd not in open_fds or self.proc.poll() is not None:
                self.alive = False
        duration = (ended_at or time.monotonic()) - t0
        self._drain_trace()
        if not self.alive:
            try:
                code = self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = -1
            self._drain_pipes(streams)
            if exit_code is None:
                exit_code = 137 if timed_out else code
        trace = bytes(self.trace[start_trace:])
        del self.trace[:]
        if not self.alive:
            i = trace.rfind(('chdir("%s/cwd' % MARK_DIR).encode())
            if i >= 0:  # the EXIT trap's report: the C-escaped path up to the closing quote
                j = trace.find(b'"', i + len(MARK_DIR) + 11)
                raw = trace[i + len(MARK_DIR) + 11 : j].decode("ascii", "replace")
                self.cwd = raw.encode("latin-1", "replace").decode("unicode_escape", "replace")
        result = {}
        for name, fd in (("stdout", self.out_fd), ("stderr", self.err_fd)):
            capped = Capped(cap)
            capped.add(bytes(streams[fd]))
            result[name] = capped
        header = {
            "op": "result", "seq": seq, "exit_code": exit_code, "duration_s": duration,
            "timed_out": timed_out, "shell_restarted": not self.alive,
            "stdout_dropped": result["stdout"].dropped, "stderr_dropped": result["stderr"].dropped,
        }
        return header, result["stdout"].value(), result["stderr"].value(), trace

    def cwd_now(self):
        try:
            self.cwd = os.readlink("/proc/%d/cwd" % self.bash_pid)
        except OSError:
            pass
        return self.cwd

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except Exception:
            kill_pids(descendants(self.strace_pid))


STAT_CACHE = {}  # path -> ((ino, size, mtime_ns, ctime_ns), sha256): skip rehashing unchanged files


def file_state(path, content_cap):
    """(entry, content) for one path after a command: what the content check compares."""
    import hashlib
    import stat as st

    try:
        info = os.lstat(path)
    except OSError:
        return {"path": path, "kind": "missing"}, b""
    if st.S_ISLNK(info.st_mode):
        return {"path": path, "kind": "symlink", "target": os.readlink(path)}, b""
    if st.S_ISDIR(info.st_mode):
        return {"path": path, "kind": "dir", "mode": info.st_mode & 0o7777}, b""
    if not st.S_ISREG(info.st_mode):
        return {"path": path, "kind": "other"}, b""
    key = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    entry = {"path": path, "kind": "file", "size": info.st_size, "mode": info.st_mode & 0o7777}
    content = b""
    cached = STAT_CACHE.get(path)
    try:
        if info.st_size <= content_cap:
            with open(path, "rb") as f:
                data = f.read(content_cap + 1)
            if b"\0" not in data:
                try:
                    data.decode("utf-8")
                    content = data
                except UnicodeDecodeError:
                    pass
            digest = hashlib.sha256(data).hexdigest()
        elif cached and cached[0] == key:
            digest = cached[1]
        else:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            digest = h.hexdigest()
    except OSError as exc:
        return {"path": path, "kind": "unreadable", "error": str(exc)}, b""
    STAT_CACHE[path] = (key, digest)
    entry.update(sha256=digest, text=bool(content) or info.st_size == 0)
    return entry, content


def snapshot(paths, content_cap):
    entries, blobs = [], []
    for path in paths:
        entry, content = file_state(path, content_cap)
        entries.append(entry)
        blobs.append(content)
    return {"op": "snapshot", "entries": entries}, blobs


def finish(shell, grace):
    """End the session: let background jobs finish (up to ``grace`` s) so their trace lines are
    complete, then kill what is left (never strace) and hand over the remaining trace."""
    try:
        shell.proc.stdin.close()
    except OSError:
        pass
    deadline = time.monotonic() + grace
    while shell.proc.poll() is None and time.monotonic() < deadline:
        select.select([shell.trace_fd], [], [], 0.05)
        shell._drain_trace()
    if shell.proc.poll() is None:
        kill_pids(descendants(shell.strace_pid))
        try:
            shell.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    while shell._drain_trace() and shell.proc.poll() is None:
        time.sleep(0.01)
    shell._drain_trace()
    return bytes(shell.trace)


def main():
    shell = Shell(CFG.get("cwd") or os.getcwd())
    send({"op": "ready", "bash_pid": shell.bash_pid, "alive": shell.alive}, bytes(shell.trace))
    del shell.trace[:]
    while True:
        try:
            req = recv()
        except EOFError:
            break
        if req["op"] == "close":
            break
        if req["op"] == "finish":  # the shell ends; snapshots still work until "close"
            send({"op": "finished"}, finish(shell, req.get("grace", 2.0)))
            shell = None
            continue
        if req["op"] == "snapshot":
            header, blobs = snapshot(req["paths"], req.get("content_cap", 1 << 18))
            send(header, *blobs)
            continue
        if shell is None:
            send({"op": "error", "error": "the shell was finished"})
            continue
        shell.cwd_now()
        header, out, err, trace = shell.run(req["seq"], req["cmd"], req["timeout"], req["cap"])
        if not shell.alive:  # `exit`, a killed shell, ...: restart where it stood
            shell.close()
            shell = Shell(shell.cwd if os.path.isdir(shell.cwd) else "/")
            header["restart_trace_len"] = len(shell.trace)
            trace += bytes(shell.trace)
            del shell.trace[:]
        send(header, out, err, trace)
    if shell is not None:
        shell.close()


if __name__ == "__main__":
    main()
