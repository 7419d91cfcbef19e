"""The shared host tracer: one long-lived bpftrace program, many traced sessions (#33).

``HostTracer.start()`` attaches ``ebpf_shared``'s program once (tens of seconds here);
``follow(pid, role)`` registers a process tree, from this (host) process, and returns its
``SessionTrace``; ``SessionTrace.close()`` waits for the tree to end and returns its strace
lines (``EbpfResult``), converted by the same ``Converter`` as the one-shot ``EbpfTracer``.
``SessionTrace.lines()`` gives them while the tree runs instead (``ebpf_stream``: for step
ends found from markers as they happen); ``close()`` then returns the rest.

Output is demultiplexed as it is read (``Demux``): each record goes to the session its tag
names, untagged of its tag, so each session's bytes are what ``ebpf_format`` reads for a
one-session program. bpftrace's ``Lost N events`` cannot say whose events they were: the count
goes to every session open at that moment, which flags them all (never a silent drop).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import secrets
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .ebpf import (BATCH_S, PIPE_BYTES, Boost, EbpfResult, _readlink, _tail, available, detach,
                   launch, wait_ready)
from .ebpf_fence import Fences, saw
from .ebpf_format import _LOST, Converter, Records, split_records
from .ebpf_program import numbering
from .ebpf_shared import KEY_BITS, REGISTER, shared_program, tag_of
from .ebpf_stream import StreamConverter
from .fsroot import FsRoot

MAP_KEYS = 65536  # live traced tasks of every session at once (each sandbox: 1024 pids at most)
SETTLE_S = 0.3  # after a tree's last exit: records of its tasks still in another CPU's buffer
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class SessionTrace:
    """One registered process tree: its records as they arrive, and who of it still lives."""

    tag: int
    root: int
    role: str
    cwd: bytes | None
    epoch_ns: int
    nonce: str
    data: bytearray = field(default_factory=bytearray)
    live: set[int] = field(default_factory=set)
    lost: int = 0
    registered: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)  # data, lost: Demux writes
    stream: StreamConverter | None = None  # once lines() was called
    hurry: Callable[[], None] = lambda: None  # have the reader read now, not after its batch
    # every record printed before the call is read: the time below which none can come
    # (``ebpf_fence``), or None where no fence could be made
    fence: Callable[[], int | None] = lambda: None
    fsroot: FsRoot | None = None  # the tree's filesystem, its links read while converting
    stray: int = 0
    _lost_fed: int = 0

    def close(self, timeout: float = 30.0) -> EbpfResult:
        """The session's lines, once its last task exited (or ``timeout`` passed: a task still
        running stays traced in the kernel, and its later records are dropped as unrouted).
        After ``lines()``: only the lines it has not returned yet."""
        if self.ended.wait(timeout) and self.fence() is None:
            time.sleep(SETTLE_S)
        self.closed = True
        if self.stream is not None:
            self._feed()
            lines = self.stream.finish()
            conv, lost = self.stream.conv, self.stream.lost
        else:
            records = self._take()
            conv = self._converter()
            lines, lost = conv.convert(records), records.lost
            self.stray += len(records.stray)
        self.drop()
        return EbpfResult(lines, lost, self.stray, conv.unpaired)

    def drop(self) -> None:
        """No more lines are wanted: late records count as unrouted; the root is let go."""
        self.closed = True
        if self.fsroot is not None:
            self.fsroot.close()

    def lines(self, now_ns: int | None = None) -> list[str]:
        """The lines of the records due by ``now_ns`` (the monotonic clock by default; see
        ``StreamConverter.poll``), in time order, not returned before."""
        if self.stream is None:
            self.stream = StreamConverter(self._converter())
        self._feed()
        return self.stream.poll(now_ns)

    def _feed(self) -> None:
        records = self._take()
        self.stray += len(records.stray)
        assert self.stream is not None
        self.stream.feed(records)

    def _take(self) -> Records:
        """The records come so far, with the events lost meanwhile; the host tracer outlives
        its sessions: it keeps no bytes of them once taken."""
        with self.lock:
            data, self.data = bytes(self.data), bytearray()
            lost, self._lost_fed = self.lost - self._lost_fed, self.lost
        records = split_records(data, self.nonce)
        records.lost += lost
        return records

    def _converter(self) -> Converter:
        return Converter(numbering(self.role), self.root, self.cwd, self.epoch_ns, self.fsroot)


class Demux:
    """Tagged bpftrace output -> each session's untagged records (see the module doc)."""

    def __init__(self, nonce: str, sessions: dict[int, SessionTrace],
                 fences: Fences | None = None) -> None:
        self.n = nonce.encode()
        self.fences = fences
        self.end = self.n + b"Z\n"
        self.sessions = sessions
        self.tail = b""
        self.ready = False
        self.lost = 0  # every session's, as bpftrace reported them
        self.unrouted = 0  # records whose session is unknown or closed
        self.stray: list[bytes] = []

    def feed(self, chunk: bytes) -> None:
        data, pos = self.tail + chunk, 0
        while True:
            start = data.find(self.n, pos)
            if start < 0:  # what is left: complete lines are gaps, a partial one waits
                cut = data.rfind(b"\n", pos) + 1
                self._gap(data[pos:cut] if cut > pos else b"")
                self.tail = data[max(cut, pos):]
                return
            stop = data.find(self.end, start + len(self.n))
            if stop < 0:
                self._gap(data[pos:start])
                self.tail = data[start:]
                return
            self._gap(data[pos:start])
            self._record(data[start + len(self.n):stop])
            pos = stop + len(self.end)

    def _gap(self, gap: bytes) -> None:
        for line in gap.splitlines():
            m = _LOST.fullmatch(line)
            if m:
                self.lost += int(m.group(1))
                for s in list(self.sessions.values()):  # follow() may add one meanwhile
                    if not s.closed:
                        with s.lock:
                            s.lost += int(m.group(1))
            elif line.strip():
                self.stray.append(line[:200])

    def _record(self, body: bytes) -> None:
        tag, sep, rest = body.partition(b":")
        if not sep or not tag.isdigit():
            self.stray.append(body[:200])
            return
        kind = rest[:1]
        if kind == b"R":
            self.ready = True
            return
        if kind == b"B" and tag == b"0" and self.fences is not None:
            saw(self.fences, rest[1:])
            return
        s = self.sessions.get(int(tag))
        if s is None or s.closed:
            self.unrouted += 1
            return
        if kind == b"G":
            s.registered.set()
            return
        if kind in (b"F", b"Q"):
            nums = rest[1:].split()
            if len(nums) == 3 and kind == b"F":
                s.live.add(int(nums[2]))
            elif len(nums) == 3:
                s.live.discard(int(nums[1]))
                if not s.live:
                    s.ended.set()
        with s.lock:
            s.data += self.n + rest + self.end


class HostTracer:
    """The host's one bpftrace program; sessions come and go while it runs."""

    def __init__(self) -> None:
        self.nonce = secrets.token_hex(12)
        self.key = secrets.randbelow((1 << KEY_BITS) - 1) + 1
        self.sessions: dict[int, SessionTrace] = {}
        self.fences = Fences(self.key)
        self.demux = Demux(self.nonce, self.sessions, self.fences)
        self._next = 1
        self._lock = threading.Lock()
        self._err = bytearray()
        self.proc: subprocess.Popen[bytes] | None = None
        self._boost: Boost | None = None
        self._hurry = threading.Event()

    def start(self) -> None:
        why = available()
        if why is not None:
            raise RuntimeError(why)
        # registration is taken from this process's PID namespace only (see ebpf_shared)
        text = shared_program(self.nonce, self.key, os.stat("/proc/self/ns/pid").st_ino)
        self.proc, self._prog = launch(text, MAP_KEYS)
        self._boost = Boost(self.proc.pid)
        self._readers = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for t in self._readers:
            t.start()
        if not wait_ready(self.proc, lambda: self.demux.ready):
            self.stop()
            err = _tail(self._err)
            if "Argument list too long" in err:  # E2BIG from the perf event's program array
                err += (" (a syscall tracepoint holds at most 64 BPF programs and this "
                        "program attaches 18 to execve's: at most 3 eBPF-traced termcredit "
                        "processes per host)")
            raise RuntimeError("bpftrace did not start: " + err)

    def follow(self, pid: int, role: str = "agent") -> SessionTrace:
        """Trace ``pid`` and its descendants from now on, as one session of ``role``. Call it
        while ``pid`` waits (before it forks), as with strace -p."""
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError("the host tracer is not running")
        with self._lock:  # follow() alone changes the sessions; the reader only looks
            tag = tag_of(self._next, role)
            self._next += 1
            for old in [t for t, x in self.sessions.items() if x.closed]:
                del self.sessions[old]  # its late records count as unrouted
            s = SessionTrace(tag, pid, role, _readlink(f"/proc/{pid}/cwd"),
                             time.time_ns() - time.monotonic_ns(), self.nonce, live={pid},
                             hurry=self._hurry.set, fence=self.fence, fsroot=FsRoot.of(pid))
            self.sessions[tag] = s
        # the probe runs inside this call: once it returns, pid is traced. Any other caller
        # (wrong key, or not in the host's PID namespace) only gets prctl's EINVAL
        _libc.prctl(ctypes.c_int(REGISTER), ctypes.c_ulong(pid), ctypes.c_ulong(tag),
                    ctypes.c_ulong(self.key), ctypes.c_ulong(0))
        return s

    def fence(self) -> int | None:
        """Every record printed so far has been read: its time bound (``ebpf_fence``)."""
        if self.proc is None or self._boost is None:
            return None
        with self._boost:
            return self.fences.fence(self._hurry.set)

    def stop(self) -> None:
        """Fence, then detach (SIGINT: bpftrace drains its buffers and exits)."""
        detach(self.proc, getattr(self, "_readers", []), getattr(self, "_prog", ""), self.fence)
        self._prog = ""

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        # after each read, let the pipe fill a moment: one wakeup per batch, not per record
        # (unless a session waits for its step's end: ``SessionTrace.hurry``)
        for chunk in iter(lambda: self.proc.stdout.read1(PIPE_BYTES), b""):  # type: ignore[union-attr]
            self.demux.feed(chunk)
            self._hurry.wait(BATCH_S)
            self._hurry.clear()

    def _read_err(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(1 << 16), b""):  # type: ignore[union-attr]
            self._err += chunk



_host: HostTracer | None = None
_host_lock = threading.Lock()
_atexit_done = False


def host_tracer(make: Callable[[], HostTracer] = HostTracer) -> HostTracer:
    """This process's one ``HostTracer``, started on the first call (its start takes tens of
    seconds: paid once per harness, not per session) and stopped when the process exits.
    A tracer that has died is replaced; one that fails to start raises, and the next call
    tries again."""
    global _host, _atexit_done
    with _host_lock:  # sessions start from several threads: start one program, not several
        if _host is not None and _host.proc is not None and _host.proc.poll() is None:
            return _host
        if _host is not None:  # died (bpftrace killed): free its readers and program file
            _host.stop()
            _host = None
        tracer = make()
        tracer.start()
        if not _atexit_done:
            atexit.register(stop_host_tracer)
            _atexit_done = True
        _host = tracer
        return tracer


def stop_host_tracer() -> None:
    """Stop this process's host tracer, if one runs (at exit; tests)."""
    global _host
    with _host_lock:
        if _host is not None:
            _host.stop()
            _host = None
