"""The sandbox <-> tracer protocol: the strace argv of each session and the marker paths.

The in-container shim cannot import the protocol module; the host sends it the values, so these
tests pin that what the shim writes is what the tracer parses.
"""

from __future__ import annotations

import re

from termcredit.tracer import parse_session
from termcredit.tracer.protocol import (
    MARKER_ROOT,
    STRACE_STAT_SET,
    STRACE_TRACE_SET,
    is_cwd_report,
    is_marker_path,
    marker_dir,
    parse_marker,
    strace_argv,
)

NONCE = "0123456789abcdef"
TOKEN = "fedcba9876543210"


def traced(role: str) -> set[str]:
    argv = strace_argv(role)
    sets = [a.removeprefix("trace=") for a in argv if a.startswith("trace=")]
    assert len(sets) == 1, argv
    return set(sets[0].split(","))


def test_the_agent_session_does_not_trace_stat_calls_the_verifier_does():
    stat = set(STRACE_STAT_SET.split(","))
    assert traced("agent") == set(STRACE_TRACE_SET.split(","))
    assert not traced("agent") & stat
    assert traced("verifier") == set(STRACE_TRACE_SET.split(",")) | stat


def test_strace_argv_has_the_flags_the_parser_reads_and_ends_before_the_output_path():
    for role in ("agent", "verifier"):
        argv = strace_argv(role)
        assert argv[0] == "strace" and argv[-1] == "-o"
        joined = " ".join(argv)
        for flag in ("-f", "-q", "-y", "-X raw", "-ttt", "-e signal=none", "--pidns-translation"):
            assert f" {flag} " in f" {joined} ", flag
        at = next(i for i, a in enumerate(argv) if a.startswith("trace="))
        assert argv[at - 1] == "-e"


def test_marker_paths_round_trip():
    mark = marker_dir(NONCE)
    assert is_marker_path(mark) and mark.startswith(MARKER_ROOT + "/")
    assert parse_marker(f"{mark}/s3") == (NONCE, True, 3, None, None)
    assert parse_marker(f"{mark}/e3.0.{TOKEN}") == (NONCE, False, 3, 0, TOKEN)
    assert parse_marker(f"{mark}/cwd/app") is None
    assert is_cwd_report(f"{mark}/cwd/app", NONCE) and is_cwd_report(f"{mark}/cwd/app")
    assert not is_cwd_report(f"{mark}/cwd/app", "ab")
    assert not is_marker_path(MARKER_ROOT + "x/s1")


def test_the_shim_gets_the_protocol_values_from_the_host():
    from termcredit.sandbox.shell import SHIM_SOURCE, shim_config

    cfg = shim_config({"agent": NONCE, "verifier": "ab12"}, None)
    assert cfg["sessions"]["agent"] == {"mark": marker_dir(NONCE), "strace": strace_argv("agent")}
    assert cfg["sessions"]["verifier"]["mark"] == marker_dir("ab12")
    assert cfg["sessions"]["verifier"]["strace"] == strace_argv("verifier")
    # the shim has no copy of its own that could drift
    assert MARKER_ROOT.encode() not in SHIM_SOURCE
    assert b"trace=" not in SHIM_SOURCE


def test_what_the_shim_writes_is_what_the_tracer_parses():
    from termcredit.sandbox.shim_session import INIT_SCRIPT, command_script

    mark = marker_dir(NONCE)
    script = command_script(mark, 7, "echo hi", TOKEN)
    cds = re.findall(r"\bbuiltin cd -P (\S+) 2>/dev/null", script)
    assert len(cds) == 2, script
    start, end = cds[0], cds[1].replace("$__tc_e", "0")
    assert parse_marker(start) == (NONCE, True, 7, None, None)
    assert parse_marker(end) == (NONCE, False, 7, 0, TOKEN)
    cwd = re.search(r"cd \"(\S+)\"", INIT_SCRIPT % mark).group(1).replace("$PWD", "/app")
    assert is_cwd_report(cwd, NONCE)
    # and a session trace with those chdirs is cut into that command
    trace = parse_session(
        f'10 1.0 chdir("{start}") = -1 ENOENT (x)\n'
        '10 1.1 openat(AT_FDCWD</app>, "/app/f", O_RDONLY) = 3</app/f>\n'
        f'10 1.2 chdir("{end}") = -1 ENOENT (x)\n',
        tokens={7: TOKEN},
    )
    assert list(trace.commands) == [7] and not trace.flagged


def test_the_fixture_recorder_traces_like_the_agent_session():
    # the reference traces are recorded on the host (no PID namespace to translate)
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "fixtures" / "strace" / "record.py"
    spec = importlib.util.spec_from_file_location("strace_fixture_record", path)
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    expected = [a for a in strace_argv("agent") if a != "--pidns-translation"]
    assert [*record.STRACE, "-o"] == expected


def test_exit_cwd_is_the_last_report_of_this_session_decoded():
    from termcredit.tracer.protocol import exit_cwd, marker_dir

    mark = marker_dir("abc123")
    other = marker_dir("ffff00")
    text = (f'12 chdir("{mark}/cwd/work") = -1 ENOENT (No such file or directory)\n'
            f'12 chdir("{other}/cwd/elsewhere") = -1 ENOENT\n'
            f'12 chdir("{mark}/cwd/work/s\\303\\251 \\"b\\"") = -1 ENOENT\n'
            f'12 chdir("{mark}/e3.0.aa") = -1 ENOENT\n')
    assert exit_cwd(text, "abc123") == '/work/s\u00e9 "b"'  # by hand: UTF-8 é, quotes
    assert exit_cwd(f'1 chdir("{mark}/cwd") = -1\n', "abc123") == "/"
    assert exit_cwd(f'1 chdir("{mark}/cwdx/y") = -1\n', "abc123") is None  # not the report
    assert exit_cwd(text, "0000") is None
