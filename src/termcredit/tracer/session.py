"""Whole-session and single-segment entry points."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .events import Event
from .lines import LineStats, parse_records
from .procs import EventStream, Process, attribute_events
from .segments import Marker
from .summary import AccessSummary, EnvironmentLayer, summarize


@dataclass
class CommandTrace:
    seq: int
    events: list[Event]
    summary: AccessSummary
    pids: list[int]  # processes attributed to this command (the shell itself excluded)
    start_ts: float | None = None  # first s<SEQ> marker
    end_ts: float | None = None  # last e<SEQ> marker; None if the segment never closed
    exit_code: int | None = None  # from the sandbox's `e<SEQ>.<EXIT>` end marker
    cwd_start: str | None = None  # the shell's cwd at the start marker (None: unknown)
    cwd_end: str | None = None  # the shell's cwd at the end marker (None: unknown/unclosed)
    cwd_used: set[str] = field(default_factory=set)  # cwds relative paths were resolved in


@dataclass
class SessionTrace:
    commands: dict[int, CommandTrace]  # by SEQ, in SEQ order
    unattributed: list[Event]  # shell activity outside any segment, orphans before markers
    processes: list[Process]  # every process instance, in order of first appearance
    stats: LineStats
    nonce: str | None
    shell_pid: int | None  # the last shell; `shell_pids` has all of them (restarts)
    markers: list[Marker] = field(default_factory=list)  # those that shaped the segments
    shell_pids: list[int] = field(default_factory=list)
    # what does not fit the marker protocol (forged or foreign markers, shell activity outside
    # any step, malformed lines): SEQ the anomaly belongs to (None: the session) -> reasons
    integrity: dict[int | None, list[str]] = field(default_factory=dict)

    @property
    def skipped_lines(self) -> int:
        return self.stats.skipped

    @property
    def flagged(self) -> bool:
        return any(self.integrity.values())

    @property
    def attribution(self) -> dict[int, int | None]:
        """pid -> SEQ of the command that started it (last instance wins on pid reuse)."""
        return {p.pid: p.seq for p in self.processes if p.pid not in self.shell_pids}

    def summary(self, seq: int) -> AccessSummary:
        cmd = self.commands.get(seq)
        return cmd.summary if cmd is not None else AccessSummary()


def parse_session(
    text: str,
    nonce: str | None = None,
    env: EnvironmentLayer | None = None,
    tokens: dict[int, str] | None = None,
) -> SessionTrace:
    """Parse a whole session trace into per-command events and summaries.

    `nonce`: the sandbox's marker nonce; when None the first marker's nonce is adopted.
    `tokens`: SEQ -> the secret the sandbox put in that command's end marker
    (`e<SEQ>.<EXIT>.<TOKEN>`); an end marker without it is forged: it closes nothing and is
    recorded in `integrity`. "" for a SEQ: its token is not known (not checked); a SEQ missing
    from `tokens` was never run, and reasons that would belong to it are session-level (None).
    None: tokens are not checked at all.
    Never raises on malformed text: bad lines are counted in `stats.skipped` (and recorded as
    a session-level integrity reason).
    """
    records, stats = parse_records(text)
    return assemble(attribute_events(records, nonce, tokens), stats, env)


def assemble(
    stream: EventStream,
    stats: LineStats,
    env: EnvironmentLayer | None = None,
    sorted_events: tuple[dict[int, list[Event]], list[Event]] | None = None,
    summary_of: Callable[[int, list[Event]], AccessSummary] | None = None,
) -> SessionTrace:
    """A SessionTrace from a replayed stream. ``sorted_events`` (SEQ -> its events, and the
    events of no SEQ; every marker's SEQ has an entry) and ``summary_of`` (SEQ, events ->
    summary): what a caller that parsed the trace as it came already holds
    (``stream.TraceStream``); by default both are made here."""
    integrity = {seq: list(reasons) for seq, reasons in stream.integrity.items()}
    if stats.skipped:
        n = stats.skipped
        integrity.setdefault(None, []).append(
            f"{n} malformed trace line{'' if n == 1 else 's'} skipped"
        )
    if sorted_events is None:
        by_seq: dict[int, list[Event]] = {}
        unattributed: list[Event] = []
        for m in stream.markers:
            by_seq.setdefault(m.seq, [])
        for seq, event in stream.events:
            if seq is None:
                unattributed.append(event)
            else:
                by_seq.setdefault(seq, []).append(event)
    else:
        by_seq, unattributed = sorted_events
    summary_of = summary_of or (lambda _seq, events: summarize(events, env))
    starts: dict[int, list[Marker]] = {}
    ends: dict[int, list[Marker]] = {}
    for m in stream.markers:
        (starts if m.start else ends).setdefault(m.seq, []).append(m)
    pids: dict[int, list[int]] = {}
    for p in stream.processes:
        if p.seq is not None and p.pid not in stream.shell_pids:
            pids.setdefault(p.seq, []).append(p.pid)
    commands: dict[int, CommandTrace] = {}
    for seq in sorted(by_seq):
        start, end = starts.get(seq), ends.get(seq)
        commands[seq] = CommandTrace(
            seq=seq,
            events=by_seq[seq],
            summary=summary_of(seq, by_seq[seq]),
            pids=pids.get(seq, []),
            start_ts=start[0].ts if start else None,
            end_ts=end[-1].ts if end else None,
            exit_code=end[-1].exit_code if end else None,
            cwd_start=stream.cwd_start.get(seq),
            cwd_end=stream.cwd_end.get(seq),
            cwd_used=set(stream.cwd_used.get(seq, ())),
        )
    return SessionTrace(
        commands=commands,
        unattributed=unattributed,
        processes=stream.processes,
        stats=stats,
        nonce=stream.nonce,
        shell_pid=stream.shell_pid,
        markers=stream.markers,
        shell_pids=stream.shell_pids,
        integrity=integrity,
    )


def summarize_segment(text: str, env: EnvironmentLayer | None = None) -> AccessSummary:
    """Summary of one command's stored segment (start marker to end marker).

    Everything in the text counts, markers excluded. Lines of a background process that an
    earlier command started cannot be told apart here; use parse_session on the whole
    session text for exact attribution.
    """
    records, _ = parse_records(text)
    return summarize((e for _, e in attribute_events(records).events), env)
