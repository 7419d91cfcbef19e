"""TraceStream: a trace fed a chunk at a time gives parse_session's result, or says it cannot.

Every recorded fixture session is cut the way the sandbox cuts it (after each end marker) and at
random places (mid-line included); the streamed session must equal the whole-trace parse field
by field, or ``finish`` must decline (None) so that the caller parses the whole text.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from tracer_testutil import FIXTURES, NONCE, load

from termcredit.tracer import parse_session
from termcredit.tracer.session import SessionTrace
from termcredit.tracer.stream import TraceStream

CASES = sorted(p.stem for p in FIXTURES.glob("*.strace"))
TRIAL_50 = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "trial-50"


def key(s: SessionTrace) -> tuple:
    cmds = tuple(
        (c.seq, c.summary.as_dict(), tuple(repr(e) for e in c.events), tuple(c.pids), c.start_ts,
         c.end_ts, c.exit_code, c.cwd_start, c.cwd_end, tuple(sorted(c.cwd_used)))
        for c in s.commands.values())
    procs = tuple((p.pid, p.parent, p.seq, p.first_line, p.argv, p.exit_code, p.exited)
                  for p in s.processes)
    return (cmds, tuple(repr(e) for e in s.unattributed), procs, s.stats, s.nonce, s.shell_pid,
            tuple(s.markers), tuple(s.shell_pids), s.integrity)


def end_marker_cuts(text: str) -> list[str]:
    """The chunks the sandbox hands over: start-up, then each command up to its end marker."""
    chunks, cur = [], []
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        cur.append(line + "\n")
        if re.search(r'chdir\("/__termcredit__/[0-9a-f]+/e\d+', line):
            chunks.append("".join(cur))
            cur = []
    chunks.append("".join(cur))
    assert "".join(chunks) == text
    return chunks


def random_cuts(text: str, rng: random.Random, n: int = 6) -> list[str]:
    points = sorted(rng.sample(range(1, len(text)), min(n, len(text) - 1)))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


def streamed(chunks: list[str], **kw: object) -> SessionTrace | None:
    ts = TraceStream(**kw)  # type: ignore[arg-type]
    for chunk in chunks:
        ts.feed(chunk)
    return ts.finish()


@pytest.mark.parametrize("name", CASES)
def test_streamed_equals_whole_or_declines(name: str) -> None:
    text = load(name)
    whole = key(parse_session(text))
    rng = random.Random(name)
    for chunks in [end_marker_cuts(text), *(random_cuts(text, rng) for _ in range(4))]:
        got = streamed(chunks)
        if got is not None:
            assert key(got) == whole


def test_recorded_episode_streams_exactly() -> None:
    """A real 50-command episode cut at its end markers is never declined (the fast path is
    the one taken) and equals the whole parse."""
    from termcredit.trialdir import TrialPaths

    text = TrialPaths(TRIAL_50).session_trace_text()
    chunks = end_marker_cuts(text)
    assert len(chunks) >= 50
    got = streamed(chunks)
    assert got is not None
    assert key(got) == key(parse_session(text))


def test_most_fixtures_stream_at_end_markers() -> None:
    """Declining is for the rare look-ahead miss, not the common case."""
    ok = [n for n in CASES if streamed(end_marker_cuts(load(n))) is not None]
    assert len(ok) >= len(CASES) * 3 // 4, sorted(set(CASES) - set(ok))


def test_child_before_its_clone_in_the_next_chunk_declines() -> None:
    """A background child's first line arrives in one chunk, its parent's clone in the next:
    the whole parse links them (the child's writes go to the parent's command); the stream
    cannot, so it declines."""
    mark = f"/__termcredit__/{NONCE}"
    lines = [
        f'100 1.0 chdir("{mark}/s1") = -1 ENOENT (No such file or directory)',
        '100 1.1 clone(child_stack=NULL, flags=0x1200011) = 101',
        f'100 1.2 chdir("{mark}/e1.0") = -1 ENOENT (No such file or directory)',
        '102 1.3 openat(-100</w>, "/w/late", 0x241, 0644) = 3</w/late>',
        f'100 1.4 chdir("{mark}/s2") = -1 ENOENT (No such file or directory)',
        '101 1.5 clone(child_stack=NULL, flags=0x1200011) = 102',
        f'100 1.6 chdir("{mark}/e2.0") = -1 ENOENT (No such file or directory)',
    ]
    text = "\n".join(lines) + "\n"
    whole = parse_session(text)
    assert "/w/late" in whole.commands[1].summary.written  # linked by the look-ahead
    first, second = "\n".join(lines[:4]) + "\n", "\n".join(lines[4:]) + "\n"
    assert streamed([first, second]) is None
    assert key(streamed([text])) == key(whole)  # one chunk: the look-ahead is all there


def test_forged_marker_declines() -> None:
    mark = f"/__termcredit__/{NONCE}"
    text = "\n".join([
        f'100 1.0 chdir("{mark}/s1.") = -1 ENOENT (No such file or directory)',
        f'100 1.0 chdir("{mark}/s1") = -1 ENOENT (No such file or directory)',
        '100 1.1 clone(child_stack=NULL, flags=0x1200011) = 101',
        f'101 1.2 chdir("{mark}/e7.0.abc") = -1 ENOENT (No such file or directory)',
        f'100 1.3 chdir("{mark}/e1.0.feed") = -1 ENOENT (No such file or directory)',
    ]) + "\n"
    assert parse_session(text, tokens={1: "feed"}).integrity  # the whole parse flags it
    assert streamed([text], tokens={1: "feed"}) is None


def test_summary_so_far_then_late_write() -> None:
    """``summary(seq)`` is the command's accesses from the chunks so far; a background job's
    later write, in the next chunk, joins the command that started it."""
    mark = f"/__termcredit__/{NONCE}"
    one = "\n".join([
        f'100 1.0 chdir("{mark}/s1") = -1 ENOENT (No such file or directory)',
        '100 1.1 clone(child_stack=NULL, flags=0x1200011) = 101',
        '101 1.2 openat(-100</w>, "/w/a", 0x241, 0644) = 3</w/a>',
        f'100 1.3 chdir("{mark}/e1.0") = -1 ENOENT (No such file or directory)',
    ]) + "\n"
    two = "\n".join([
        f'100 2.0 chdir("{mark}/s2") = -1 ENOENT (No such file or directory)',
        '101 2.1 openat(-100</w>, "/w/b", 0x241, 0644) = 3</w/b>',
        f'100 2.2 chdir("{mark}/e2.0") = -1 ENOENT (No such file or directory)',
    ]) + "\n"
    ts = TraceStream()
    ts.feed(one)
    assert ts.summary(1).written == {"/w/a"}
    ts.feed(two)
    assert ts.summary(1).written == {"/w/a", "/w/b"}
    assert ts.summary(2).written == set()
    done = ts.finish()
    assert done is not None and key(done) == key(parse_session(one + two))
