"""Line grammar and argument decoding (tracing.md §3), on lines copied from real traces."""

from __future__ import annotations

import pytest

from termcredit.tracer.decode import (
    parse_fd,
    parse_int,
    parse_str,
    parse_str_array,
    split_top,
    struct_field,
    unescape,
)
from termcredit.tracer.lines import Exit, LineParser, Syscall, parse_records


def one(line: str) -> Syscall:
    records, stats = parse_records(line + "\n")
    assert stats.skipped == 0, stats
    assert len(records) == 1 and isinstance(records[0], Syscall)
    return records[0]


def test_complete_line_with_returned_fd_path() -> None:
    sc = one('11720 1796222996.950631 openat(-100</tmp/stx>, "a", 0) = 3</tmp/stx/a>')
    assert (sc.pid, sc.ts, sc.name) == (11720, 1796222996.950631, "openat")
    assert sc.args == ("-100</tmp/stx>", '"a"', "0")
    assert (sc.ret, sc.ret_path, sc.errno, sc.ok) == (3, "/tmp/stx/a", None, True)


def test_failed_call_has_errno() -> None:
    sc = one('7 1.5 chdir("/__termcredit__/ab/s1") = -1 ENOENT (No such file or directory)')
    assert (sc.ret, sc.errno, sc.ok) == (-1, "ENOENT", False)


def test_question_mark_return() -> None:
    sc = one("31145 1796223578.116927 openat(-100</w>, \"p\", 0) = ?")
    assert sc.ret is None and not sc.ok


def test_hex_return_is_not_read_as_zero() -> None:
    assert one("1 2.0 mmap(NULL, 8192) = 0x7f1234560000").ret == 0x7F1234560000


def test_line_without_timestamp() -> None:
    sc = one('42 unlink("x") = 0')
    assert (sc.pid, sc.ts, sc.name) == (42, None, "unlink")


def test_quotes_commas_and_parens_inside_names() -> None:
    sc = one('30751 1.0 openat(-100</w>, "a,b) = 3", 0x241, 0666) = 3</w/a,b) = 3>')
    assert parse_str(sc.args[1]).value == "a,b) = 3"  # type: ignore[union-attr]
    assert sc.ret_path == "/w/a,b) = 3"
    sc = one('30751 1.0 openat(-100</w>, "we\\"ird>n", 0x241, 0666) = 3</w/we\\"ird\\76n>')
    assert parse_str(sc.args[1]).value == 'we"ird>n'  # type: ignore[union-attr]
    assert sc.ret_path == '/w/we"ird>n'


def test_escapes_and_non_utf8_bytes() -> None:
    assert unescape(r"new\nline\t\\\"x\101\x41\0") == b'new\nline\t\\"xAA\x00'
    s = parse_str(r'"x\377\376y"')
    assert s is not None and s.value == "x\udcff\udcfey"
    assert s.value.encode("utf-8", "surrogateescape") == b"x\xff\xfey"
    fd = parse_fd(r"0</w/\74lt\76(p)>")
    assert fd is not None and fd.path == "/w/<lt>(p)"


def test_truncated_string() -> None:
    s = parse_str('"abcdef"...')
    assert s is not None and s.value == "abcdef" and s.truncated
    argv = parse_str_array('["a", "bcd"..., ...]')
    assert argv == ("a", "bcd")


def test_deleted_marker_outside_and_inside_brackets() -> None:
    sc = one('1 1.0 openat(-100</w>, ".", 0x490001, 0644) = 3</w/#2173156>(deleted)')
    assert sc.ret_path == "/w/#2173156" and sc.ret_deleted
    fd = parse_fd("3</tmp/stx2/del.txt>(deleted)")
    assert fd is not None and fd.deleted and fd.path == "/tmp/stx2/del.txt"
    fd = parse_fd("3</tmp/old (deleted)>")  # strace < 5.19
    assert fd is not None and fd.deleted and fd.path == "/tmp/old"


def test_fd_forms() -> None:
    assert parse_fd("-100</w>") == parse_fd("AT_FDCWD</w>")
    fd = parse_fd("AT_FDCWD")
    assert fd is not None and fd.is_cwd and fd.path is None
    fd = parse_fd("3<pipe:[60872]>")
    assert fd is not None and fd.path == "pipe:[60872]" and fd.fs_path is None
    assert parse_fd("0x7ffd1234") is None


def test_numbers() -> None:
    assert parse_int("0x241") == 0x241
    assert parse_int("0666") == 0o666
    assert parse_int("0x1200000|17") == 0x1200011
    assert parse_int("-100") == -100
    assert parse_int("010666") == 0o10666
    assert parse_int("O_RDONLY") is None and parse_int("") is None and parse_int("0x") is None
    assert parse_int("\u0663") is None  # an Arabic-Indic digit is not a strace number


def test_clone3_struct_in_and_out() -> None:
    sc = one(
        "15876 1.0 clone3({flags=0x3d0f00, child_tid=0x7f46b6ed4990, parent_tid=0x7f46b6ed4990,"
        " exit_signal=0, stack=0x7f46b66d4000, stack_size=0x7fff80, tls=0x7f46b6ed46c0}"
        " => {parent_tid=[15877]}, 88) = 15877"
    )
    assert sc.ret == 15877 and len(sc.args) == 2
    assert struct_field(sc.args[0], "flags") == "0x3d0f00"


def test_unfinished_resumed_stitching_across_other_pids() -> None:
    text = (
        "15880 1.0 vfork( <unfinished ...>\n"
        '15882 1.1 execve("/usr/bin/as", ["as", "--64"], 0x3f771040 /* 41 vars */ <unfinished ...>\n'
        "15880 1.2 <... vfork resumed>) = 15882\n"
        "15882 1.3 <... execve resumed>) = 0\n"
        '15877 1.4 openat(-100</w>, "t0", 0x80241, 0666 <unfinished ...>\n'
        "15876 1.5 clone3({flags=0x3d0f00, exit_signal=0} <unfinished ...>\n"
        "15877 1.6 <... openat resumed>) = 3</w/t0>\n"
        "15876 1.7 <... clone3 resumed> => {parent_tid=[15878]}, 88) = 15878\n"
    )
    records, stats = parse_records(text)
    assert stats.skipped == stats.unfinished_dropped == stats.orphan_resumes == 0
    names = [(r.pid, r.name, r.ret) for r in records if isinstance(r, Syscall)]
    assert names == [
        (15880, "vfork", 15882),
        (15882, "execve", 0),
        (15877, "openat", 3),
        (15876, "clone3", 15878),
    ]
    execve = records[1]
    assert isinstance(execve, Syscall) and execve.resumed and execve.ts == 1.3
    assert parse_str_array(execve.args[1]) == ("as", "--64")
    openat = records[2]
    assert isinstance(openat, Syscall) and openat.args[3] == "0666"
    assert openat.ret_path == "/w/t0"
    clone3 = records[3]
    assert isinstance(clone3, Syscall) and struct_field(clone3.args[0], "flags") == "0x3d0f00"


def test_orphan_resume_keeps_return_value_only() -> None:
    records, stats = parse_records("9 1.0 <... clone resumed>, child_tidptr=0x7f) = 77\n")
    assert stats.orphan_resumes == 1
    sc = records[0]
    assert isinstance(sc, Syscall) and sc.orphan and sc.ret == 77 and sc.args == ()


def test_unfinished_never_resumed_is_counted() -> None:
    text = '5 1.0 openat(-100</w>, "p", 0 <unfinished ...>\n6 1.1 +++ exited with 0 +++\n'
    _, stats = parse_records(text)
    assert stats.unfinished_dropped == 1
    text = '5 1.0 openat(-100</w>, "p", 0 <unfinished ...>\n5 1.1 +++ killed by SIGKILL +++\n'
    records, stats = parse_records(text)
    assert stats.unfinished_dropped == 1
    assert records == [Exit(5, 1.1, None, "SIGKILL", 1)]


def test_exit_lines() -> None:
    records, stats = parse_records(
        "1 1.0 +++ exited with 3 +++\n"
        "2 1.0 +++ killed by SIGSEGV (core dumped) +++\n"
        "3 1.0 +++ superseded by execve in pid 4 +++\n"
        "4 1.0 --- SIGCHLD {si_signo=SIGCHLD} ---\n"
    )
    assert records == [Exit(1, 1.0, 3, None, 0), Exit(2, 1.0, None, "SIGSEGV", 1)]
    assert stats.ignored == 2 and stats.skipped == 0


@pytest.mark.parametrize(
    "line",
    [
        "garbage",
        "123",
        '12 1.0 openat(-100</w>, "a", 0',  # no closing paren, no unfinished marker
        '12 1.0 openat(-100</w>, "a", 0) junk',
        '12 1.0 openat(-100</w>, "a, 0) = 3',  # unbalanced quote
        "12 1.0 <... nothing>",
        "12 1.0 +++ exited with +++",
        "12 1.0 )(",
        "1" * 5000 + ' 1.0 unlink("a") = 0',  # int() refuses > 4300 digits: must not raise
        '1 1.0 unlink("a") = ' + "1" * 5000,
        "1 1.0 +++ exited with " + "1" * 5000 + " +++",
        "\u0663 1.0 unlink(\"a\") = 0",  # a non-ASCII digit is no pid
    ],
)
def test_malformed_lines_are_skipped_not_raised(line: str) -> None:
    records, stats = parse_records(line + "\n")
    assert records == [] and stats.skipped == 1


def test_split_top_levels() -> None:
    parts, end = split_top('a, [1, 2], {x=1, y=[3]}, "s,)", f(1, 2)) = 0', 0)
    assert parts == ["a", "[1, 2]", "{x=1, y=[3]}", '"s,)"', "f(1, 2)"]
    assert end is not None
    assert split_top("vfork() = 3", 6) == ([], 7)


def test_line_parser_incremental_matches_batch() -> None:
    text = (
        '1 1.0 openat(-100</w>, "a", 0 <unfinished ...>\n'
        '2 1.1 unlink("b") = 0\n'
        "1 1.2 <... openat resumed>) = 3</w/a>\n"
    )
    p = LineParser()
    got = [p.feed(line, i) for i, line in enumerate(text.splitlines())]
    p.finish()
    batch, _ = parse_records(text)
    assert [r for r in got if r is not None] == batch


def test_huge_marker_sequence_number_is_not_a_marker() -> None:
    from termcredit.tracer import parse_session

    trace = parse_session('1 1.0 chdir("/__termcredit__/ab/s' + "1" * 5000 + '") = -1 ENOENT (x)\n')
    assert trace.commands == {} and trace.unattributed == []


@pytest.mark.parametrize("fast_path", [True, False])
def test_pidns_translation_gives_the_child_pid_as_line_prefixes_show_it(monkeypatch, fast_path):
    """The agent's shell lives in its own PID namespace: clone returns the inner pid (3), and
    --pidns-translation adds the pid strace prints in line prefixes (28)."""
    from termcredit.tracer import fast

    monkeypatch.setattr(fast, "ENABLED", fast_path)
    text = ("27    1.5 clone(child_stack=NULL, flags=0x1200000|17, child_tidptr=0x7f) = 3 "
            "/* 28 in strace's PID NS */\n"
            "28    1.6 execve(\"/bin/true\", [\"/bin/true\"], 0x56 /* 7 vars */) = 0\n")
    records, stats = parse_records(text)
    assert stats.skipped == 0
    assert [(r.name, r.pid, r.ret) for r in records] == [("clone", 27, 28), ("execve", 28, 0)]
