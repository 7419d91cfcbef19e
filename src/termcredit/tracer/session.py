"""Whole-session and single-segment entry points."""

from __future__ import annotations

from dataclasses import dataclass, field

from .events import Event
from .lines import LineStats, parse_records
from .procs import Marker, Process, track
from .summary import AccessSummary, EnvironmentLayer, summarize


@dataclass
class CommandTrace:
    seq: int
    events: list[Event]
    summary: AccessSummary
    pids: list[int]  # processes attributed to this command (the shell itself excluded)
    start_ts: float | None = None  # first s<SEQ> marker
    end_ts: float | None = None  # last e<SEQ> marker; None if the segment never closed


@dataclass
class SessionTrace:
    commands: dict[int, CommandTrace]  # by SEQ, in SEQ order
    unattributed: list[Event]  # shell activity outside any segment, orphans before markers
    processes: list[Process]  # every process instance, in order of first appearance
    stats: LineStats
    nonce: str | None
    shell_pid: int | None
    markers: list[Marker] = field(default_factory=list)

    @property
    def skipped_lines(self) -> int:
        return self.stats.skipped

    @property
    def attribution(self) -> dict[int, int | None]:
        """pid -> SEQ of the command that started it (last instance wins on pid reuse)."""
        return {p.pid: p.seq for p in self.processes if p.pid != self.shell_pid}

    def summary(self, seq: int) -> AccessSummary:
        cmd = self.commands.get(seq)
        return cmd.summary if cmd is not None else AccessSummary()


def parse_session(
    text: str, nonce: str | None = None, env: EnvironmentLayer | None = None
) -> SessionTrace:
    """Parse a whole session trace into per-command events and summaries.

    `nonce`: the sandbox's marker nonce; when None the first marker's nonce is adopted.
    Never raises on malformed text: bad lines are counted in `stats.skipped`.
    """
    records, stats = parse_records(text)
    stream = track(records, nonce)
    by_seq: dict[int, list[Event]] = {}
    unattributed: list[Event] = []
    for m in stream.markers:
        by_seq.setdefault(m.seq, [])
    for seq, event in stream.events:
        if seq is None:
            unattributed.append(event)
        else:
            by_seq.setdefault(seq, []).append(event)
    commands: dict[int, CommandTrace] = {}
    for seq in sorted(by_seq):
        starts = [m.ts for m in stream.markers if m.seq == seq and m.start]
        ends = [m.ts for m in stream.markers if m.seq == seq and not m.start]
        commands[seq] = CommandTrace(
            seq=seq,
            events=by_seq[seq],
            summary=summarize(by_seq[seq], env),
            pids=[p.pid for p in stream.processes if p.seq == seq and p.pid != stream.shell_pid],
            start_ts=starts[0] if starts else None,
            end_ts=ends[-1] if ends else None,
        )
    return SessionTrace(
        commands=commands,
        unattributed=unattributed,
        processes=stream.processes,
        stats=stats,
        nonce=stream.nonce,
        shell_pid=stream.shell_pid,
        markers=stream.markers,
    )


def summarize_segment(text: str, env: EnvironmentLayer | None = None) -> AccessSummary:
    """Summary of one command's stored segment (start marker to end marker).

    Everything in the text counts, markers excluded. Lines of a background process that an
    earlier command started cannot be told apart here; use parse_session on the whole
    session text for exact attribution.
    """
    records, _ = parse_records(text)
    return summarize((e for _, e in track(records).events), env)
