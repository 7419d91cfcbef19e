"""Marker segments: which markers open and close a command, and what breaks the protocol.

The sandbox runs one persistent shell and brackets every command with the marker `cd`s of
`protocol.py` (`s<SEQ>` ... `e<SEQ>.<EXIT>.<TOKEN>`: failing chdirs, two per `cd` in bash's
logical mode). The shell's own syscalls belong to the command whose markers enclose them
(`SegmentRules.current`); the process table (`procs.py`) attributes every other process.
Other chdirs under the marker root (the shell's `cwd<PATH>` report) are never events.

The shell is the agent's own, so markers can be forged. The rules here record what does not
fit the protocol in `EventStream.integrity` (SEQ the anomaly belongs to, None: the session):
markers from other processes, end markers without the expected token (they do not close the
segment), duplicate and out-of-order markers, foreign nonces and unrecognised marker paths, and
activity of the shell itself between an end marker and the next start marker (the marker
redirections' `/dev/null` opens apart). A new shell is adopted only while there is no live one:
the old shell exited, or the candidate is a new root process (a restarted strace + bash; a
SIGKILLed shell leaves no `+++` line under `-e signal=none`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .lines import Syscall
from .protocol import is_cwd_report, parse_marker

if TYPE_CHECKING:
    from .procs import EventStream, Process

MAX_REASONS = 20  # per SEQ: an adversarial trace must not blow up the records
MAX_REASON_LEN = 300


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


class SegmentRules:
    """The marker half of the replay (`procs.Tracker` is the other): which process is the
    shell, which SEQ is open, and the integrity checks of the marker protocol."""

    def __init__(self, out: EventStream, tokens: dict[int, str] | None) -> None:
        self.out = out
        self.tokens = tokens  # SEQ -> its end marker's secret ("" or absent SEQ: see _forged)
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
        Later only a restarted one (after the shell died, the namespace's init forks a new
        bash, a sibling of the old one; older traces: a new strace + bash, a root process):
        a start marker from a sibling or a new root process that appeared after the old
        shell's last marker, while the old shell is dead: it exited, or it is never seen again
        from the new process's first line on (a SIGKILLed shell leaves no `+++` line under
        `-e signal=none`). So a command's process (the shell's descendant), or a background
        job of a dead shell, never takes over; nor does a child in a PID namespace, which
        strace shows as a root process (its clone returns a pid strace cannot match), while
        the shell lives."""
        if self.shell is None:
            return True
        sibling = proc.parent_proc is None or proc.parent_proc is self.shell.parent_proc
        if not start or not sibling or proc.first_line <= self.shell_line:
            return False
        return self.shell.exited or not self._seen_after(self.shell.pid, proc.first_line)

    def _seen_after(self, pid: int, line_no: int) -> bool:
        """Does the process `pid` make a call after `line_no`? (the process table knows)"""
        raise NotImplementedError

    def _cwd_report(self, path: str, proc: Process) -> bool:
        """The EXIT trap's `cd <MARKER_ROOT>/<NONCE>/cwd<PWD>` from the shell (restart cwd)."""
        if proc is not self.shell and self.shell is not None:
            return False
        return is_cwd_report(path, self.out.nonce)

