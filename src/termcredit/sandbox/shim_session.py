"""One traced session of the in-container shim (see shim.py): strace, the namespace init, bash.

Its trace stream is shim_trace.py's, what it does while the verifier runs shim_verifying.py's,
its process helpers shim_procs.py's. Runs inside the sandbox (its source is sent ahead of
shim.py's, after those). Stdlib only.
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

try:  # imported as part of the package (tests); in the sandbox the sources come first
    from .shim_protocol import INIT_SCRIPT, ansi_c_quote, command_script  # noqa: F401
    from .shim_state import dump_script, state_changes
    from .shim_procs import Capped, children_map, ctl_send, descendants, kill_pids
    from .shim_trace import TRACE_HEAD, TRACE_TAIL, TraceStream
    from .shim_verifying import Verifying
except ImportError:
    pass

GRACE_S = 1.0  # after killing a timed-out command's processes, wait this long before killing bash
AGENT_OOM_ADJ = 1000  # the agent's shell and all it starts: the OOM killer's first choice
BATCH_AFTER_S, BATCH_SLEEP_S = 0.01, 0.003
LOADER = "import os,sys;exec(compile(os.read(int(sys.argv[2]),1<<20),'termcredit-nsinit','exec'))"


class Session(TraceStream, Verifying):
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
        self.shell, self.start_error = "bash", None  # the shell's program; why it did not start
        self.ctl, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ctl.setblocking(False)
        src_r, src_w = os.pipe()
        os.write(src_w, nsinit_src.encode())  # well under a pipe's 64 KiB
        os.close(src_w)
        fifo = None
        if strace_argv is None:  # traced from the host (eBPF): no trace reaches the shim
            self.trace_fd = None
        else:
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

        argv = [sys.executable, "-c", LOADER, str(child.fileno()), str(src_r), role]
        # under eBPF nsinit waits for "go": the host registers its pid first (see resume)
        argv = argv + ["wait"] if fifo is None else strace_argv + [fifo, "--"] + argv
        self.paused = fifo is None
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     pass_fds=(child.fileno(), src_r), start_new_session=True,
                                     preexec_fn=pin)
        child.close()
        os.close(src_r)
        if self.paused:
            return  # resume() once the host follows self.proc.pid
        try:
            self._come_up()
        finally:
            os.unlink(fifo)

    def resume(self):
        """Under eBPF: the host now traces nsinit (and all it will fork); let it go on."""
        if self.paused:
            self.paused = False
            ctl_send(self.ctl, {"op": "go"})
            self._come_up()

    def _come_up(self):
        up, deadline = False, time.monotonic() + 30
        while not (up and self.init_pid) and time.monotonic() < deadline:
            select.select(self._with_trace(self.ctl), [], [], 0.05)
            self._drain_trace()
            for msg in self._ctl_messages():
                if msg.get("op") == "error":
                    raise RuntimeError("%s namespace: %s" % (self.role, msg.get("error")))
                up = up or msg.get("op") == "up"
            # strace lives as long as the session; nsinit's first process leaves once it forked
            if self.proc.poll() is not None and (self.trace_fd is not None or self.proc.returncode):
                raise RuntimeError("%s exited with %s" % (
                    "strace" if self.trace_fd is not None else "nsinit", self.proc.returncode))
        if not (up and self.init_pid):
            raise RuntimeError("%s namespace did not come up" % self.role)
        go_r, go_w = os.pipe()
        stop_r, stop_w = os.pipe()
        os.set_blocking(stop_r, False)
        self.watch_pipes, self.watch_done = (go_r, go_w, stop_r, stop_w), threading.Event()
        threading.Thread(target=self._watcher, daemon=True).start()

    def describe(self):
        # paused: the pid (in the container's PID namespace) the host's tracer must follow
        return {"role": self.role, "init_pid": self.init_pid,
                "pid": self.proc.pid if self.paused else None}

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
        ctl_send(self.ctl, {"op": "spawn", "cwd": cwd, "env": env, "shell": self.shell,
                            "oom_score_adj": AGENT_OOM_ADJ if self.role == "agent" else 0},
                 [in_r, out_w, err_w, st_w])
        for fd in (in_r, out_w, err_w, st_w):
            os.close(fd)
        for fd in (self.stdin_w, self.out_fd, self.err_fd, self.state_fd):
            if fd is not None:
                os.close(fd)
        self.stdin_w, self.out_fd, self.err_fd, self.state_fd = in_w, out_r, err_r, st_r
        self.state_buf, self.shell_state, self.state_lost = bytearray(), None, False
        self.traps = {}  # the agent's DEBUG/ERR traps, put aside between its commands
        self.env, self.bash_inner, deadline = env, None, time.monotonic() + 20
        self.start_error, spawned = None, False
        while not spawned and time.monotonic() < deadline and not self.ns_gone:
            select.select(self._with_trace(self.ctl), [], [], 0.05)
            self._drain_trace()
            for msg in self._ctl_messages():
                if msg.get("op") == "spawned":
                    self.bash_inner, spawned = msg["pid"], True
                    self.start_error = msg.get("error")
        self.bash_pid = self._outer_pid(self.bash_inner) if self.bash_inner else None
        self.alive = self.bash_pid is not None
        if self.alive:
            token = os.urandom(8).hex()
            try:
                os.write(self.stdin_w, (INIT_SCRIPT % self.mark + dump_script(token) + "\n").encode())
            except OSError:  # it ended at once (no such program, ...): the reason is on stderr
                self.alive = False
            deadline = time.monotonic() + 10
            while self.shell_state is None and time.monotonic() < deadline and self.alive:
                select.select([self.state_fd, self.ctl], [], [], 0.05)
                self._ctl_messages()
                self._read_state()
                self.shell_state = self._take_report(token)
        if not self.alive and self.start_error is None:
            self.start_error = self._start_failure()

    def _start_failure(self):
        """Why the shell is not running: the namespace's word, or what it said on stderr."""
        if self.ns_gone:
            return "the %s namespace is gone" % self.role
        said = Capped(2000)
        while select.select([self.err_fd], [], [], 0.2)[0] and self._read_into(self.err_fd, said):
            pass
        text = said.value().decode("utf-8", "replace").strip()
        return text or "%s did not start" % self.shell

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
        open_fds = [fd for fd in (self.out_fd, self.err_fd, self.trace_fd, self.ctl, self.state_fd)
                    if fd is not None]
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
            if ended_at is None and self.trace_fd is None:  # eBPF: the state report ends it
                ended_at, exit_code = self._report_end(token)
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
        if ended_at is not None and self.trace_fd is not None:  # strace ends the marker's line
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
            if self.trace_fd is None and not self.ns_gone:
                # eBPF: the EXIT trap's cwd is in the host's trace; the host sends "restart"
                header["restart"] = "pending"
            else:
                lost = self.restart(None)
                trace += self.take_trace()
                if lost is not None:
                    header["shell_lost"] = lost
        header.update(stdout_dropped=out.dropped, stderr_dropped=err.dropped,
                      trace_dropped=self.trace_dropped, integrity=self.take_integrity())
        if self.trace_fd is None:  # the host waits for the end marker only where bash made it
            header["ended"] = ended_at is not None
            if header["exit_code"] is None:  # unknown here: the host reads it from the marker
                header["exit_code"] = -1
        return header, out.value(), err.value(), trace

    def restart(self, cwd):
        """A new shell after one ended, in ``cwd`` (where the EXIT trap said the old one
        stood), else the last known cwd, else /. None, or why no shell could be started
        (the agent's files or processes left none)."""
        for where in (cwd, self.cwd, "/"):
            if isinstance(where, str) and os.path.isdir(where):
                break
        if not self.ns_gone:
            self.start(where, self.env)
        return None if self.alive else (self.start_error or "the shell did not restart")[:2000]

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
        deadline = time.monotonic() + (5 if self.trace_fd is not None else 0)
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

