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
from dataclasses import dataclass

from .ebpf_format import Converter, Records, split_records
from .ebpf_program import STRLEN, numbering, program

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
        self.epoch_ns = time.time_ns() - time.monotonic_ns()  # bpftrace's nsecs: CLOCK_MONOTONIC
        with tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False) as f:
            f.write(program(self.root_pid, self.nonce, self.role))
            self._prog = f.name
        # 16 MiB of perf buffer per CPU: bpftrace's default (64 pages) loses records in
        # bursts (a shell start-up's ld.so opens); losses are still counted and flagged.
        # More map keys than the default 4096: a map holds one entry per live traced task
        env = dict(os.environ, BPFTRACE_STRLEN=str(STRLEN), BPFTRACE_PERF_RB_PAGES=str(PERF_PAGES),
                   BPFTRACE_MAP_KEYS_MAX=str(MAP_KEYS))
        self.proc = subprocess.Popen(["bpftrace", "-q", self._prog], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, start_new_session=True)
        try:  # room for the batches the reader leaves in the pipe (see _drain)
            fcntl.fcntl(self.proc.stdout.fileno(), F_SETPIPE_SZ, PIPE_BYTES)  # type: ignore[union-attr]
        except OSError:
            pass
        self._readers = [threading.Thread(target=_drain, args=(s, b), daemon=True)
                         for s, b in ((self.proc.stdout, self._out), (self.proc.stderr, self._err))]
        for t in self._readers:
            t.start()
        ready = self.nonce.encode() + b"R"
        deadline = time.monotonic() + START_TIMEOUT_S
        while ready not in self._out:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("bpftrace did not start: " + bytes(self._err[-500:]).decode(
                    "utf-8", "replace").strip())
            time.sleep(0.05)
        _idle(self.proc.pid)

    def stop(self) -> EbpfResult:
        """Detach (SIGINT: bpftrace drains its buffers and exits) and convert."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for t in getattr(self, "_readers", []):
            t.join(timeout=10)
        if getattr(self, "_prog", None):
            os.unlink(self._prog)
            self._prog = ""
        records = split_records(bytes(self._out), self.nonce)
        return self.convert(records)

    def convert(self, records: Records) -> EbpfResult:
        conv = Converter(self.numbering, self.root_pid, getattr(self, "cwd", None),
                         getattr(self, "epoch_ns", 0))
        lines = conv.convert(records)
        return EbpfResult(lines, records.lost, len(records.stray), conv.unpaired)


def _idle(pid: int) -> None:
    """bpftrace (every thread), once its probes are attached: the idle scheduling class.
    bpftrace 0.17 wakes for every record (a perf buffer, one wakeup per event); at normal
    priority each wakeup preempts the traced program on its CPU (``find /usr/lib`` on the
    host: 2.37x untraced; idle: 1.37x). Idle, it runs when a CPU has nothing else to do and
    takes the records in batches; the kernel's buffers (PERF_PAGES) hold them meanwhile, and
    what they cannot hold is counted as lost and flagged. (Compiling, before, runs at normal
    priority: idle, it could starve past START_TIMEOUT_S on a busy host.)"""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setscheduler(int(tid), os.SCHED_IDLE, os.sched_param(0))
        except OSError:  # a thread that just ended
            pass


def _drain(stream, buf: bytearray) -> None:  # type: ignore[no-untyped-def]
    # after each read, let the pipe fill a moment: one wakeup per batch, not per record
    for chunk in iter(lambda: stream.read1(PIPE_BYTES), b""):
        buf += chunk
        time.sleep(BATCH_S)


def _readlink(path: str) -> bytes | None:
    try:
        return os.readlink(path.encode())
    except OSError:
        return None
