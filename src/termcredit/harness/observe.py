"""From raw traces to the facts later stages use: per-step accesses and file contents.

After each command (``after_step``): the session trace so far is parsed up to the command's
end (``tracer.TraceStream``: only the new chunk is read), which names the paths the command
may have written; the sandbox hashes them at once (a write that changed nothing makes no new
version) and keeps small text files, content-addressed under ``content/<sha256>`` in the
trial dir.

At the end of the episode (``finalize``): the session as a whole, so a background job's late
writes go to the command that started it, and reads that only an ``O_CREAT`` open suggested
(``touch`` of a new file) are dropped when the path did not exist. The stream has read all but
the last chunk by then; where it cannot vouch for the whole-trace result (see TraceStream) the
whole text is parsed again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ..records import CommandRecord, FileState, TraceCwd
from ..tracer import AccessSummary, EnvironmentLayer, SessionTrace, parse_session, summarize_segment
from ..tracer.stream import TraceStream
from ..trialdir import TrialPaths

CONTENT_CAP = 1 << 18  # text files up to 256 KiB keep their content for line ownership
# The whole-session parse holds every step's trace at once (each step's is capped at 20 MiB in
# the sandbox); past this, steps keep the accesses of their own segment (background jobs'
# late writes then go unattributed) so the harness's memory stays bounded per episode too.
SESSION_PARSE_CAP = 96 << 20
# paths hashed after one step (a `cp -r` of a whole tree): past it the step keeps the first ones
# and counts the rest in ``files_dropped``, so one step's check stays a few seconds
STEP_FILES_CAP = 20000


class StepObserver:
    def __init__(self, shell: Any, *, trial_dir: Path | None = None,
                 env: EnvironmentLayer | None = None, content_cap: int = CONTENT_CAP,
                 image_added: Any = None):
        self.shell = shell
        self.trial_dir = trial_dir
        self.env = env or EnvironmentLayer()
        self.content_cap = content_cap
        self._image_added = image_added  # () -> set of paths added since the image (docker diff)
        # the shell's trace chunks (start-up, one per command, tails), parsed as they come
        self._chunks: list[str] | None = getattr(shell, "session_trace", None)
        self._tokens: dict[int, str] = {}
        self.stream: TraceStream | None = (
            TraceStream(getattr(shell, "nonce", None), self.env, self._tokens)
            if self._chunks is not None else None)
        self._fed = 0

    def _catch_up(self) -> TraceStream | None:
        """Feed the chunks not yet read; past the session cap, stop streaming (None)."""
        if self.stream is None or self._chunks is None:
            return None
        while self._fed < len(self._chunks):
            chunk = self._chunks[self._fed]
            if self.stream.chars + len(chunk) > SESSION_PARSE_CAP:
                self.stream = None
                return None
            self.stream.feed(chunk)
            self._fed += 1
        return self.stream

    def after_step(self, rec: CommandRecord) -> None:
        """Content check: hash what this command may have written, right after it ran."""
        self._tokens[rec.seq] = rec.end_token
        stream = self._catch_up()
        # until finalize: a background job's later writes may still join an earlier step
        seg = stream.summary(rec.seq) if stream else summarize_segment(rec.trace, self.env)
        rec.accesses = seg
        if stream is not None:
            out = stream.tracker.out
            rec.trace_cwd = TraceCwd(out.cwd_start.get(rec.seq), out.cwd_end.get(rec.seq),
                                     sorted(out.cwd_used.get(rec.seq, ())))
        candidates = sorted(seg.written | seg.meta)
        if not candidates:
            return
        rec.files_dropped = max(0, len(candidates) - STEP_FILES_CAP)
        rec.files = self.shell.snapshot(candidates[:STEP_FILES_CAP], content_cap=self.content_cap)
        self.store(rec.files)

    def store(self, states: Iterable[FileState]) -> None:
        if self.trial_dir is None:
            return
        paths = TrialPaths(self.trial_dir)
        for st in states:
            if st.content is not None and st.sha256:
                path = paths.content(st.sha256)
                if not path.exists():
                    paths.content_dir.mkdir(parents=True, exist_ok=True)
                    path.write_text(st.content)

    def finalize(self, records: list[CommandRecord], session_text: str) -> list[str]:
        """Per-step accesses from the whole session (correct background attribution), and
        tampering seen in the trace: each step's reasons go to its record, the session-level
        ones (outside any step) are returned."""
        if len(session_text) > SESSION_PARSE_CAP:
            for rec in records:
                rec.trace_cwd = TraceCwd()  # unknown: the session was not parsed
            return [f"session trace of {len(session_text) >> 20} MiB not parsed as a whole "
                    f"(cap {SESSION_PARSE_CAP >> 20} MiB): per-step accesses only"]
        tokens = {rec.seq: rec.end_token for rec in records}
        session = self._streamed(tokens, session_text) or parse_session(
            session_text, self.shell.nonce, self.env, tokens=tokens)
        for rec in records:
            rec.integrity += [r for r in session.integrity.get(rec.seq, [])
                              if r not in rec.integrity]
        exists: dict[str, bool] = {}  # path -> exists after the steps so far
        added: set[str] | None = None
        for rec in records:
            cmd = session.commands.get(rec.seq)
            if cmd is None:
                rec.accesses = AccessSummary()
                rec.trace_cwd = TraceCwd()
                continue
            rec.trace_cwd = TraceCwd(cmd.cwd_start, cmd.cwd_end, sorted(cmd.cwd_used))
            summary = cmd.summary
            for path in sorted(summary.maybe_new & summary.read):
                known = exists.get(path)
                if known is None:  # not touched by an earlier step: was it in the image?
                    if added is None:
                        added = self._image_added() if self._image_added else set()
                    known = path not in added
                if not known:
                    summary.read.discard(path)
                    summary.derived_from.pop(path, None)
            rec.accesses = summary
            late = sorted(summary.written - {f.path for f in rec.files})
            room = max(0, STEP_FILES_CAP - len(rec.files))
            if late and room:  # written after the step's snapshot (background jobs): their state now
                rec.files = rec.files + self.shell.snapshot(late[:room],
                                                           content_cap=self.content_cap)
                self.store(rec.files)
            for path in summary.written:
                exists[path] = True
            for path in summary.deleted | summary.temporary:
                exists[path] = False
        return list(session.integrity.get(None, []))

    def _streamed(self, tokens: dict[int, str], session_text: str) -> SessionTrace | None:
        """The streamed session, when it read exactly ``session_text`` with these steps."""
        stream, self.stream = self._catch_up(), None  # once: a second finalize parses anew
        if stream is None or tokens != self._tokens or stream.chars != len(session_text):
            return None
        return stream.finish()
