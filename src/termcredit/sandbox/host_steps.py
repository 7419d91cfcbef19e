"""Sandbox sessions traced from the host by the shared eBPF tracer (#33).

Under ``tracer = "ebpf"`` the shim starts each session's nsinit without strace and paused;
``follow_sessions`` maps the pid the shim reports (the container's PID namespace) to the
host's (``hostpid``) and registers it with this process's one ``HostTracer``; only then does
the shim let nsinit go on, so every process the agent will ever run is a descendant of a
traced one. The shim sees no trace: it ends a command at the shell's state report, and
``HostSession.step`` then takes the command's lines from the host's stream, cut at the end
marker with the command's token (``StepCutter``), bounded to a head and a tail as the shim
bounds strace's, and flagged where the marker never came or the kernel lost events.

A pump thread converts the session's records while commands run, so the host never holds
more than a step's bounded lines (a flood of calls cannot grow the harness's memory).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..tracer.ebpf_host import SessionTrace, host_tracer
from ..tracer.ebpf_steps import StepCutter
from ..tracer.ebpf_stream import WINDOW_NS
from .hostpid import host_pid, pidns_of
from .shim_trace import TRACE_HEAD, TRACE_TAIL

REGISTER_WAIT_S = 10.0  # the tracer's acknowledgement of a registration (milliseconds here)
MARKER_WAIT_S = 10.0  # after the shim saw a command end: its end marker's line, at most
PUMP_S = 0.1  # how often a session's records are converted while it runs
SETTLE_S = 0.2  # a shell that died: its last lines, past the stream's 50 ms window
# Once the shim saw the command's report, bash's end marker follows within microseconds: the
# host fences the tracer (every record printed before is read, ``ebpf_fence``) and releases
# the lines up to the fence, not a guess. Where no fence can be made: the lines up to this
# much before now (records of the CPUs arrive at most 1.6 ms out of order here; one later
# than this is still converted, placed after: ebpf_stream's ``late``)
END_HOLD_NS = 2_000_000
POLL_S = 0.002
LOST = "ebpf: lost "


class HostTraceError(RuntimeError):
    """The host tracer could not follow a sandbox session."""


@dataclass
class Step:
    text: str  # the step's strace lines, bounded
    exit_code: int | None  # from its end marker (None: none came)
    dropped: int  # bytes cut out of the middle
    flags: list[str] = field(default_factory=list)


class HostSession:
    """One sandbox session's lines from the host tracer, cut into steps."""

    def __init__(self, trace: SessionTrace, mark: str) -> None:
        self.trace, self.mark = trace, mark
        self.cutter = StepCutter(mark)
        self.lock = threading.Lock()
        self.size = 0  # characters in cutter.lines
        self.dropped = 0  # cut from the pending lines since the last step
        self._flagged = 0  # cutter flags already reported
        self._stop = threading.Event()
        self._pump = threading.Thread(target=self._run, daemon=True)
        self._pump.start()

    def _run(self) -> None:
        while not self._stop.wait(PUMP_S):
            self.take()

    def take(self, now_ns: int | None = None) -> None:
        """Convert what came (``now_ns``: SessionTrace.lines's clock, to release early)."""
        with self.lock:
            if self._stop.is_set() and self.trace.closed:
                return
            lines = self.trace.lines(now_ns)
            self.cutter.feed(lines)
            self.size += sum(len(x) + 1 for x in lines)
            if self.size > TRACE_HEAD + 2 * TRACE_TAIL:
                self._bound()

    def _bound(self) -> None:
        """Keep the pending lines' head and tail (as the shim keeps strace's); between them
        only this session's markers stay, so no step loses its end."""
        lines, head, tail = self.cutter.lines, 0, len(self.cutter.lines)
        used = 0
        while head < len(lines) and used + len(lines[head]) + 1 <= TRACE_HEAD:
            used += len(lines[head]) + 1
            head += 1
        used = 0
        while tail > head and used + len(lines[tail - 1]) + 1 <= TRACE_TAIL:
            used += len(lines[tail - 1]) + 1
            tail -= 1
        keep = [x for x in lines[head:tail] if self.mark + "/" in x or x.startswith(LOST)]
        cut = sum(len(x) + 1 for x in lines[head:tail]) - sum(len(x) + 1 for x in keep)
        self.cutter.replace(lines[:head] + keep + lines[tail:])
        self.dropped += cut
        self.size -= cut

    def step(self, seq: int, token: str, ended: bool) -> Step:
        """Command ``seq``'s lines. ``ended``: the shim saw the shell's report after it, so its
        end marker is on its way (waited for, bounded); else (the shell died) the lines come
        so far are the step's."""
        deadline = time.monotonic() + (MARKER_WAIT_S if ended else SETTLE_S)
        got = None
        while got is None and time.monotonic() < deadline:
            self.take(self._due() if ended else None)
            with self.lock:
                got = self.cutter.cut(seq, token)
            if got is None:
                time.sleep(POLL_S)
        with self.lock:
            if got is None:
                lines, code = self.cutter.take_all(), None
            else:
                lines, code = got
            self.size -= min(self.size, sum(len(x) + 1 for x in lines))
            dropped, self.dropped = self.dropped, 0
            flags = self.cutter.flags[self._flagged:]
            self._flagged = len(self.cutter.flags)
        if got is None and ended:
            flags.append(f"no end marker for step {seq} from the host tracer")
        flags += [f"the host tracer {x[len('ebpf: '):]} during step {seq}"
                  for x in lines if x.startswith(LOST)]
        return Step("".join(x + "\n" for x in lines), code, dropped, flags)

    def _due(self) -> int:
        """The clock to release lines by: every record up to a fence, else the hold's."""
        fenced = self.trace.fence()
        if fenced is not None:
            return fenced + WINDOW_NS
        self.trace.hurry()
        return time.monotonic_ns() + WINDOW_NS - END_HOLD_NS

    def rest(self) -> str:
        """The lines not handed out as a step (verification time, a shell that ended)."""
        self.take()
        with self.lock:
            lines = self.cutter.take_all()
            self.size = 0
        return "".join(x + "\n" for x in lines)

    def close(self, timeout: float = 5.0) -> str:
        """Stop following: the rest of the lines, once the session's processes are gone (or
        ``timeout`` passed)."""
        self._stop.set()
        self._pump.join()
        text = self.rest()
        with self.lock:
            if self.trace.closed:
                return text
            tail = self.trace.close(timeout)
        return text + tail.text

    def abandon(self) -> None:
        """The sandbox is going away: stop converting; late records count as unrouted."""
        self._stop.set()
        self.trace.drop()


def follow_sessions(api: Any, container_id: str, described: dict[str, Any],
                    marks: dict[str, str]) -> dict[str, HostSession]:
    """Register each paused session's nsinit (``described[role]["pid"]``, the container's
    pid: the shim is the harness's, and nothing of the agent's has run yet) with this
    process's host tracer, started on first use."""
    outer = (api.inspect_container(container_id).get("State") or {}).get("Pid")
    if not isinstance(outer, int) or outer <= 0:
        raise HostTraceError(f"no host pid for container {container_id[:12]}")
    ns = pidns_of(outer)
    tracer = host_tracer()
    out: dict[str, HostSession] = {}
    for role, mark in marks.items():
        inner = (described.get(role) or {}).get("pid")
        pid = host_pid(ns, inner) if type(inner) is int and inner > 0 else None
        if pid is None:
            raise HostTraceError(f"the {role} session's nsinit is not in container "
                                 f"{container_id[:12]}")
        trace = tracer.follow(pid, role)
        if not trace.registered.wait(REGISTER_WAIT_S):
            trace.drop()
            raise HostTraceError(f"the host tracer did not take the {role} session")
        out[role] = HostSession(trace, mark)
    return out
