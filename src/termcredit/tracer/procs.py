"""Process table, cwd tracking, marker segments and process -> command attribution.

The sandbox runs one persistent shell and brackets every command with
`cd /__termcredit__/<NONCE>/s<SEQ>` ... `cd /__termcredit__/<NONCE>/e<SEQ>[.<EXIT>]`
(failing chdirs, two per `cd`; the sandbox appends `$?` to the end marker). The shell's own
syscalls belong to the command whose markers enclose them; every other process belongs,
for its whole life, to the command during which its ancestor was forked off the shell.
So background jobs stay with the command that started them even when their lines appear
in a later segment. Other chdirs under the marker root (the sandbox's `cwd<PATH>` report)
are never events.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import fast
from .decode import parse_fd, parse_int, parse_str, struct_field
from .events import Event, arg_path, is_marker_path, norm, syscall_events
from .lines import Exit, Record, Syscall

CLONE_FS = 0x200
CLONE_CALLS = frozenset({"clone", "clone3", "fork", "vfork"})
_MARKER = re.compile(r"/__termcredit__/([0-9A-Fa-f]+)/([se])([0-9]{1,18})(?:\.(-?[0-9]{1,10}))?/?")


class Cwd:
    """Mutable cwd cell, shared between processes created with CLONE_FS (threads)."""

    __slots__ = ("path",)

    def __init__(self, path: str | None) -> None:
        self.path = path


@dataclass(eq=False)
class Process:
    pid: int
    parent: int | None
    seq: int | None  # command this process belongs to (None: session plumbing / unknown)
    cwd: Cwd
    first_line: int
    parent_proc: Process | None = field(default=None, repr=False)
    argv: tuple[str, ...] | None = None  # of the last successful execve
    exit_code: int | None = None
    signal: str | None = None
    exited: bool = False


@dataclass(frozen=True, slots=True)
class Marker:
    seq: int
    start: bool  # s<SEQ> (True) or e<SEQ> (False)
    pid: int
    ts: float | None
    line_no: int
    exit_code: int | None = None  # e<SEQ>.<EXIT>: the command's $?


@dataclass
class EventStream:
    """Every event in trace order with the command it is attributed to."""

    events: list[tuple[int | None, Event]] = field(default_factory=list)
    processes: list[Process] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    shell_pid: int | None = None  # the current (last) shell
    shell_pids: list[int] = field(default_factory=list)  # every shell, restarts included
    nonce: str | None = None


def parse_marker(path: str) -> tuple[str, bool, int, int | None] | None:
    """(nonce, is_start, seq, exit code) of a segment marker path."""
    m = _MARKER.fullmatch(path)
    if m is None:
        return None
    code = int(m.group(4)) if m.group(4) is not None else None
    return m.group(1), m.group(2) == "s", int(m.group(3)), code


def clone_flags(sc: Syscall) -> int:
    if sc.name == "clone3":
        flags = parse_int(struct_field(sc.args[0], "flags") or "") if sc.args else None
        return flags or 0
    if sc.name == "clone":
        for arg in sc.args:
            key, sep, value = arg.partition("=")
            if sep and key.strip() == "flags":
                return parse_int(value) or 0
    return 0  # fork/vfork copy the fs struct


class Tracker:
    """Second pass: replays records in order, keeping per-pid state."""

    def __init__(self, records: list[Record], nonce: str | None = None) -> None:
        self.records = records
        self.out = EventStream(nonce=nonce)
        self.live: dict[int, Process] = {}
        self.shell: Process | None = None
        self.current: int | None = None  # SEQ whose markers enclose the shell right now
        # First pass: who cloned whom. A child's first lines often come before the parent's
        # `clone(...) = CHILD` line (fabricate's "delayed lines"), so look ahead for it.
        self.clone_of: dict[int, tuple[int, int]] = {}  # record index -> (parent, flags)
        self.pending_children: dict[int, deque[int]] = {}  # child pid -> record indexes
        self.consumed: set[int] = set()
        for i, rec in enumerate(records):
            if isinstance(rec, Syscall) and rec.name in CLONE_CALLS and rec.ok and rec.ret:
                self.clone_of[i] = (rec.pid, clone_flags(rec))
                self.pending_children.setdefault(rec.ret, deque()).append(i)

    def run(self) -> EventStream:
        for i, rec in enumerate(self.records):
            proc = self.live.get(rec.pid) or self._spawn(rec.pid, rec.line_no)
            if isinstance(rec, Exit):
                proc.exited, proc.exit_code, proc.signal = True, rec.code, rec.signal
                self.live.pop(rec.pid, None)
                continue
            self._syscall(i, rec, proc)
        return self.out

    def _seq_of(self, proc: Process) -> int | None:
        return self.current if proc is self.shell else proc.seq

    def _inside_shell(self, proc: Process) -> bool:
        """Is `proc` the current shell or one of its descendants (i.e. part of a command)?"""
        node: Process | None = proc
        while node is not None:
            if node is self.shell:
                return True
            node = node.parent_proc
        return False

    def _spawn(self, pid: int, line_no: int, index: int | None = None) -> Process:
        """Create the process for `pid`, from its clone record if one is known."""
        queue = self.pending_children.get(pid)
        if index is None and queue:
            index = queue.popleft()
        elif index is not None and queue and index in queue:
            queue.remove(index)
        parent, flags = None, 0
        if index is not None:
            self.consumed.add(index)
            parent_pid, flags = self.clone_of[index]
            parent = self.live.get(parent_pid)
        if parent is None:
            # Unknown origin (the session's root, or text cut from a longer trace): it
            # belongs to whatever command is running when it first shows up.
            proc = Process(pid, None, self.current, Cwd(None), line_no)
        else:
            cwd = parent.cwd if flags & CLONE_FS else Cwd(parent.cwd.path)
            proc = Process(pid, parent.pid, self._seq_of(parent), cwd, line_no, parent, parent.argv)
        self.live[pid] = proc
        self.out.processes.append(proc)
        return proc

    def _emit(self, proc: Process, events: Iterable[Event]) -> None:
        if events:  # most calls have none
            seq = self._seq_of(proc)
            self.out.events.extend((seq, e) for e in events)

    def _syscall(self, index: int, sc: Syscall, proc: Process) -> None:
        if (cwd := _cwd_shown(sc.args)) is not None:
            proc.cwd.path = cwd
        name = sc.name
        if name in CLONE_CALLS:
            if index in self.clone_of and index not in self.consumed and sc.ret is not None:
                old = self.live.pop(sc.ret, None)  # a live pid cloned again: it was reused
                if old is not None:
                    old.exited = True
                self._spawn(sc.ret, sc.line_no, index)
            return
        if name == "chdir" and not sc.orphan and self._chdir(sc, proc):
            return
        if name == "fchdir" and sc.ok:
            fd = parse_fd(sc.args[0]) if sc.args else None
            if fd is not None and fd.fs_path is not None:
                proc.cwd.path = norm(fd.fs_path)
            return
        if name in ("execve", "execveat") and sc.ok and not sc.orphan:
            events = syscall_events(sc, proc.cwd.path)
            if events and events[0].argv is not None:
                proc.argv = events[0].argv
            self._emit(proc, events)
            return
        self._emit(proc, syscall_events(sc, proc.cwd.path))

    def _chdir(self, sc: Syscall, proc: Process) -> bool:
        """Handle a chdir; True when fully handled (markers, successful moves)."""
        raw = parse_str(sc.args[0]) if sc.args else None
        target = arg_path(sc, proc.cwd.path, None, 0)
        if (raw is not None and is_marker_path(raw.value)) or (target and is_marker_path(target)):
            if raw is not None:
                self._marker(sc, proc, raw.value)
            if sc.ok and target is not None:
                proc.cwd.path = target
            return True  # never an event, whoever issued it
        if sc.ok:
            proc.cwd.path = target  # None when the cwd was unknown; resynced by AT_FDCWD
            return True
        return False

    def _marker(self, sc: Syscall, proc: Process, path: str) -> None:
        parsed = parse_marker(path)
        if parsed is None:
            return
        nonce, start, seq, code = parsed
        if self.out.nonce is None:
            self.out.nonce = nonce  # lock onto the first nonce: later fakes are ignored
        if nonce != self.out.nonce:
            return
        if proc is not self.shell:
            if self.shell is not None and (not start or self._inside_shell(proc)):
                return  # a command's process cannot open or close segments
            # The first shell, or a restarted one (the sandbox starts a new strace + bash
            # after a command ended the shell): a new root process, not a child of the old.
            self.shell, self.out.shell_pid = proc, proc.pid
            self.out.shell_pids.append(proc.pid)
        self.out.markers.append(Marker(seq, start, proc.pid, sc.ts, sc.line_no, code))
        if start:
            self.current = seq
        elif self.current == seq:
            self.current = None


@fast.memoized
def _cwd_shown(args: tuple[str, ...]) -> str | None:
    """The cwd that the last `AT_FDCWD</x>` argument shows (every one tells the real cwd at
    that moment); None when there is none."""
    cwd = None
    for arg in args:
        if arg.startswith(("-100<", "AT_FDCWD<")):
            fd = parse_fd(arg)
            if fd is not None and fd.fs_path is not None:
                cwd = norm(fd.fs_path)
    return cwd


def track(records: list[Record], nonce: str | None = None) -> EventStream:
    return Tracker(records, nonce).run()


