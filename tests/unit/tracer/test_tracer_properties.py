"""Property tests: untrusted trace text never crashes the parser; decoding round-trips."""

from __future__ import annotations

import os
from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracer_testutil import FIXTURES, load

from termcredit.tracer import Event, Kind, parse_records, parse_session, summarize, summarize_segment
from termcredit.tracer.decode import parse_str, split_top

# database=None: no .hypothesis/ example store written into the checkout
SETTINGS = settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
# Characters that matter to the grammar, so mutations hit the interesting paths often.
SPECIAL = st.sampled_from(
    list('"\\<>()[]{},=?.|+- \n0123456789x')
    + ["<unfinished ...>", "<... openat resumed>", " = ", "+++ exited with 0 +++"]
    + ["(deleted)", "\\377", "-100</w>"]
)


@lru_cache(maxsize=1)
def real_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(FIXTURES.glob("*.strace")):
        lines.extend(load(path.stem).split("\n")[:-1])
    return lines


def strace_escape(data: bytes, also: bytes = b"") -> str:
    """Escape like strace: printable ASCII as is, \\" \\\\ \\n \\t, octal for the rest
    (three digits when a digit follows, as strace does)."""
    out = []
    for i, b in enumerate(data):
        if b == 0x22:
            out.append('\\"')
        elif b == 0x5C:
            out.append("\\\\")
        elif b == 0x0A:
            out.append("\\n")
        elif b == 0x09:
            out.append("\\t")
        elif 0x20 <= b < 0x7F and b not in also:
            out.append(chr(b))
        else:
            nxt = data[i + 1 : i + 2]
            digit_follows = bool(nxt) and 0x30 <= nxt[0] <= 0x37
            out.append(f"\\{b:03o}" if digit_follows else f"\\{b:o}")
    return "".join(out)


def annotation_escape(data: bytes) -> str:
    # inside -y brackets strace also escapes < and > so the brackets stay unambiguous
    return strace_escape(data, also=b"<>")


@SETTINGS
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    records, stats = parse_records(text)
    assert len(records) <= stats.lines
    assert stats.skipped + stats.ignored + stats.syscalls + stats.exits <= stats.lines
    parse_session(text)
    summarize_segment(text)


@SETTINGS
@given(st.lists(st.one_of(SPECIAL, st.text(max_size=5)), max_size=40).map("".join))
def test_grammar_soup_never_raises(text: str) -> None:
    parse_session("123 1.0 " + text + "\n" + text)


@st.composite
def mutated_trace(draw: st.DrawFn) -> str:
    lines = real_lines()
    start = draw(st.integers(0, len(lines) - 1))
    chunk = list(lines[start : start + draw(st.integers(1, 30))])
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(chunk) - 1))
        line = chunk[i]
        a = draw(st.integers(0, len(line)))
        b = draw(st.integers(a, len(line)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "truncate", "dup", "swap"]))
        if op == "delete":
            chunk[i] = line[:a] + line[b:]
        elif op == "insert":
            chunk[i] = line[:a] + draw(SPECIAL) + line[a:]
        elif op == "replace":
            chunk[i] = line[:a] + draw(st.text(max_size=4)) + line[b:]
        elif op == "truncate":
            chunk[i] = line[:a]
        elif op == "dup":
            chunk.insert(i, line)
        else:
            j = draw(st.integers(0, len(chunk) - 1))
            chunk[i], chunk[j] = chunk[j], chunk[i]
    return "\n".join(chunk) + "\n"


@SETTINGS
@given(mutated_trace())
def test_mutated_real_lines_never_raise(text: str) -> None:
    records, stats = parse_records(text)
    assert stats.lines == text.count("\n")
    trace = parse_session(text)
    for cmd in trace.commands.values():
        cmd.summary.as_dict()


@SETTINGS
@given(st.binary(max_size=40))
def test_string_escapes_round_trip(data: bytes) -> None:
    s = parse_str('"' + strace_escape(data) + '"')
    assert s is not None and os.fsencode(s.value) == data


NAME = st.binary(min_size=1, max_size=30).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)


@SETTINGS
@given(NAME)
def test_any_file_name_survives_the_whole_pipeline(name: bytes) -> None:
    line = (
        f'7 1.0 openat(-100</w>, "{strace_escape(name)}", 0x241, 0666)'
        f" = 3</w/{annotation_escape(name)}>\n"
        f'7 1.1 renameat2(-100</w>, "{strace_escape(name)}", -100</w>, "d/z", 0x1) = 0\n'
        f'7 1.2 unlinkat(-100</w>, "{strace_escape(name)}", 0) = -1 ENOENT (No such file)\n'
    )
    records, stats = parse_records(line)
    assert stats.skipped == 0 and len(records) == 3
    s = summarize_segment(line)
    path = "/w/" + os.fsdecode(name)
    assert s.temporary == {path} and s.written == {"/w/d/z"} and not s.read


ARG = st.one_of(
    st.binary(max_size=12).map(lambda b: '"' + strace_escape(b) + '"'),
    st.binary(max_size=12).map(lambda b: '"' + strace_escape(b) + '"...'),
    st.integers(-200, 2**40).map(str),
    st.binary(max_size=8).map(lambda b: "3</" + annotation_escape(b) + ">"),
    st.lists(st.binary(max_size=5).map(lambda b: '"' + strace_escape(b) + '"'), max_size=3).map(
        lambda xs: "[" + ", ".join(xs) + "]"
    ),
    st.just("{flags=0x3d0f00, exit_signal=0} => {parent_tid=[879]}"),
)


@SETTINGS
@given(st.lists(ARG, max_size=6))
def test_split_top_recovers_arguments(args: list[str]) -> None:
    parts, end = split_top(", ".join(args) + ") = 0")
    assert parts == args and end is not None


PATHS = st.sampled_from(["/w/a", "/w/b", "/w/c", "/w/d"])
EVENT = st.builds(
    lambda k, p, d, x: Event(k, p, 1, None, dst=d if k in (Kind.MOVE, Kind.LINK) else None, exchange=x),
    st.sampled_from(list(Kind)),
    PATHS,
    PATHS,
    st.booleans(),
)


@SETTINGS
@given(st.lists(EVENT, max_size=12))
def test_summary_final_states_are_exclusive(events: list[Event]) -> None:
    s = summarize(events)
    assert not (s.written & s.deleted) and not (s.written & s.temporary)
    assert not (s.deleted & s.temporary)
    assert set(s.derived_from) <= s.written
    assert not (s.meta & (s.deleted | s.temporary))
    touched = {e.path for e in events} | {e.dst for e in events if e.dst}
    assert s.read | s.written | s.deleted | s.temporary | s.probed <= touched
