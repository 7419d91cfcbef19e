"""eBPF records -> strace lines as they arrive, for step ends found while a session runs (#33).

``Converter.convert`` sorts a whole run's records by time, then replays them. A live session
cannot wait for the end: the shim's step ends are markers in the line stream. The records of
one session come from every CPU's buffer, so they reach user space out of time order (a
child's first call before its parent's fork record, a call before the chdir it followed).
``StreamConverter`` holds each record for ``window_ns`` of the host's monotonic clock (the
clock of bpftrace's ``nsecs``) past its own time, then replays what is due in time order:
the lines are those ``convert`` gives for the same records, as long as no record arrives more
than the window after its time.

A record that does (its CPU's buffer read late, or a C record of a call that blocked longer
than the window: C records are printed at the exit and timed at the entry) is replayed at the
next ``poll`` after the lines already out, and counted in ``late``: its line is still whole,
only its place differs. An S chunk whose record was already replayed is dropped and counted.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

from .ebpf_format import Converter, Enter, Records, lost_line

WINDOW_NS = 50_000_000  # well past bpftrace's batch wait and a perf buffer wakeup here


class StreamConverter:
    def __init__(self, conv: Converter, window_ns: int = WINDOW_NS,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.conv = conv
        self.window_ns = window_ns
        self.clock = clock
        self.held: list[tuple[int, int, object]] = []  # a heap of (time, arrival, item)
        self.enters: dict[tuple[int, int], Enter] = {}  # calls whose strings may still come
        self.loose: dict[tuple[int, int], list[list[int | bytes]]] = {}  # strings before calls
        self.seq = 0
        self.out_t = -1  # the time of the last item replayed
        self.late = 0  # items replayed after a later one (see the module doc)
        self.dropped_strings = 0
        self.lost = 0  # events lost, as reported so far
        self._lost_out = 0

    def feed(self, records: Records) -> None:
        """Take ``records`` (the next bytes' worth, in arrival order)."""
        self.lost += records.lost
        for kind, nums, text in records.items:
            chunks: list[list[int | bytes]] = []
            item = self.conv.read(self.seq, kind, nums, text, self.enters, chunks)
            self.seq += 1
            for chunk in chunks:
                self._string(chunk)
            if item is None:
                continue
            if isinstance(item[2], Enter) or (isinstance(item[2], tuple) and item[2][0] == b"C"):
                call: Enter = item[2] if isinstance(item[2], Enter) else item[2][1]
                for chunk in self.loose.pop((call.tid, call.t), []):
                    self._string(chunk)
            if item[0] < self.out_t:
                self.late += 1
            heapq.heappush(self.held, item)

    def poll(self, now_ns: int | None = None) -> list[str]:
        """The lines of every held record due by ``now_ns`` (default: the clock), in time
        order; then a lost-events line if the kernel dropped records since the last poll
        (it flags the step it falls in: the one running when the loss was reported)."""
        now = self.clock() if now_ns is None else now_ns
        return self._release(now - self.window_ns)

    def finish(self) -> list[str]:
        """The lines of every record still held (the session has ended)."""
        return self._release(None)

    # ------------------------------------------------------------------ inside
    def _release(self, due: int | None) -> list[str]:
        self.conv.forget()  # links read for an earlier batch may have changed since
        lines: list[str] = []
        while self.held and (due is None or self.held[0][0] <= due):
            t, _, item = heapq.heappop(self.held)
            self.out_t = max(self.out_t, t)
            line = self.conv.replay(item)
            if line is not None:
                lines.append(line)
            self._forget(item)
        if self.lost > self._lost_out:
            lines.append(lost_line(self.lost - self._lost_out))
            self._lost_out = self.lost
        self._prune(due)
        return lines

    def _string(self, chunk: list[int | bytes]) -> None:
        t, tid, i, k, text = chunk
        e = self.enters.get((tid, t))  # type: ignore[arg-type]
        if e is not None:
            e.strings.setdefault(i, {})[k] = text  # type: ignore[index,assignment]
        elif t <= self.out_t:  # type: ignore[operator]
            self.dropped_strings += 1  # its call's line is out (or its call never came)
        else:
            self.loose.setdefault((tid, t), []).append(chunk)  # type: ignore[arg-type]

    def _forget(self, item: object) -> None:
        """A replayed call's strings can change nothing more: a C record's line is out; an
        E record's (exec, clone) comes at its X (or never, if the task exits first), and its
        strings are read before that."""
        if isinstance(item, tuple) and item[0] == b"C":
            self.enters.pop((item[1].tid, item[1].t), None)
        elif isinstance(item, tuple) and item[0] in (b"X", b"Q"):
            for key in [k for k in self.enters if k[0] == item[1][1] and k[1] <= item[1][0]]:
                del self.enters[key]

    def _prune(self, due: int | None) -> None:
        """Strings whose call never came (its record lost) go once they are past due."""
        for key in [k for k in self.loose if due is None or k[1] <= due - self.window_ns]:
            self.dropped_strings += len(self.loose.pop(key))
