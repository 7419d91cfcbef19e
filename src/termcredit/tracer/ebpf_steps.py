"""A streamed session's lines cut into steps at their end markers, on the host (#33).

Under strace the shim finds a step's end in strace's pipe inside the container: the shell's
failing ``cd`` into ``<mark>/e<SEQ>.<EXIT>.<TOKEN>`` (see ``protocol``), whose token is a fresh
secret of that command, so the agent cannot end a step early by writing the marker itself.
Under eBPF the lines reach the host (``SessionTrace.lines()``), and so the same rule runs
here: a step's lines are those up to its end marker's line, once a marker with its token came;
a marker with the wrong token is flagged as forged and waited past. The parser then cuts the
segment at the markers as for strace.
"""

from __future__ import annotations

import time
from collections.abc import Callable

POLL_S = 0.01


class StepCutter:
    def __init__(self, mark: str) -> None:
        self.mark = mark  # the session's marker directory (protocol.marker_dir)
        self.lines: list[str] = []  # streamed, not yet handed out as a step
        self.flags: list[str] = []
        self._scanned = 0  # lines already searched for the awaited marker

    def feed(self, lines: list[str]) -> None:
        self.lines += lines

    def replace(self, lines: list[str]) -> None:
        """Put ``lines`` in place of the pending ones (a bound cut some out): searched anew."""
        self.lines, self._scanned = lines, 0

    def take_all(self) -> list[str]:
        """Every pending line, handed out (a step whose marker never came; the session's rest)."""
        out = self.lines
        self.replace([])
        return out

    def cut(self, seq: int, token: str) -> tuple[list[str], int] | None:
        """Step ``seq``'s lines (up to and with its end marker) and its exit code, once its
        marker with ``token`` came; None until then."""
        key = f'chdir("{self.mark}/e{seq}.'
        for i in range(self._scanned, len(self.lines)):
            j = self.lines[i].find(key)
            if j < 0:
                continue
            body = self.lines[i][j + len(key):].partition('"')[0]
            code, _, got = body.partition(".")
            if got == token and code.lstrip("-").isdigit():
                out = self.lines[: i + 1]
                del self.lines[: i + 1]
                self._scanned = 0
                return out, int(code)
            reason = f"forged end marker for step {seq}"
            if reason not in self.flags:
                self.flags.append(reason)
        self._scanned = len(self.lines)
        return None

    def wait(self, poll: Callable[[], list[str]], seq: int, token: str, timeout: float,
             clock: Callable[[], float] = time.monotonic) -> tuple[list[str], int] | None:
        """``cut`` once ``poll`` (a session's ``lines``) has brought the marker; None when
        ``timeout`` seconds passed without it (the caller flags the step)."""
        deadline = clock() + timeout
        while True:
            self.feed(poll())
            got = self.cut(seq, token)
            if got is not None or clock() >= deadline:
                return got
            time.sleep(POLL_S)
