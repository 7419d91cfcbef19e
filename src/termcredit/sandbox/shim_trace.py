"""A shim session's trace as it streams from strace's FIFO (see shim.py): drained in batches,
a step's cut to its head and tail, handed over in whole lines; the shell's last cwd read back
from the EXIT trap's marker; the shell's state reports (under eBPF, a step's end). Runs inside
the sandbox (its source is sent ahead of shim_session's). Stdlib only.
"""
import os
import re
import time

try:  # imported as part of the package (tests); in the sandbox the sources come first
    from .shim_protocol import parse_traps
    from .shim_state import STATE_CAP, parse_report
except ImportError:
    pass

TRACE_HEAD, TRACE_TAIL = 12 << 20, 4 << 20  # a step's trace kept: head and tail, whole lines


class TraceStream:
    """Session's trace and state-report methods (a mixin: ``trace``, ``trace_fd``,
    ``trace_dropped``, ``mark``, ``cwd``, ``state_fd``, ``state_buf``, ``state_lost``, ``traps``
    and ``_flag`` are the session's)."""

    def take_trace(self, whole=False):
        """The trace so far, up to its last complete line (a line strace is still writing
        stays for the next piece, so no piece ends or starts with half a line)."""
        end = len(self.trace) if whole else self.trace.rfind(b"\n") + 1
        data = bytes(self.trace[:end])
        del self.trace[:end]
        return data

    def _cut_trace(self):
        """Bound a step's trace while it streams: keep its head and its tail (whole lines;
        the end marker is in the tail) and count what was dropped between them. Returns where
        the tail starts."""
        head = self.trace.rfind(b"\n", 0, TRACE_HEAD) + 1
        tail = self.trace.find(b"\n", len(self.trace) - TRACE_TAIL) + 1
        if head <= 0 or tail <= head:
            return head
        self.trace_dropped += tail - head
        del self.trace[head:tail]
        return head

    def _with_trace(self, *fds):
        """``fds`` and the trace pipe, where there is one (none under eBPF)."""
        return list(fds) + ([self.trace_fd] if self.trace_fd is not None else [])

    def _drain_trace(self):
        if self.trace_fd is None:  # traced from the host (eBPF)
            return True
        try:
            while True:
                chunk = os.read(self.trace_fd, 1 << 16)
                if not chunk:
                    return False
                self.trace += chunk
        except BlockingIOError:
            return True

    def _cwd_from_trace(self):
        key = ('chdir("%s/cwd' % self.mark).encode()
        i = self.trace.rfind(key)
        if i >= 0:  # the EXIT trap's report: the C-escaped path up to the closing quote
            j = self.trace.find(b'"', i + len(key))
            raw = self.trace[i + len(key) : j].decode("ascii", "replace")
            # strace's escapes are bytes: as the tracer decodes paths (surrogateescape)
            octets = raw.encode("latin-1", "replace").decode("unicode_escape", "replace")
            self.cwd = octets.encode("latin-1", "replace").decode("utf-8", "surrogateescape")

    def _report_end(self, token):
        """Under eBPF the shim sees no trace, so no end marker: the command has ended once
        bash wrote the last line of its state report (builtins run after the command, framed
        by the command's secret token, on a pipe the command never held). Returns (the time
        it was seen or None, the ``$?`` the report's ``__tc_e`` holds or None)."""
        end = self.state_buf.find(("Z%s\n" % token).encode())
        if end < 0:
            return None, None
        start = max(0, self.state_buf.rfind(("V%s\n" % token).encode(), 0, end))
        m = re.search(rb'^declare -- __tc_e="(-?[0-9]{1,10})"$', bytes(self.state_buf[start:end]),
                      re.M)
        return time.monotonic(), int(m.group(1)) if m else None

    def _read_state(self):
        """Drain the state pipe into the buffer (bounded: past STATE_CAP the report in progress
        is dropped, and the step's state is unknown)."""
        while True:
            try:
                chunk = os.read(self.state_fd, 1 << 16)
            except BlockingIOError:
                return True
            if not chunk:
                return False
            self.state_buf += chunk
            if len(self.state_buf) > STATE_CAP:
                # a huge variable is no tampering: this report is unknown, and what is left
                # of it before the next report's start is not junk
                # (under eBPF its end line is the step's end: keep what could hold it)
                del self.state_buf[: len(self.state_buf) - (64 if self.trace_fd is None else 0)]
                self.state_lost = True

    def _take_report(self, token):
        state, used, pre = parse_report(bytes(self.state_buf), token)
        if not used:
            return None
        del self.state_buf[:used]
        traps, ok = parse_traps(pre) if pre else (None, True)
        if traps is not None:
            self.traps = traps
        if (state is None or not ok) and not self.state_lost:
            self._flag("unexpected writes to the shell-state channel")
        self.state_lost = False
        return state
