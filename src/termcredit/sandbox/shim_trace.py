"""A shim session's trace as it streams from strace's FIFO (see shim.py): drained in batches,
a step's cut to its head and tail, handed over in whole lines; the shell's last cwd read back
from the EXIT trap's marker. Runs inside the sandbox (its source is sent ahead of
shim_session's). Stdlib only.
"""
import os
import re
import time

TRACE_HEAD, TRACE_TAIL = 12 << 20, 4 << 20  # a step's trace kept: head and tail, whole lines


class TraceStream:
    """Session's trace methods (a mixin: ``trace``, ``trace_fd``, ``trace_dropped``, ``mark``
    and ``cwd`` are the session's)."""

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
