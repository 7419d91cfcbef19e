"""One traced session of the in-container shim (see shim.py): strace, the namespace init, bash.

Runs inside the sandbox (its source is sent ahead of shim.py's). Stdlib only.
"""
import json
import os
import select
import signal
import socket
import stat as st
import struct
import subprocess
import sys
import threading
import time

try:  # imported as part of the package (tests); in the sandbox the sources come first
    from .shim_protocol import INIT_SCRIPT, ansi_c_quote, command_script, parse_traps  # noqa: F401
    from .shim_state import STATE_CAP, dump_script, parse_report, state_changes
except ImportError:
    pass

GRACE_S = 1.0  # after killing a timed-out command's processes, wait this long before killing bash
TAIL_KEEP = 4096
WATCH_CAP = 64 << 20  # trace kept while watching agent processes during verification
TRACE_HEAD, TRACE_TAIL = 12 << 20, 4 << 20  # a step's trace kept: head and tail, whole lines
BATCH_AFTER_S, BATCH_SLEEP_S = 0.01, 0.003
LOADER = "import os,sys;exec(compile(os.read(int(sys.argv[2]),1<<20),'termcredit-nsinit','exec'))"


class Capped:
    """Keeps the head and a short tail of a stream as it arrives; counts what it dropped."""

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
            if len(self.tail) > 2 * TAIL_KEEP:
                cut = len(self.tail) - TAIL_KEEP
                self.dropped += cut
                del self.tail[:cut]

    def value(self):
        if len(self.tail) > TAIL_KEEP:
            self.dropped += len(self.tail) - TAIL_KEEP
            del self.tail[: len(self.tail) - TAIL_KEEP]
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
                data = f.read()
        except OSError:
            continue
        ppid = int(data[data.rindex(b")") + 2 :].split()[1])
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
    for sig in (signal.SIGSTOP, signal.SIGKILL):  # stop first so nothing forks while we kill
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def ctl_send(sock, msg, fds=()):
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))] if fds else []
    sock.sendmsg([json.dumps(msg).encode()], anc)


class Session:
    def __init__(self, role, mark, strace_argv, nsinit_src, pin_cpu):
        # mark (the session's marker directory) and strace_argv (up to strace's output path)
        # come from the host, out of termcredit.tracer.protocol: the tracer parses by them
        self.role, self.mark = role, mark
        self.trace, self.integrity = bytearray(), []
        self.alive, self.bash_pid, self.bash_inner, self.init_pid = False, None, None, None
        self.stdin_w = self.out_fd = self.err_fd = self.state_fd = None
        self.state_buf, self.shell_state, self.state_lost = bytearray(), None, False
        self.cwd, self.watcher, self.ns_gone, self.bash_code = "/", None, False, None
        self.trace_dropped = 0
        self.ctl, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ctl.setblocking(False)
        src_r, src_w = os.pipe()
        os.write(src_w, nsinit_src.encode())  # well under a pipe's 64 KiB
        os.close(src_w)
        os.makedirs("/run/termcredit", mode=0o700, exist_ok=True)
        fifo = "/run/termcredit/%s.%d" % (os.path.basename(mark), time.monotonic_ns())
        os.mkfifo(fifo, 0o600)
        self.trace_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:  # a big pipe lets strace run ahead while the shim reads in batches
            import fcntl

            fcntl.fcntl(self.trace_fd, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass

        def pin():  # in the strace child: one CPU for strace and everything it traces
            if pin_cpu is not None:
                allowed = sorted(os.sched_getaffinity(0))
                os.sched_setaffinity(0, {allowed[pin_cpu % len(allowed)]})

        argv = strace_argv + [fifo, "--", sys.executable, "-c", LOADER, str(child.fileno()),
                              str(src_r), role]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     pass_fds=(child.fileno(), src_r), start_new_session=True,
                                     preexec_fn=pin)
        child.close()
        os.close(src_r)
        up, deadline = False, time.monotonic() + 30
        try:
            while not (up and self.init_pid) and time.monotonic() < deadline:
                select.select([self.ctl, self.trace_fd], [], [], 0.05)
                self._drain_trace()
                for msg in self._ctl_messages():
                    if msg.get("op") == "error":
                        raise RuntimeError("%s namespace: %s" % (role, msg.get("error")))
                    up = up or msg.get("op") == "up"
                if self.proc.poll() is not None:
                    raise RuntimeError("strace exited with %s" % self.proc.returncode)
        finally:
            os.unlink(fifo)
        if not (up and self.init_pid):
            raise RuntimeError("%s namespace did not come up" % role)

    def describe(self):
        return {"role": self.role, "init_pid": self.init_pid}

    def take_trace(self, whole=False):
        """The trace so far, up to its last complete line (a line strace is still writing
        stays for the next piece, so no piece ends or starts with half a line)."""
        end = len(self.trace) if whole else self.trace.rfind(b"\n") + 1
        data = bytes(self.trace[:end])
        del self.trace[:end]
        return data

    def take_integrity(self):
        out, self.integrity = self.integrity, []
        return out

    def _flag(self, reason):
        if reason not in self.integrity:
            self.integrity.append(reason)

    def _ctl_messages(self):
        out = []
        while True:
            try:
                data, anc, _, _ = self.ctl.recvmsg(1 << 16, socket.CMSG_SPACE(16))
            except (BlockingIOError, InterruptedError):
                return out
            except OSError:
                data = b""
            if not data:
                if not self.ns_gone:
                    self.ns_gone = True
                    self.alive = False
                    if self.bash_pid is not None:
                        self._flag("the session's namespace init died")
                return out
            msg = json.loads(data)
            if msg.get("op") == "init":
                self.init_pid = int(msg["pid"])
            elif msg.get("op") == "exited" and msg.get("pid") == self.bash_inner:
                self.alive, self.bash_code = False, msg.get("code")
            out.append(msg)

    def _cut_trace(self):
        """Bound a step's trace while it streams: keep its head and its tail (whole lines;
        the end marker is in the tail) and count what was dropped between them. Returns where
        the tail starts."""
        head = self.trace.rfind(b"\n", 0, TRACE_HEAD) + 1
        tail = self.trace.find(b"\n", len(self.trace) - TRACE_TAIL) + 1
        if head <= 0 or tail <= head:
            return head
        self.trace_dropped += tail - head
        del self.trace[head:tail]
        return head

    def _drain_trace(self):
        try:
            while True:
                chunk = os.read(self.trace_fd, 1 << 16)
                if not chunk:
                    return False
                self.trace += chunk
        except BlockingIOError:
            return True

    def start(self, cwd, env):
        """A fresh bash in the session's namespace (the first one, or after one ended)."""
        if self.ns_gone:
            raise RuntimeError("the %s namespace is gone" % self.role)
        self.cwd = cwd
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        st_r, st_w = os.pipe()
        os.set_blocking(st_r, False)
        ctl_send(self.ctl, {"op": "spawn", "cwd": cwd, "env": env}, [in_r, out_w, err_w, st_w])
        for fd in (in_r, out_w, err_w, st_w):
            os.close(fd)
        for fd in (self.stdin_w, self.out_fd, self.err_fd, self.state_fd):
            if fd is not None:
                os.close(fd)
        self.stdin_w, self.out_fd, self.err_fd, self.state_fd = in_w, out_r, err_r, st_r
        self.state_buf, self.shell_state, self.state_lost = bytearray(), None, False
        self.traps = {}  # the agent's DEBUG/ERR traps, put aside between its commands
        self.env, self.bash_inner, deadline = env, None, time.monotonic() + 20
        while self.bash_inner is None and time.monotonic() < deadline and not self.ns_gone:
            select.select([self.ctl, self.trace_fd], [], [], 0.05)
            self._drain_trace()
            for msg in self._ctl_messages():
                if msg.get("op") == "spawned":
                    self.bash_inner = msg["pid"]
        self.bash_pid = self._outer_pid(self.bash_inner) if self.bash_inner else None
        self.alive = self.bash_pid is not None
        if self.alive:
            token = os.urandom(8).hex()
            os.write(self.stdin_w, (INIT_SCRIPT % self.mark + dump_script(token) + "\n").encode())
            deadline = time.monotonic() + 10
            while self.shell_state is None and time.monotonic() < deadline and self.alive:
                select.select([self.state_fd, self.ctl], [], [], 0.05)
                self._ctl_messages()
                self._read_state()
                self.shell_state = self._take_report(token)

    def _read_state(self):
        """Drain the state pipe into the buffer (bounded: past STATE_CAP the report in progress
        is dropped, and the step's state is unknown)."""
        while True:
            try:
                chunk = os.read(self.state_fd, 1 << 16)
            except BlockingIOError:
                return True
            if not chunk:
                return False
            self.state_buf += chunk
            if len(self.state_buf) > STATE_CAP:
                # a huge variable is no tampering: this report is unknown, and what is left
                # of it before the next report's start is not junk
                self.state_buf.clear()
                self.state_lost = True

    def _take_report(self, token):
        state, used, pre = parse_report(bytes(self.state_buf), token)
        if not used:
            return None
        del self.state_buf[:used]
        traps, ok = parse_traps(pre) if pre else (None, True)
        if traps is not None:
            self.traps = traps
        if (state is None or not ok) and not self.state_lost:
            self._flag("unexpected writes to the shell-state channel")
        self.state_lost = False
        return state

    def _outer_pid(self, inner):
        for pid in children_map().get(self.init_pid, []):
            try:
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("NSpid:") and line.split()[-1] == str(inner):
                            return pid
            except OSError:
                continue
        return None

    def _read_into(self, fd, sink):
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if chunk:
            sink.add(chunk)
        return bool(chunk)

    def run(self, seq, cmd, token, timeout, cap):
        # The end marker's chdir carries the exit code and this command's secret token. It is
        # also the completion signal: the command's writes to stdout/stderr finished before
        # bash made that syscall, so one drain of both pipes after it collects all its output.
        # One line: bash has read all of it before the command runs, so nothing of it is left
        # in the pipe for the command to read.
        trace_end = ('chdir("%s/e%d.' % (self.mark, seq)).encode()
        script = command_script(self.mark, seq, cmd, token, self.traps)
        before = set(int(p) for p in os.listdir("/proc") if p.isdigit())
        out, err = Capped(cap), Capped(cap)
        self.trace_dropped = 0
        sinks = {self.out_fd: out, self.err_fd: err}
        open_fds = [self.out_fd, self.err_fd, self.trace_fd, self.ctl, self.state_fd]
        t0 = time.monotonic()
        deadline, search_from = t0 + timeout, 0
        timed_out, killed_at, ended_at, exit_code = False, None, None, None
        try:
            os.write(self.stdin_w, script.encode())
        except OSError:
            self.alive = False
        while self.alive:
            now = time.monotonic()
            if ended_at is not None:
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
            ready = select.select(open_fds, [], [], wait)[0]
            if now - t0 > BATCH_AFTER_S:
                # a long, syscall-heavy command: waking for every trace line would steal CPU
                # from strace and the command, so let lines pile up in the pipe for a moment
                time.sleep(BATCH_SLEEP_S)
            for fd in ready:
                if fd is self.ctl:
                    self._ctl_messages()
                elif fd == self.trace_fd:
                    if not self._drain_trace():
                        open_fds.remove(fd)
                        self.alive = False
                        self._flag("the tracer stopped during the command")
                    if len(self.trace) > TRACE_HEAD + 2 * TRACE_TAIL:
                        search_from = self._cut_trace()
                elif fd == self.state_fd:
                    if not self._read_state():
                        open_fds.remove(fd)
                elif not self._read_into(fd, sinks[fd]):
                    open_fds.remove(fd)
            while ended_at is None:
                i = self.trace.find(trace_end, search_from)
                j = self.trace.find(b'"', i + len(trace_end)) if i >= 0 else -1
                if j < 0:
                    break
                code, _, got = bytes(self.trace[i + len(trace_end) : j]).partition(b".")
                search_from = j
                if got.decode("ascii", "replace") == token:
                    exit_code, ended_at = int(code), time.monotonic()
                else:
                    self._flag("forged end marker for step %d" % seq)
        if ended_at is not None:  # strace ends the marker's line when the chdir returns
            while self.trace.find(b"\n", search_from) < 0 and time.monotonic() - ended_at < 0.5:
                select.select([self.trace_fd], [], [], 0.01)
                self._drain_trace()
        if ended_at is not None or not self.alive:
            self._drain_pipes(sinks)
        duration = (ended_at or time.monotonic()) - t0
        self._drain_trace()
        self._read_state()
        state = self._take_report(token) if ended_at is not None else None
        changes = None  # unknown: no report (the shell ended, or the report was malformed)
        if state is not None and self.shell_state is not None:
            changes = state_changes(self.shell_state, state)
        self.shell_state = state
        header = {"op": "result", "seq": seq, "exit_code": exit_code, "duration_s": duration,
                  "timed_out": timed_out, "shell_restarted": False, "shell": changes,
                  "cwd": self.cwd_now() if self.alive else None}
        if not self.alive:
            self._wait_exit(2.0)
            self._drain_trace()
            self._drain_pipes(sinks)
            if exit_code is None:
                header["exit_code"] = 137 if timed_out or self.bash_code is None else self.bash_code
            self._cwd_from_trace()
        trace = self.take_trace()
        if not self.alive:  # `exit`, a killed shell, ...: restart where it stood
            header["shell_restarted"] = True
            if not self.ns_gone:
                self.start(self.cwd if os.path.isdir(self.cwd) else "/", self.env)
                trace += self.take_trace()
        header.update(stdout_dropped=out.dropped, stderr_dropped=err.dropped,
                      trace_dropped=self.trace_dropped, integrity=self.take_integrity())
        return header, out.value(), err.value(), trace

    def _drain_pipes(self, sinks):
        for fd, sink in sinks.items():
            while select.select([fd], [], [], 0)[0] and self._read_into(fd, sink):
                pass

    def _wait_exit(self, limit):
        deadline = time.monotonic() + limit
        while self.bash_inner is not None and time.monotonic() < deadline and not self.ns_gone:
            msgs = self._ctl_messages()
            if any(m.get("op") == "exited" and m.get("pid") == self.bash_inner for m in msgs):
                return
            if not os.path.exists("/proc/%d" % self.bash_pid):
                return
            select.select([self.ctl], [], [], 0.05)

    def _cwd_from_trace(self):
        key = ('chdir("%s/cwd' % self.mark).encode()
        i = self.trace.rfind(key)
        if i >= 0:  # the EXIT trap's report: the C-escaped path up to the closing quote
            j = self.trace.find(b'"', i + len(key))
            raw = self.trace[i + len(key) : j].decode("ascii", "replace")
            self.cwd = raw.encode("latin-1", "replace").decode("unicode_escape", "replace")

    def cwd_now(self):
        try:
            self.cwd = os.readlink("/proc/%d/cwd" % self.bash_pid)
        except (OSError, TypeError):
            pass
        return self.cwd

    def finish(self, grace):
        """End the shell; let the namespace's other processes run up to ``grace`` s so their
        trace lines are complete, then end the namespace and hand over the remaining trace."""
        if self.stdin_w is not None:
            os.close(self.stdin_w)
            self.stdin_w = None
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not self.ns_gone:
            self._ctl_messages()
            self._drain_trace()
            if not self.alive and not children_map().get(self.init_pid):
                break
            fds = [fd for fd in (self.ctl, self.trace_fd, self.out_fd, self.err_fd) if fd is not None]
            for fd in select.select(fds, [], [], 0.05)[0]:
                if fd in (self.out_fd, self.err_fd):
                    self._read_into(fd, Capped(0))
        self.kill_namespace()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            select.select([self.trace_fd], [], [], 0.05)
            more = self._drain_trace()
            if len(self.trace) > TRACE_HEAD + 2 * TRACE_TAIL:
                self._cut_trace()
            if not more:
                break
        self.alive = False
        return self.take_trace(whole=True)

    def kill_namespace(self):
        """SIGKILL to the init ends every process of the namespace."""
        if self.init_pid is not None:
            try:
                os.kill(self.init_pid, signal.SIGKILL)
            except OSError:
                pass

    def watch(self):
        """Keep draining this session (trace, output) in the background, e.g. while the
        verifier runs: agent services go on, traced, and never block on a full pipe."""
        stop_r, stop_w = os.pipe()
        sink = Capped(0)

        def loop():
            cut, outputs = 0, [fd for fd in (self.out_fd, self.err_fd) if fd is not None]
            while True:
                ready = select.select([self.ctl, self.trace_fd, stop_r] + outputs, [], [], 0.5)[0]
                if stop_r in ready:
                    break
                for fd in ready:
                    if fd is self.ctl:
                        self._ctl_messages()
                    elif fd == self.trace_fd:
                        if not self._drain_trace():
                            return
                        if len(self.trace) > WATCH_CAP:
                            cut += len(self.trace) - WATCH_CAP
                            del self.trace[WATCH_CAP:]
                    elif not self._read_into(fd, sink):
                        outputs.remove(fd)
            self._drain_trace()
            if cut:
                self._flag("trace of agent processes during verification cut (%d bytes)" % cut)

        self.watcher = (threading.Thread(target=loop, daemon=True), stop_w)
        self.watcher[0].start()

    def unwatch(self):
        if self.watcher is not None:
            thread, stop_w = self.watcher
            os.write(stop_w, b"x")
            thread.join()
            self.watcher = None
        self._drain_trace()
        return self.take_trace()

    def root_of(self, root):
        if self.role != "verifier" or root not in ("/tests", "/logs/verifier"):
            raise ValueError("no private folder %r in the %s session" % (root, self.role))
        return "/proc/%d/root%s" % (self.init_pid, root)

    def mount_private(self, root):
        """Ask the init for a fresh private tmpfs at ``root`` (the verifier's /tests, made
        only now so that the agent never even sees the folder)."""
        self.root_of(root)
        ctl_send(self.ctl, {"op": "mount", "path": root})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.ns_gone:
            select.select([self.ctl], [], [], 0.05)
            for msg in self._ctl_messages():
                if msg.get("op") == "mounted":
                    if msg.get("error"):
                        raise RuntimeError(msg["error"])
                    return
        raise RuntimeError("no private %s in the %s namespace" % (root, self.role))


def _safe_rel(rel):
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError("bad relative path %r" % rel)
    return rel


def write_tree(base, files, blobs):
    """Write files under a fresh private folder (the verifier's /tests): nothing else writes
    there before the verifier starts, so exclusive creation and no symlinks are enough."""
    for entry, data in zip(files, blobs):
        path = os.path.join(base, _safe_rel(entry["path"]))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     entry.get("mode", 0o644) & 0o777)
        with os.fdopen(fd, "wb") as f:
            f.write(data)


def read_tree(base, max_file, max_total):
    """Regular files under ``base`` (never following links), each up to ``max_file`` bytes,
    ``max_total`` in all, smallest first (a huge file cannot crowd out reward.txt); other kinds
    are listed so the host can say why they were skipped."""
    found = []
    for folder, dirs, names in os.walk(base, followlinks=False):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            try:
                found.append((path, os.lstat(path)))
            except OSError:
                continue
    out, total, dropped = {}, 0, 0
    for path, info in sorted(found, key=lambda f: (f[1].st_size, f[0])):
        rel = os.path.relpath(path, base)
        if not st.S_ISREG(info.st_mode):
            out[rel] = ({"path": rel, "kind": "symlink" if st.S_ISLNK(info.st_mode) else "other"}, b"")
            continue
        data = b""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                data = f.read(max(0, min(max_file, max_total - total)))
        except OSError:
            pass
        total += len(data)
        dropped += max(0, info.st_size - len(data))
        out[rel] = ({"path": rel, "kind": "file", "size": info.st_size,
                     "truncated": len(data) < info.st_size}, data)
    rels = sorted(out)
    return [out[r][0] for r in rels], [out[r][1] for r in rels], dropped


STAT_CACHE = {}  # path -> ((ino, size, mtime_ns, ctime_ns), sha256): skip rehashing unchanged files


def file_state(path, content_cap):
    """(entry, content) for one path after a command: what the content check compares."""
    import hashlib

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
        # no link, no blocking open: the file may have been swapped for a FIFO since lstat
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not st.S_ISREG(os.fstat(fd).st_mode):
                return {"path": path, "kind": "other"}, b""
            if info.st_size <= content_cap:
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
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
                digest = h.hexdigest()
    except OSError as exc:
        return {"path": path, "kind": "unreadable", "error": str(exc)}, b""
    STAT_CACHE[path] = (key, digest)
    entry.update(sha256=digest, text=bool(content) or info.st_size == 0)
    return entry, content


def resolve(paths):
    """For each executed path, what the kernel really ran: the end of its symlink chain and,
    for a script, its ``#!`` interpreter (neither shows in the trace)."""
    out = []
    for path in paths:
        real, interp = os.path.realpath(path), None
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                head = f.read(256) if st.S_ISREG(os.fstat(fd).st_mode) else b""
            words = head[2:].split(b"\n")[0].split() if head.startswith(b"#!") else []
            if words and words[0].startswith(b"/"):
                interp = os.path.realpath(words[0].decode("utf-8", "replace"))
        except OSError:
            pass
        out.append(sorted({t for t in (real, interp) if t and t != path}))
    return out


def ldcache_regenerates(cache="/etc/ld.so.cache"):
    """Does the image's ldconfig, run now into a scratch file (-X: no links touched), make
    exactly ``cache``? Runs outside every traced namespace, as the shim."""
    scratch = "/run/termcredit/ld.so.cache.%d" % os.getpid()
    try:
        done = subprocess.run(["ldconfig", "-X", "-C", scratch], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        if done.returncode != 0:
            return False
        with open(scratch, "rb") as a, open(cache, "rb") as b:
            return a.read() == b.read()
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        try:
            os.unlink(scratch)
        except OSError:
            pass


def snapshot(paths, content_cap):
    entries, blobs = [], []
    for path in paths:
        entry, content = file_state(path, content_cap)
        entries.append(entry)
        blobs.append(content)
    return {"op": "snapshot", "entries": entries}, blobs
