"""The eBPF tracer backend: bpftrace on the host follows one process tree and writes strace lines.

Runs outside every namespace of the traced processes (they cannot see, signal or ptrace it),
costs no ptrace stop, and leaves ptrace to the traced programs. ``available()`` says whether
this host can run it (root, bpftrace, tracefs with syscall tracepoints) and why not.
``EbpfTracer(root_pid, role)`` attaches to ``root_pid`` and its descendants; ``stop()`` returns
the strace lines of everything they did meanwhile (``ebpf_format``), the last line a
malformed ``ebpf: lost N events`` when the kernel dropped records, so the parser flags it.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .ebpf_fence import FenceScanner, Fences
from .ebpf_format import Converter, Records, split_records
from .ebpf_program import FLUSH_HZ, STRLEN, flush_probe, numbering, program
from .ebpf_wakeup import wakeup_env
from .fsroot import FsRoot

TRACEFS = "/sys/kernel/tracing"
PROBE = "syscalls/sys_enter_openat"
PERF_PAGES = 4096
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = 1031
BATCH_S = 0.005
MAP_KEYS = 8192  # live traced tasks: above a sandbox's pids limit (1024); maps are preallocated
START_TIMEOUT_S = 120.0  # bpftrace compiles ~100 programs first: tens of seconds on 2 CPUs


def ensure_tracefs() -> str | None:
    """Mount tracefs where missing (root only); None when the syscall tracepoints are there,
    else why not."""
    if not os.path.isdir(os.path.join(TRACEFS, "events", PROBE)):
        if os.geteuid() != 0:
            return f"{TRACEFS} has no syscall tracepoints and mounting it needs root"
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True)
        if not os.path.isdir(os.path.join(TRACEFS, "events", PROBE)):
            return f"no syscall tracepoints under {TRACEFS} (kernel without CONFIG_FTRACE_SYSCALLS?)"
    return None


def available() -> str | None:
    """None when the eBPF backend can run here; else one line saying why not."""
    if os.geteuid() != 0:
        return "the eBPF tracer needs root (CAP_BPF + CAP_PERFMON)"
    if shutil.which("bpftrace") is None:
        return "bpftrace is not installed (make setup installs it)"
    return ensure_tracefs()


@dataclass
class EbpfResult:
    lines: list[str]
    lost: int  # events the kernel's buffers dropped
    stray: int  # output that was neither a record nor a lost-events note
    unpaired: int  # exits whose entry record is missing

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


class EbpfTracer:
    def __init__(self, root_pid: int, role: str = "agent") -> None:
        self.root_pid = root_pid
        self.role = role
        self.nonce = secrets.token_hex(12)
        self.fences = Fences()  # its own random key
        self.numbering = numbering(role)
        self._out = bytearray()
        self._err = bytearray()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        why = available()
        if why is not None:
            raise RuntimeError(why)
        # the root's cwd before tracing: what strace's -y would read from /proc
        self.cwd = _readlink(f"/proc/{self.root_pid}/cwd")
        self.fsroot = FsRoot.of(self.root_pid)  # its links, read while converting
        self.epoch_ns = time.time_ns() - time.monotonic_ns()  # bpftrace's nsecs: CLOCK_MONOTONIC
        fence = (self.fences.key, os.stat("/proc/self/ns/pid").st_ino)
        self.proc, self._prog = launch(program(self.root_pid, self.nonce, self.role, fence),
                                       MAP_KEYS)
        scan = FenceScanner(self.nonce, self.fences).scan
        self._readers = [threading.Thread(target=_drain, args=(self.proc.stdout, self._out, scan),
                                          daemon=True),
                         threading.Thread(target=_drain, args=(self.proc.stderr, self._err),
                                          daemon=True)]
        for t in self._readers:
            t.start()
        ready = self.nonce.encode() + b"R"
        if not wait_ready(self.proc, lambda: ready in self._out):
            self.stop()
            raise RuntimeError("bpftrace did not start: " + _tail(self._err))

    def stop(self) -> EbpfResult:
        """Fence (every record made so far is read), detach (SIGINT) and convert."""
        detach(self.proc, getattr(self, "_readers", []), getattr(self, "_prog", ""),
               self.fence)
        self._prog = ""
        records = split_records(bytes(self._out), self.nonce)
        try:
            return self.convert(records)
        finally:
            if getattr(self, "fsroot", None) is not None:
                self.fsroot.close()

    def fence(self) -> int | None:
        """Every record printed so far has been read (``ebpf_fence``)."""
        if self.proc is None:
            return None
        with Boost(self.proc.pid):
            return self.fences.fence()

    def convert(self, records: Records) -> EbpfResult:
        conv = Converter(self.numbering, self.root_pid, getattr(self, "cwd", None),
                         getattr(self, "epoch_ns", 0), getattr(self, "fsroot", None))
        lines = conv.convert(records)
        return EbpfResult(lines, records.lost, len(records.stray), conv.unpaired)


def launch(text: str, map_keys: int) -> tuple[subprocess.Popen[bytes], str]:
    """bpftrace running program ``text`` (written to a file only root reads), and that file.
    Its perf buffers wake the reader once per WAKEUP_EVENTS records where ``ebpf_wakeup``
    turns that on (opt-in) and the program has its flush probe (the shared host program has
    none yet); the program's ``$1`` says which (the flush probe runs only then)."""
    with tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False) as f:
        f.write(text)
    # 16 MiB of perf buffer per CPU: bpftrace's default (64 pages) loses records in
    # bursts (a shell start-up's ld.so opens); losses are still counted and flagged.
    # More map keys than the default 4096: a map holds one entry per live traced task
    env, wakeup = dict(os.environ, BPFTRACE_STRLEN=str(STRLEN),
                       BPFTRACE_PERF_RB_PAGES=str(PERF_PAGES),
                       BPFTRACE_MAP_KEYS_MAX=str(map_keys)), 1
    if flush_probe() in text:  # batched only where the program announces the leftovers
        env, wakeup = wakeup_env(env)
    proc = subprocess.Popen(["bpftrace", "-q", f.name, str(wakeup)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:  # room for the batches the reader leaves in the pipe (see _drain)
        fcntl.fcntl(proc.stdout.fileno(), F_SETPIPE_SZ, PIPE_BYTES)  # type: ignore[union-attr]
    except OSError:
        pass
    return proc, f.name


def wait_ready(proc: subprocess.Popen[bytes], ready: Callable[[], bool]) -> bool:
    """Whether ``ready()`` came true before bpftrace exited or START_TIMEOUT_S passed; once
    it has, bpftrace goes to the idle class (see _idle)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    _idle(proc.pid)
    return True


def detach(proc: subprocess.Popen[bytes] | None, readers: list[threading.Thread],
           prog: str, fence: Callable[[], int | None] = lambda: None) -> None:
    """Stop bpftrace (SIGINT), its readers, its file. bpftrace drains at exit only the
    buffers the kernel has announced, and its flush probe is detached by then: so first a
    fence (every record made before now has been read), or where none can be made, two flush
    ticks (a record made before now is announced by the next one, see ``flush_probe``)."""
    if proc is not None and proc.poll() is None:
        if fence() is None:
            time.sleep(2 / FLUSH_HZ)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for t in readers:
        t.join(timeout=10)
    if prog:
        os.unlink(prog)


def _tail(err: bytearray) -> str:
    return bytes(err[-500:]).decode("utf-8", "replace").strip()


def _idle(pid: int) -> None:
    """bpftrace (every thread), once its probes are attached: the idle scheduling class.
    bpftrace 0.17 wakes for every record (a perf buffer, one wakeup per event); at normal
    priority each wakeup preempts the traced program on its CPU (``find /usr/lib`` on the
    host: 2.37x untraced; idle: 1.37x). Idle, it runs when a CPU has nothing else to do and
    takes the records in batches; the kernel's buffers (PERF_PAGES) hold them meanwhile, and
    what they cannot hold is counted as lost and flagged. (Compiling, before, runs at normal
    priority: idle, it could starve past START_TIMEOUT_S on a busy host.)"""
    _policy(pid, os.SCHED_IDLE)


def _policy(pid: int, policy: int) -> None:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:  # bpftrace has exited
        return
    for tid in tids:
        try:
            os.sched_setscheduler(int(tid), policy, os.sched_param(0))
        except OSError:  # a thread that just ended
            pass


class Boost:
    """bpftrace at normal priority while the host waits on it (a fence), idle otherwise: at
    idle priority on a host kept busy by other work it may not run for tens of milliseconds,
    and a step's end waits for it (step_overhead.py under load: p90 85 ms a step without)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.waiting, self.lock = pid, 0, threading.Lock()

    def __enter__(self) -> None:
        with self.lock:
            self.waiting += 1
            if self.waiting == 1:
                _policy(self.pid, os.SCHED_OTHER)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.waiting -= 1
            if self.waiting == 0:
                _policy(self.pid, os.SCHED_IDLE)


def _drain(stream, buf: bytearray,  # type: ignore[no-untyped-def]
           after: Callable[[bytearray], None] = lambda b: None) -> None:
    # after each read, let the pipe fill a moment: one wakeup per batch, not per record
    for chunk in iter(lambda: stream.read1(PIPE_BYTES), b""):
        buf += chunk
        after(buf)
        time.sleep(BATCH_S)


def _readlink(path: str) -> bytes | None:
    try:
        return os.readlink(path.encode())
    except OSError:
        return None
