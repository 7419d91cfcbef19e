"""The fast paths (tracer/fast.py) change speed only: every result equals the general path's."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tracer_testutil import FIXTURES

from termcredit.tracer import fast, parse_records, parse_session, summarize_segment
from termcredit.tracer import decode as d
from termcredit.tracer.events import HANDLERS, syscall_events
from termcredit.tracer.lines import LineParser, Syscall, _fast_body
from termcredit.tracer.procs import Process
from termcredit.trialdir import TrialPaths

TRIAL = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "trial-50"
SESSION = Path("trial-50")  # the benchmark's whole 50-command session, see read()
TRACES = sorted(FIXTURES.glob("*.strace")) + [SESSION]
SETTINGS = settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def read(path: Path) -> str:
    if path == SESSION:
        return TrialPaths(TRIAL).session_trace_text()
    return path.read_text(encoding="ascii", errors="surrogateescape")


def both(fn, *args):  # type: ignore[no-untyped-def]
    """fn(*args) with the fast paths on (cold and warm memo tables) and off."""
    fast.clear_memos()
    cold = fn(*args)
    warm = fn(*args)
    with fast.slow_path():
        slow = fn(*args)
    return cold, warm, slow


def proc_view(p: Process) -> tuple:
    parent = p.parent_proc.pid if p.parent_proc is not None else None
    return (p.pid, p.parent, p.seq, p.cwd.path, p.first_line, parent, p.argv, p.exit_code,
            p.signal, p.exited)  # fmt: skip


def session_view(text: str) -> tuple:
    t = parse_session(text)
    return (t.commands, t.unattributed, [proc_view(p) for p in t.processes], t.stats, t.nonce,
            t.shell_pid, t.markers, t.shell_pids,
            {seq: c.summary.as_dict() for seq, c in t.commands.items()})  # fmt: skip


def records_view(text: str) -> tuple:
    records, stats = parse_records(text)
    # the dataclass == compares floats by value; repr also tells 0.0 from -0.0 and types
    return records, stats, [repr(r) for r in records]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_records_and_session_identical(path: Path) -> None:
    text = read(path)
    cold, warm, slow = both(records_view, text)
    assert cold == slow and warm == slow
    cold, warm, slow = both(session_view, text)
    assert cold == slow and warm == slow
    cold, warm, slow = both(lambda t: summarize_segment(t).as_dict(), text)
    assert cold == slow and warm == slow


def test_fast_path_takes_most_lines() -> None:
    """Guard against a fast path that silently stopped matching (the equality would hold)."""
    lines = read(SESSION).split("\n")[:-1]
    calls = [m.group(3) for ln in lines if (m := fast.ROWS.fullmatch(ln)) and m.group(1)]
    fast_shaped = [body for body in calls if _fast_body(body)]
    assert len(fast_shaped) > 0.85 * len(lines)  # the rest: exits, unfinished, resumed
    # the memo hands out the same tuple for the same body
    assert _fast_body(fast_shaped[0]) is _fast_body(fast_shaped[0])


# --- the same on mutated and synthetic text -------------------------------------------
SPECIAL = st.sampled_from(
    list('"\\<>()[]{},=?.|+- \t\r\x1c\x85\xa0é0123456789x')
    + ["<unfinished ...>", "<... openat resumed>", " = ", "+++ exited with 0 +++", "...", ", "]
    + ["(deleted)", "\\377", "-100</w>", '"a"...', '["a", "b"]', " ENOENT (x)", "0x10"]
)


@lru_cache(maxsize=1)
def fixture_lines() -> list[str]:
    return [line for p in TRACES[:-1] for line in read(p).split("\n")[:-1]]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    lines = fixture_lines()
    start = draw(st.integers(0, len(lines) - 1))
    chunk = list(lines[start : start + draw(st.integers(1, 20))])
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(chunk) - 1))
        line = chunk[i]
        a = draw(st.integers(0, len(line)))
        b = draw(st.integers(a, min(len(line), a + 6)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "truncate", "dup", "swap"]))
        if op == "delete":
            chunk[i] = line[:a] + line[b:]
        elif op == "insert":
            chunk[i] = line[:a] + draw(SPECIAL) + line[a:]
        elif op == "replace":
            chunk[i] = line[:a] + draw(st.one_of(SPECIAL, st.text(max_size=3))) + line[b:]
        elif op == "truncate":
            chunk[i] = line[:a]
        elif op == "dup":
            chunk.insert(i, line)
        else:  # reorders `<unfinished ...>` / resumed / complete lines of a pid
            j = draw(st.integers(0, len(chunk) - 1))
            chunk[i], chunk[j] = chunk[j], chunk[i]
    return "\n".join(chunk) + "\n"


@SETTINGS
@given(mutated())
def test_mutated_lines_identical(text: str) -> None:
    cold, warm, slow = both(records_view, text)
    assert cold == slow and warm == slow
    cold, warm, slow = both(session_view, text)
    assert cold == slow and warm == slow


def fed_one_by_one(lines: list[str]) -> tuple:
    """LineParser.feed on each line as given (no split: `\\r`, `\\n` endings stay)."""
    parser = LineParser()
    records = [parser.feed(line, i) for i, line in enumerate(lines)]
    parser.finish()
    return records, parser.stats, [repr(r) for r in records]


@SETTINGS
@given(mutated(), st.sampled_from(["", "\r", "\n", "\r\n", " ", "\t"]))
def test_feed_identical(text: str, ending: str) -> None:
    lines = [line + ending for line in text.split("\n")[:-1]]
    cold, warm, slow = both(fed_one_by_one, lines)
    assert cold == slow and warm == slow


SOUP = st.lists(st.one_of(SPECIAL, st.text(max_size=4)), max_size=30).map("".join)


@SETTINGS
@given(SOUP)
@example('"a\\", "b"')  # an escaped quote: one argument, not two
@example(', ""')  # no first argument
@example('-100</w>, "a", 0\x1c')  # strip() also removes \x1c..\x1f, \x85, \xa0
@example('-100</w>, "a", 0\xa0')
@example('"a" , "b"')
@example('3</x>(deleted), "a"')
@example('1, 2, 3, 4, 5, 6, 7, ["a", "b"]..., "c"..., <x>y')
@example("\ud800, \udcc3\udca9")
def test_call_soup_identical(soup: str) -> None:
    text = (f"7 1.5 openat({soup}) = 3</w/a>\n"
            f'8 2.5 execve("/b", [{soup}], 0x1) = {soup}\n'
            f"9 3.0 x({soup}\n"
            f"9 3.5 <... x resumed>{soup}) = -1 ENOENT (x)\n"
            f"10 4.0 unlink({soup}) = 0 <unfinished ...>\n")  # fmt: skip
    cold, warm, slow = both(records_view, text)
    assert cold == slow and warm == slow


DECODERS = [d.parse_str, d.parse_fd, d.parse_int, d.parse_str_array, d.parse_annotation,
            d.unescape, d.decode_text, d.split_top, lambda t: d.split_top(t, 1)]  # fmt: skip


ANY_TEXT = st.text(st.characters(exclude_categories=()))  # lone surrogates too


@SETTINGS
@given(st.one_of(SOUP, ANY_TEXT))
@example("\udcc3\udca9")  # surrogate-escaped bytes that form UTF-8: decoding changes them
@example('"a\ud800b"')
@example("3</a\udcffb>")
def test_decoders_identical(text: str) -> None:
    for fn in DECODERS:
        cold, warm, slow = both(fn, text)
        assert cold == slow and warm == slow, fn
        assert type(cold) is type(slow)


EDGE_LINES = [
    '5 1.0 openat(-100</w>, "a", 0x2) = 3</w/a (deleted)>',  # strace < 5.19
    '5 1.1 openat(-100</w>, "b", 0x2) = 3</w/b>(deleted)',
    '5 1.2 openat(-100</w>, "c", 0x2) = 3</w/c> (deleted) ENOENT',
    '5 1.3 renameat2(-100</a>, "x", -100</b>, "y", 0) = 0',  # the last cwd shown wins
    '5 1.4 mkdir("rel", 0777) = 0',
    '5 1.5 foo(a) = 0 <unfinished ...>',
    '5 1.6 <... foo resumed>) = 0',
    '6 1.7 openat(-100</w>, "d", 0x241) = 3</w/d>',
    '6 1.8 +++ exited with 0 +++',
    '7 1.9  openat(-100</w>, "e", 0) = 3</w/e>',  # two spaces, a tab: _PREFIX's \s+
    '7 2.0\topenat(-100</w>, "f", 0) = 3</w/f>',
    '7    2.1 openat(-100</w>, "g", 0 <unfinished ...>',
    '7 2.2 <... openat resumed>) = 3</w/g>',
]


@pytest.mark.parametrize("ending", ["", "\r", "\n", "\r\n"])
def test_edge_lines_identical(ending: str) -> None:
    lines = [line + ending for line in EDGE_LINES]
    cold, warm, slow = both(fed_one_by_one, lines)
    assert cold == slow and warm == slow
    cold, warm, slow = both(records_view, "".join(line + "\n" for line in lines))
    assert cold == slow and warm == slow
    text = "".join(line + "\n" for line in EDGE_LINES)
    cold, warm, slow = both(session_view, text)
    assert cold == slow and warm == slow
    # both ways share procs._cwd_shown: pin its meaning down (the last AT_FDCWD</x> wins)
    mkdir = [e for e in parse_session(text).unattributed if e.syscall == "mkdir"]
    assert [e.path for e in mkdir] == ["/b/rel"]


def test_complete_call_drops_the_pending_one_of_its_pid() -> None:
    text = ('5 1.0 openat(-100</w>, "a", 0 <unfinished ...>\n'
            '5 1.1 openat(-100</w>, "b", 0) = 3</w/b>\n'
            '5 1.2 <... openat resumed>) = 4</w/a>\n')  # fmt: skip
    cold, warm, slow = both(records_view, text)
    assert cold == slow and warm == slow
    assert slow[1].unfinished_dropped == 1 and slow[1].orphan_resumes == 1


# --- the events memo: everything a handler reads but pid and ts is in its key -------------
ARGS = st.sampled_from(['-100</w>', '3</w/d>', '3</w/d>(deleted)', 'AT_FDCWD', '"a"', '"/w/b"',
                        '""', '"."', 'NULL', '0x241', '0x80000', '0x10000', '0', '0x200', '0x2',
                        '0x1000', '0x400001', '["a", "b"]', '{flags=0x241}', '0666'])
CALLS = st.builds(
    Syscall,
    pid=st.integers(1, 3),
    ts=st.sampled_from([None, 1.0, 2.5]),
    name=st.sampled_from(sorted(HANDLERS) + ["clone", "fchdir"]),
    args=st.lists(ARGS, max_size=5).map(tuple),
    ret=st.sampled_from([None, -1, 0, 3]),
    ret_path=st.sampled_from([None, "/w/a", "/w/#1", "pipe:[1]"]),
    errno=st.sampled_from([None, "ENOENT", "ENOTDIR", "EACCES"]),
    line_no=st.integers(0, 3),
    ret_deleted=st.booleans(),
    resumed=st.booleans(),
    orphan=st.booleans(),
)


OPENS = st.builds(  # the busiest handler, with arguments it can make sense of
    Syscall,
    pid=st.integers(1, 3),
    ts=st.sampled_from([None, 1.0]),
    name=st.sampled_from(["openat", "open", "creat"]),
    args=st.tuples(st.sampled_from(["-100</w>", "AT_FDCWD", "3</w/d>"]),
                   st.sampled_from(['"a"', '"/w/b"', '"."', '""']),
                   st.sampled_from(["0", "0x241", "0x10000", "0x2", "0x441", "0x400002"])),
    ret=st.sampled_from([3, -1]),
    ret_path=st.sampled_from([None, "/w/a", "/w/d"]),
    errno=st.sampled_from([None, None, "ENOENT", "ENOTDIR"]),
    line_no=st.just(0),
    ret_deleted=st.booleans(),
)  # fmt: skip
OTHER = {"name": ["unlink", "openat"], "args": [('"x"',), ("-100</w>", '"a"', "0x2")],
         "ret": [7, -1, None], "errno": ["EACCES", None, "ENOENT"],
         "ret_path": ["/w/other", None, "/w/a"], "ret_deleted": [True, False]}  # fmt: skip


@settings(SETTINGS, max_examples=500)
@given(st.one_of(CALLS, OPENS), st.sampled_from([None, "/w", "/", "/w/d"]))
def test_events_memo_identical(sc: Syscall, cwd: str | None) -> None:
    """The memo is warm from earlier calls (no clear_memos()); a call differing in any one
    field the handlers read, or in the cwd, must never get another call's events."""
    variants = [(sc, cwd), (sc, "/elsewhere")]
    variants += [(replace(sc, **{f: v}), cwd)
                 for f, values in OTHER.items() for v in values if v != getattr(sc, f)]
    variants += [(replace(sc, pid=sc.pid + 1, ts=9.0, line_no=9), cwd)]
    for call, where in variants + variants:
        fast_events = syscall_events(call, where)
        with fast.slow_path():
            assert fast_events == syscall_events(call, where)
