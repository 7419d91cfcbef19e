"""Process table, cwd tracking and process -> command attribution.

Replays the records of a session in order. The shell's own syscalls belong to the command whose
markers enclose them (`segments.py` keeps the markers and the checks of their protocol); every
other process belongs, for its whole life, to the command during which its ancestor was forked
off the shell. So background jobs stay with the command that started them even when their
lines appear in a later segment."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from . import fast
from .decode import parse_fd, parse_int, parse_str, struct_field
from .events import Event, arg_path, is_marker_path, norm, syscall_events
from .lines import Exit, Record, Syscall
from .segments import Marker, SegmentRules

CLONE_FS = 0x200
CLONE_CALLS = frozenset({"clone", "clone3", "fork", "vfork"})
OUTSIDE_OK = frozenset({"/dev/null"})  # the marker `cd`s' own `2>/dev/null` redirections


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


@dataclass
class EventStream:
    """Every event in trace order with the command it is attributed to."""

    events: list[tuple[int | None, Event]] = field(default_factory=list)
    processes: list[Process] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    shell_pid: int | None = None  # the current (last) shell
    shell_pids: list[int] = field(default_factory=list)  # every shell, restarts included
    nonce: str | None = None
    # protocol violations: SEQ the anomaly belongs to (None: the session) -> reasons
    integrity: dict[int | None, list[str]] = field(default_factory=dict)
    # the shell's cwd when a command's start marker / end marker ran (None: unknown)
    cwd_start: dict[int, str | None] = field(default_factory=dict)
    cwd_end: dict[int, str | None] = field(default_factory=dict)
    # SEQ -> cwds its processes resolved a relative path against (the cwd a command used)
    cwd_used: dict[int, set[str]] = field(default_factory=dict)


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


class Tracker(SegmentRules):
    """Second pass: replays records in order, keeping per-pid state.

    ``add`` takes the records a chunk at a time (a live episode's trace, step by step): each
    chunk is looked ahead over, then replayed. Where the look-ahead of a whole-trace replay
    could have reached into a later chunk (a child's lines before its parent's clone, an old
    shell's late lines), the replay is marked ``unsure``: its caller replays the whole trace.
    """

    def __init__(
        self,
        records: Sequence[Record] = (),
        nonce: str | None = None,
        tokens: dict[int, str] | None = None,
    ) -> None:
        super().__init__(EventStream(nonce=nonce), tokens)
        self.records: list[Record] = []
        self.live: dict[int, Process] = {}
        # Look-ahead: who cloned whom. A child's first lines often come before the parent's
        # `clone(...) = CHILD` line (fabricate's "delayed lines"), so look ahead for it.
        self.clone_of: dict[int, tuple[int, int]] = {}  # record index -> (parent, flags)
        self.pending_children: dict[int, deque[int]] = {}  # child pid -> record indexes
        self.consumed: set[int] = set()
        self.rootless: set[int] = set()  # pids seen so far as processes of unknown origin
        self.unsure = False
        self._seen_after_no: list[tuple[int, int]] = []  # (pid, line) answered False so far
        if records:
            self.add(records)

    def add(self, records: Sequence[Record]) -> None:
        start = len(self.records)
        self.records.extend(records)
        for i in range(start, len(self.records)):
            rec = self.records[i]
            if isinstance(rec, Syscall) and rec.name in CLONE_CALLS and rec.ok and rec.ret:
                if start and rec.ret in self.rootless:
                    self.unsure = True  # an earlier chunk's orphan may be this clone's child
                self.clone_of[i] = (rec.pid, clone_flags(rec))
                self.pending_children.setdefault(rec.ret, deque()).append(i)
        for i in range(start, len(self.records)):
            rec = self.records[i]
            proc = self.live.get(rec.pid) or self._spawn(rec.pid, rec.line_no)
            self.prev_mark = self.just_marked.pop(rec.pid, None) if self.just_marked else None
            if isinstance(rec, Exit):
                proc.exited, proc.exit_code, proc.signal = True, rec.code, rec.signal
                self.live.pop(rec.pid, None)
                continue
            self._syscall(i, rec, proc)

    def settle(self) -> bool:
        """After the last chunk: would a whole-trace replay have looked ahead differently?
        (True: this replay is exact.) A shell restart asked whether the old shell was seen
        again; the answer now covers the whole trace."""
        asked, self._seen_after_no = self._seen_after_no, []
        if any(self._seen_after(pid, line) for pid, line in asked):
            self.unsure = True
        return not self.unsure

    def _seq_of(self, proc: Process) -> int | None:
        return self.current if proc is self.shell else proc.seq

    def _spawn(self, pid: int, line_no: int, index: int | None = None) -> Process:
        """Create the process for `pid`, from its clone record if one is known."""
        queue = self.pending_children.get(pid)
        if index is None and queue:
            # the clone this child's early lines come before: its parent is in that call now
            # (a later clone by a process not yet born is a reuse of the pid, not this one)
            index = next((i for i in queue if self.clone_of[i][0] in self.live), None)
            if index is not None:
                queue.remove(index)
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
            self.rootless.add(pid)
        else:
            cwd = parent.cwd if flags & CLONE_FS else Cwd(parent.cwd.path)
            proc = Process(pid, parent.pid, self._seq_of(parent), cwd, line_no, parent, parent.argv)
            if self.outside and parent is self.shell:
                self._outside_activity(f"forked pid {pid}")
        self.live[pid] = proc
        self.out.processes.append(proc)
        return proc

    def _emit(self, proc: Process, events: Iterable[Event]) -> None:
        if events:  # most calls have none
            seq = self._seq_of(proc)
            self.out.events.extend((seq, e) for e in events)
            if self.outside and proc is self.shell:
                for e in events:
                    if e.path not in OUTSIDE_OK or e.dst is not None:
                        self._outside_activity(f"{e.kind.value} {e.path}")

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
            if self.outside and proc is self.shell:
                self._outside_activity(f"fchdir {proc.cwd.path}")
            return
        if name in ("execve", "execveat") and sc.ok and not sc.orphan:
            events = syscall_events(sc, proc.cwd.path)
            if events:
                self._note_relative(sc, proc)
            if events and events[0].argv is not None:
                proc.argv = events[0].argv
            self._emit(proc, events)
            return
        events = syscall_events(sc, proc.cwd.path)
        if events:
            self._note_relative(sc, proc)
        self._emit(proc, events)

    def _note_relative(self, sc: Syscall, proc: Process) -> None:
        """Record the cwd a call resolved a relative path against (AT_FDCWD or a legacy call)."""
        cwd = proc.cwd.path
        seq = self._seq_of(proc)
        if seq is None or cwd is None or not _relative_to_cwd(sc.args):
            return
        self.out.cwd_used.setdefault(seq, set()).add(cwd)

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
            if raw is not None and not raw.value.startswith("/"):
                self._note_relative(sc, proc)  # `cd sub` used the cwd it started from
            proc.cwd.path = target  # None when the cwd was unknown; resynced by AT_FDCWD
            if self.outside and proc is self.shell:
                self._outside_activity(f"chdir {target}")
            return True
        return False

    def _seen_after(self, pid: int, line_no: int) -> bool:
        """Does the process `pid` make a call after `line_no` (before the pid is reused)?
        A scan of the rest of the trace so far; only for a restart without the old shell's
        exit. A "no" is noted: a later chunk may still say yes (see ``settle``)."""
        for rec in self.records:
            if rec.line_no <= line_no:
                continue
            if rec.pid == pid:
                return True
            if isinstance(rec, Syscall) and rec.name in CLONE_CALLS and rec.ret == pid:
                return False
        self._seen_after_no.append((pid, line_no))
        return False


@fast.memoized
def _relative_to_cwd(args: tuple[str, ...]) -> bool:
    """Does a call with these arguments name a path relative to the cwd? A quoted relative
    path argument, and no dirfd other than AT_FDCWD in front of it (`unlinkat(3</d>, "x")` is
    relative to an open directory, not to the cwd). Quoted args of path calls are paths."""
    real_dirfd = False
    for arg in args:
        if arg.startswith('"'):
            s = parse_str(arg)
            if s is not None and s.value and not s.value.startswith("/") and not real_dirfd:
                return True
            real_dirfd = False
        elif arg.startswith(("-100", "AT_FDCWD")):
            real_dirfd = False
        elif arg[:1].isdigit() and "<" in arg:
            real_dirfd = True  # an fd with its path: the next path is relative to it
        else:
            real_dirfd = False
    return False


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


def attribute_events(
    records: list[Record], nonce: str | None = None, tokens: dict[int, str] | None = None
) -> EventStream:
    """Replay ``records``: every event with the command it belongs to, and the markers,
    processes and integrity reasons of the session."""
    return Tracker(records, nonce, tokens).out


