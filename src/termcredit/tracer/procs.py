"""Process table, cwd tracking, marker segments and process -> command attribution.

The sandbox runs one persistent shell and brackets every command with
`cd /__termcredit__/<NONCE>/s<SEQ>` ... `cd /__termcredit__/<NONCE>/e<SEQ>[.<EXIT>[.<TOKEN>]]`
(failing chdirs, two per `cd` in bash's logical mode; the sandbox appends `$?` and a fresh
secret per command to the end marker). The shell's own syscalls belong to the command whose
markers enclose them; every other process belongs, for its whole life, to the command during
which its ancestor was forked off the shell. So background jobs stay with the command that
started them even when their lines appear in a later segment. Other chdirs under the marker
root (the sandbox's `cwd<PATH>` report) are never events.

The shell is the agent's own, so markers can be forged. The tracker records what does not fit
the protocol in `EventStream.integrity` (SEQ the anomaly belongs to, None: the session): markers
from other processes, end markers without the expected token (they do not close the segment),
duplicate and out-of-order markers, foreign nonces and unrecognised marker paths, and activity
of the shell itself between an end marker and the next start marker (the marker redirections'
`/dev/null` opens apart). A new shell is adopted only while there is no live one: the old shell
exited, or the candidate is a new root process (a restarted strace + bash; a SIGKILLed shell
leaves no `+++` line under `-e signal=none`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from . import fast
from .decode import parse_fd, parse_int, parse_str, struct_field
from .events import MARKER_ROOT, Event, arg_path, is_marker_path, norm, syscall_events
from .lines import Exit, Record, Syscall

CLONE_FS = 0x200
CLONE_CALLS = frozenset({"clone", "clone3", "fork", "vfork"})
_MARKER = re.compile(
    r"/__termcredit__/([0-9A-Fa-f]+)/([se])([0-9]{1,18})"
    r"(?:\.(-?[0-9]{1,10})(?:\.([0-9A-Fa-f]{1,64}))?)?/?"
)
MAX_REASONS = 20  # per SEQ: an adversarial trace must not blow up the records
MAX_REASON_LEN = 300
_CWD_REPORT = re.compile(r"/__termcredit__/[0-9A-Fa-f]+/cwd(?:/.*)?", re.S)
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


@dataclass(frozen=True, slots=True)
class Marker:
    seq: int
    start: bool  # s<SEQ> (True) or e<SEQ> (False)
    pid: int
    ts: float | None
    line_no: int
    exit_code: int | None = None  # e<SEQ>.<EXIT>: the command's $?
    token: str | None = None  # e<SEQ>.<EXIT>.<TOKEN>: the command's secret (None: old form)

    @property
    def name(self) -> str:
        """`s3`, `e3.0`, `e3.0.<token>`: the marker as the shell wrote it."""
        text = f"{'s' if self.start else 'e'}{self.seq}"
        if self.exit_code is not None:
            text += f".{self.exit_code}"
        if self.token is not None:
            text += f".{self.token}"
        return text


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


class MarkerPath(NamedTuple):
    nonce: str
    start: bool
    seq: int
    exit_code: int | None
    token: str | None


def parse_marker(path: str) -> MarkerPath | None:
    """(nonce, is_start, seq, exit code, token) of a segment marker path."""
    m = _MARKER.fullmatch(path)
    if m is None:
        return None
    code = int(m.group(4)) if m.group(4) is not None else None
    return MarkerPath(m.group(1), m.group(2) == "s", int(m.group(3)), code, m.group(5))


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

    def __init__(
        self,
        records: list[Record],
        nonce: str | None = None,
        tokens: dict[int, str] | None = None,
    ) -> None:
        self.records = records
        self.out = EventStream(nonce=nonce)
        self.tokens = tokens  # SEQ -> its end marker's secret ("" or absent SEQ: see _forged)
        self.live: dict[int, Process] = {}
        self.shell: Process | None = None
        self.current: int | None = None  # SEQ whose markers enclose the shell right now
        # Protocol state, for the integrity checks only (attribution uses `current`).
        self.open: int | None = None  # the live shell's open segment
        self.outside = False  # the live shell closed a segment and opened none since
        self.last_seq: int | None = None  # the SEQ the live shell started last
        self.shell_line = -1  # line of the current shell's last accepted marker
        self.started: set[int] = set()
        self.ended: set[int] = set()
        # pid -> (marker path, accepted) of that process's previous call when it was a marker
        # chdir: bash retries a failing `cd` with the verbatim name, so one `cd` is two calls
        self.just_marked: dict[int, tuple[str, bool]] = {}
        self.prev_mark: tuple[str, bool] | None = None  # just_marked of the call at hand
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
            self.prev_mark = self.just_marked.pop(rec.pid, None) if self.just_marked else None
            if isinstance(rec, Exit):
                proc.exited, proc.exit_code, proc.signal = True, rec.code, rec.signal
                self.live.pop(rec.pid, None)
                continue
            self._syscall(i, rec, proc)
        return self.out

    # ------------------------------------------------------------------ integrity
    def _flag(self, seq: int | None, reason: str) -> None:
        if self.tokens is not None and seq not in self.tokens:
            seq = None  # a step that was never run (a forged start marker's): the session's
        if len(reason) > MAX_REASON_LEN:  # paths in reasons are the agent's
            reason = reason[: MAX_REASON_LEN - 3] + "..."
        reasons = self.out.integrity.setdefault(seq, [])
        if reason in reasons or len(reasons) > MAX_REASONS:
            return
        reasons.append(reason if len(reasons) < MAX_REASONS else "(further reasons omitted)")

    def _blame(self, proc: Process) -> int | None:
        """The SEQ an anomaly of `proc` belongs to: a command's process belongs to its
        command; the shell to its open segment, else to the segment it ran last."""
        if proc is self.shell:
            return self.open if self.open is not None else self.last_seq
        return proc.seq

    def _outside_activity(self, what: str) -> None:
        self._flag(self.last_seq, f"shell activity outside any step: {what}")

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

    def _marker(self, sc: Syscall, proc: Process, path: str) -> None:
        prev = self.prev_mark
        retry = prev is not None and prev[0] == path
        accepted = self._accept(sc, proc, path, retry, retry and prev is not None and prev[1])
        self.just_marked[proc.pid] = (path, accepted)

    def _accept(self, sc: Syscall, proc: Process, path: str, retry: bool, was_ok: bool) -> bool:
        """Apply one marker chdir; True when it counts (shapes the segments). `retry`: the
        second call of the same `cd` (`was_ok`: the first counted), never reported twice."""
        parsed = parse_marker(path)
        who = f"from pid {proc.pid}"
        if parsed is None:
            if not retry and not self._cwd_report(path, proc):
                self._flag(self._blame(proc), f"unrecognised marker path {path!r} {who}")
            return False
        nonce, start, seq, code, token = parsed
        if self.out.nonce is None:
            self.out.nonce = nonce  # lock onto the first nonce: later fakes are ignored
        marker = Marker(seq, start, proc.pid, sc.ts, sc.line_no, code, token)
        if nonce != self.out.nonce:
            if not retry:
                why = f"marker {marker.name} with foreign nonce {nonce} {who}"
                self._flag(self._blame(proc), why)
            return False
        if retry:
            if was_ok:  # bash's second call of the same `cd`: same effect
                self.out.markers.append(marker)
            return was_ok
        if proc is not self.shell:
            if not self._may_adopt(proc, start):
                # a command's process (or a dead shell's) cannot open or close segments
                self._flag(self._blame(proc), f"marker {marker.name} {who}, not the shell")
                return False
            # The first shell, or a restarted one (the sandbox starts a new strace + bash
            # after a command ended the shell): a new root process, not a child of the old.
            self.shell, self.out.shell_pid = proc, proc.pid
            self.out.shell_pids.append(proc.pid)
            self.open, self.outside = None, False
        blame = self._blame(proc)
        if start:
            if seq in self.started:
                self._flag(blame, f"duplicate start marker {marker.name}")
            if self.open is not None:
                self._flag(blame, f"start marker {marker.name} while step {self.open} is open")
            self.started.add(seq)
            self.out.cwd_start.setdefault(seq, proc.cwd.path)
            self.open, self.outside, self.last_seq = seq, False, seq
            self.current = seq
        else:
            forged = self._forged(seq, token)
            if forged:
                self._flag(blame, f"forged end marker {marker.name} ({forged})")
                return False  # does not close the segment
            if seq in self.ended:
                self._flag(blame, f"duplicate end marker {marker.name}")
            elif self.open is None:
                self._flag(blame, f"end marker {marker.name} outside any step")
            elif self.open != seq:
                self._flag(blame, f"end marker {marker.name} while step {self.open} is open")
            self.ended.add(seq)
            self.out.cwd_end[seq] = proc.cwd.path
            if self.open == seq:
                self.open, self.outside = None, True
            if self.current == seq:
                self.current = None
        self.out.markers.append(marker)
        self.shell_line = sc.line_no
        return True

    def _forged(self, seq: int, token: str | None) -> str | None:
        """Why an end marker is not the sandbox's own (None: it is, or tokens are unknown).
        `tokens` maps SEQ to the command's secret; "" means not known for that SEQ (records
        from before end-marker tokens); a SEQ missing from it was never run."""
        if self.tokens is None:
            return None
        expected = self.tokens.get(seq)
        if expected == "":
            return None
        if expected is None:
            return f"no step {seq} was run"
        if token is None:
            return "no token"
        return None if token == expected else "wrong token"

    def _may_adopt(self, proc: Process, start: bool) -> bool:
        """May `proc`, whose marker this is, become the shell? The first shell: any process.
        Later only a restarted one (the sandbox starts a new strace + bash after the shell
        died): a start marker from a new root process that appeared after the old shell's last
        marker, while the old shell is dead: it exited, or it is never seen again from the new
        process's first line on (a SIGKILLed shell leaves no `+++` line under
        `-e signal=none`). So a command's process, or a background job of a dead shell, never
        takes over; nor does a child in a PID namespace, which strace shows as a root process
        (its clone returns a pid strace cannot match), while the shell lives."""
        if self.shell is None:
            return True
        if not start or proc.parent_proc is not None or proc.first_line <= self.shell_line:
            return False
        return self.shell.exited or not self._seen_after(self.shell.pid, proc.first_line)

    def _seen_after(self, pid: int, line_no: int) -> bool:
        """Does the process `pid` make a call after `line_no` (before the pid is reused)?
        A scan of the rest of the trace; only for a restart without the old shell's exit."""
        for rec in self.records:
            if rec.line_no <= line_no:
                continue
            if rec.pid == pid:
                return True
            if isinstance(rec, Syscall) and rec.name in CLONE_CALLS and rec.ret == pid:
                return False
        return False

    def _cwd_report(self, path: str, proc: Process) -> bool:
        """The EXIT trap's `cd <MARKER_ROOT>/<NONCE>/cwd<PWD>` from the shell (restart cwd)."""
        if proc is not self.shell and self.shell is not None:
            return False
        if self.out.nonce is None:
            return _CWD_REPORT.fullmatch(path) is not None
        head = f"{MARKER_ROOT}/{self.out.nonce}/cwd"
        return path == head or path.startswith(head + "/")


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


def track(
    records: list[Record], nonce: str | None = None, tokens: dict[int, str] | None = None
) -> EventStream:
    return Tracker(records, nonce, tokens).run()


