"""Fences: proof that every record made before now has reached user space (#33).

With batched wakeups (``ebpf_wakeup``) a CPU's last few records wait in its perf buffer until
more come or the flush tick announces them; even with a wakeup per record, the records of
different CPUs reach user space out of order. Waiting "long enough" (ticks, a settle time, a
hold) is a guess, and a wrong guess loses records silently. A fence replaces the guess:

The host pins one of its threads to each online CPU in turn and makes a call only the program
answers (``prctl(FENCE, seq, key)``: an option no kernel defines, a random 63-bit key only the
host knows, and only from the host's PID namespace, as registration is taken). On that CPU,
the probe prints a ``B cpu seq t`` record and then WAKEUP_EVENTS empty records, so the kernel
announces the buffer. A CPU's buffer is a ring read in order: once the host has read the B
record of CPU c, it has read every record printed on c before the fence. Once it has the B
record of every CPU, it has every record printed anywhere before the fence began, and the
records' time (``t``) below which nothing more can come (but a call still running, whose
record is printed at its exit: the harness fences once the traced commands have ended).

A CPU the host cannot run on (its own cpuset excludes it) cannot be fenced: ``fence`` then
returns None and the caller falls back to waiting for the flush tick, as before.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import secrets
import threading
import time
from collections.abc import Callable

from .ebpf_program import WAKEUP_EVENTS

FENCE = 0x74634642  # prctl option no kernel defines ("tcFB"): EINVAL for anyone else
FENCE_WAIT_S = 2.0  # bpftrace runs at idle priority: on a loaded host it reads late
_libc = ctypes.CDLL(None, use_errno=True)


def fence_probe(nonce: str, key: int, host_pidns: int) -> str:
    """The probe answering a fence (the shared program puts tag 0 before its B: the host's
    thread is in no session)."""
    return (f"tracepoint:syscalls:sys_enter_prctl /args->option == {FENCE} && "
            f"args->arg3 == {key} && "
            f"curtask->nsproxy->pid_ns_for_children->ns.inum == {host_pidns}/ {{\n"
            f'  printf("{nonce}B %d %lld %llu{nonce}Z\\n", cpu, (int64)args->arg2, nsecs);\n'
            f'  unroll({WAKEUP_EVENTS}) {{ printf(""); }}\n}}\n')


def online_cpus() -> list[int]:
    """The CPUs the kernel runs tasks on (each has a perf buffer of its own)."""
    try:
        with open("/sys/devices/system/cpu/online") as f:
            spec = f.read().strip()
    except OSError:
        return list(range(os.cpu_count() or 1))
    cpus: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


class Fences:
    """B records as they are read (``saw``), and fences that wait for theirs (``fence``)."""

    def __init__(self, key: int | None = None) -> None:
        """``key``: the fence call's secret (a fresh random one if None; the shared host
        tracer passes its registration key)."""
        self.key = key if key is not None else secrets.randbelow((1 << 63) - 1) + 1
        self._seq = itertools.count(1)
        self._cond = threading.Condition()
        self._seen: dict[int, dict[int, int]] = {}  # seq -> cpu -> t

    def saw(self, cpu: int, seq: int, t: int) -> None:
        with self._cond:
            got = self._seen.get(seq)
            if got is not None:  # a fence nobody waits for any more is not kept
                got[cpu] = t
                self._cond.notify_all()

    def fence(self, hurry: Callable[[], None] = lambda: None,
              timeout: float = FENCE_WAIT_S) -> int | None:
        """Fence every online CPU; the earliest fence time (bpftrace's ``nsecs``) once every
        record printed before it has been read, or None (a CPU could not be fenced, or its B
        record did not come within ``timeout``)."""
        seq = next(self._seq)
        cpus = online_cpus()
        with self._cond:
            self._seen[seq] = {}
        try:
            if not self._call_on(cpus, seq):
                return None
            deadline = time.monotonic() + timeout
            with self._cond:
                while len(self._seen[seq]) < len(cpus):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    hurry()
                    self._cond.wait(min(left, 0.002))
                got = self._seen[seq]
            if set(got) != set(cpus):  # a B record from elsewhere: the pinning did not hold
                return None
            return min(got.values())
        finally:
            with self._cond:
                self._seen.pop(seq, None)

    def _call_on(self, cpus: list[int], seq: int) -> bool:
        """The fence call on each CPU, from this thread pinned there (only this thread: the
        affinity of a thread, not of the process, is what pid 0 names)."""
        mask = os.sched_getaffinity(0)
        try:
            for cpu in cpus:
                try:
                    os.sched_setaffinity(0, {cpu})
                except OSError:
                    return False
                _libc.prctl(ctypes.c_int(FENCE), ctypes.c_ulong(seq), ctypes.c_ulong(self.key),
                            ctypes.c_ulong(0), ctypes.c_ulong(0))
        finally:
            os.sched_setaffinity(0, mask)
        return True


class FenceScanner:
    """The B records in a growing buffer of raw records (the one-shot tracer's output)."""

    def __init__(self, nonce: str, fences: Fences) -> None:
        self.start, self.end = nonce.encode() + b"B ", nonce.encode() + b"Z"
        self.fences = fences
        self.pos = 0

    def scan(self, buf: bytearray) -> None:
        while True:
            i = buf.find(self.start, self.pos)
            if i < 0:
                self.pos = max(self.pos, len(buf) - len(self.start))
                return
            j = buf.find(self.end, i)
            if j < 0:
                self.pos = i
                return
            self.pos = j
            saw(self.fences, bytes(buf[i + len(self.start):j]))


def saw(fences: Fences, body: bytes) -> None:
    """A B record's fields (``cpu seq t``), given to ``fences``; anything else is ignored."""
    parts = body.split()
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        fences.saw(int(parts[0]), int(parts[1]), int(parts[2]))
