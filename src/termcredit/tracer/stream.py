"""A session trace parsed as it arrives: one chunk per step, while the episode runs.

``parse_session`` reads a whole trace after the episode; ``TraceStream`` reaches the same
``SessionTrace`` a chunk at a time (the sandbox hands over each command's trace when the
command ends), so at the end of an episode only its last chunk is left to parse. Line
stitching, the process table and the marker rules keep their state between chunks; each
command's access summary is remade only when new events of it arrived (a background job's
late writes).

The whole-trace replay looks ahead (a child's lines printed before its parent's clone, an old
shell seen again after a restart) and checks end-marker tokens of every step run. Where that
could have answered differently here (the look-ahead reached into a later chunk, or the trace
broke the marker protocol: forged or foreign markers name steps not run yet), ``finish``
returns None and the caller parses the whole text, so the result is always the whole-trace
one.
"""

from __future__ import annotations

from .events import Event
from .lines import LineParser, iter_records
from .procs import Tracker
from .session import SessionTrace, assemble
from .summary import AccessSummary, EnvironmentLayer, summarize


class TraceStream:
    def __init__(self, nonce: str | None = None, env: EnvironmentLayer | None = None,
                 tokens: dict[int, str] | None = None) -> None:
        """``tokens``: SEQ -> end-marker secret, as for parse_session; the caller adds each
        step's before feeding its chunk (the dict is read as the chunks are replayed)."""
        self.env = env
        self.parser = LineParser()
        self.tracker = Tracker(nonce=nonce, tokens=tokens)
        self.chars = 0  # text fed so far
        self._line = 0  # number of the next line
        self._partial = ""  # a chunk's unterminated last line, until its end arrives
        self._done_events = 0  # tracker events already sorted into _by_seq
        self._done_markers = 0  # tracker markers whose SEQ has its _by_seq entry
        self._by_seq: dict[int, list[Event]] = {}
        self._unattributed: list[Event] = []
        self._summaries: dict[int, tuple[int, AccessSummary]] = {}  # SEQ -> (n events, summary)

    def feed(self, text: str) -> None:
        """The next chunk of the trace (any cut; a line cut in two waits for its end)."""
        self.chars += len(text)
        text = self._partial + text
        cut = text.rfind("\n") + 1
        self._partial, text = text[cut:], text[:cut]
        if text:
            self._replay(text, last=False)

    def _replay(self, text: str, *, last: bool) -> None:
        records = list(iter_records(text, self.parser, first_line=self._line, last=last))
        self._line += text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        self.tracker.add(records)
        out = self.tracker.out
        for m in out.markers[self._done_markers:]:
            self._by_seq.setdefault(m.seq, [])
        self._done_markers = len(out.markers)
        new = out.events[self._done_events:]
        self._done_events = len(out.events)
        for seq, event in new:
            if seq is None:
                self._unattributed.append(event)
            else:
                self._by_seq.setdefault(seq, []).append(event)

    def summary(self, seq: int) -> AccessSummary:
        """The accesses of command ``seq`` from the trace so far."""
        return self._summary(seq, self._by_seq.get(seq, []))

    def _summary(self, seq: int, events: list[Event]) -> AccessSummary:
        known = self._summaries.get(seq)
        if known is not None and known[0] == len(events):
            return known[1]
        summary = summarize(events, self.env)
        self._summaries[seq] = (len(events), summary)
        return summary

    def finish(self) -> SessionTrace | None:
        """The session, as parse_session of all the text fed would give it; None where that
        cannot be vouched for without a whole-trace replay (see the module's note)."""
        self._replay(self._partial, last=True)  # "" too: unfinished calls are counted
        self._partial = ""
        if not self.tracker.settle() or self.tracker.out.integrity:
            return None
        return assemble(self.tracker.out, self.parser.stats, self.env,
                        (self._by_seq, self._unattributed), self._summary)
