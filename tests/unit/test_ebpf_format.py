"""eBPF records -> strace lines: hand-written records, hand-written expected lines (#33)."""

from __future__ import annotations

from termcredit.tracer.ebpf_format import Converter, split_records
from termcredit.tracer.ebpf_program import CHUNK, numbering, program
from termcredit.tracer.session import summarize_segment

N = "n0nce"
NUM = numbering("agent")


def rec(kind: str, *fields: object, text: bytes | None = None) -> bytes:
    body = " ".join(str(f) for f in fields)
    if text is not None:
        return N.encode() + kind.encode() + b" " + body.encode() + b" " + text + N.encode() + b"Z\n"
    return f"{N}{kind} {body}{N}Z\n".encode()


def enter(t: int, tid: int, name: str, *nums: int) -> bytes:
    return rec("E", t, tid, NUM.nr(name), *nums)


def string(t: int, tid: int, i: int, value: bytes, k: int = 0) -> bytes:
    return rec("S", t, tid, i, k, text=value)


def leave(t: int, tid: int, name: str, ret: int) -> bytes:
    return rec("X", t, tid, NUM.nr(name), ret)


def convert(data: bytes, cwd: bytes | None = b"/app", root: int = 100) -> list[str]:
    return Converter(NUM, root, cwd, {}, epoch_ns=1_700_000_000_000_000_000).convert(
        split_records(data, N))


def test_open_chdir_rename_lines() -> None:
    data = b"".join([
        enter(1000, 100, "openat", -100, 0x5000, 0x241, 0o666), string(1000, 100, 1, b"a"),
        leave(1500, 100, "openat", 3),
        enter(2000, 100, "chdir", 0x6000), string(2000, 100, 0, b"sub"),
        leave(2100, 100, "chdir", 0),
        enter(3000, 100, "renameat2", -100, 0x7000, 3, 0x7100, 1),
        string(3000, 100, 1, b"x"), string(3000, 100, 3, b"y"),
        leave(3100, 100, "renameat2", -17),
    ])
    assert convert(data) == [
        '100 1700000000.000001 openat(-100</app>, "a", 0x241, 0666) = 3</app/a>',
        '100 1700000000.000002 chdir("sub") = 0',
        '100 1700000000.000003 renameat2(-100</app/sub>, "x", 3</app/a>, "y", 0x1) = -1 EEXIST'
        " (File exists)",
    ]


def test_quoting_long_strings_and_forged_framing() -> None:
    # a name holding a newline, a quote, a byte >= 0x80 and a fake record of another nonce
    name = b'q"\n\xff' + b"xZ\nevilE 1 2 3"
    long = b"d" * CHUNK + b"/tail"
    data = b"".join([
        enter(10, 7, "unlinkat", -100, 0x1, 0), string(10, 7, 1, name),
        leave(11, 7, "unlinkat", 0),
        enter(20, 7, "mkdirat", -100, 0x2, 0o755),
        string(20, 7, 1, long[:CHUNK]), string(20, 7, 1, long[CHUNK:], k=1),
        string(20, 7, 1, b"stale", k=2),  # after a short chunk: not part of the string
        leave(21, 7, "mkdirat", 0),
        b"Lost 5 events\n",
    ])
    lines = Converter(NUM, 7, b"/w").convert(split_records(data, N))
    assert lines == [
        '7 0.000000 unlinkat(-100</w>, "q\\"\\n\\xffxZ\\nevilE 1 2 3", 0) = 0',
        f'7 0.000000 mkdirat(-100</w>, "{"d" * CHUNK}/tail", 0755) = 0',
        "ebpf: lost 5 events",
    ]
    # the parser reads the name back byte for byte, and the lost note flags the trace
    summary = summarize_segment("\n".join(lines) + "\n")
    assert summary.deleted == {"/w/q\"\n\udcffxZ\nevilE 1 2 3"}
    assert summary.written == {"/w/" + "d" * CHUNK + "/tail"}


def test_fd_table_dup_fork_and_exit() -> None:
    data = b"".join([
        enter(1, 5, "openat", -100, 0x1, 0x10000, 0), string(1, 5, 1, b"/d"),
        leave(2, 5, "openat", 4),
        enter(3, 5, "fcntl", 4, 1030, 10), leave(4, 5, "fcntl", 10),
        enter(5, 5, "close", 4), leave(6, 5, "close", 0),
        enter(7, 5, "clone", 0, 0x1200011, 0, 0, 0),
        rec("F", 8, 5, 6),
        leave(9, 5, "clone", 6),
        leave(10, 6, "clone", 0),  # the child's return: no line
        enter(11, 6, "unlinkat", 10, 0x3, 0), string(11, 6, 1, b"f"),
        leave(12, 6, "unlinkat", 0),
        enter(13, 6, "unlinkat", 4, 0x3, 0), string(13, 6, 1, b"g"),  # fd 4 was closed
        leave(14, 6, "unlinkat", 0),
        rec("Q", 15, 6, 256 * 3),
        rec("Q", 16, 5, 9),
    ])
    assert convert(data, cwd=b"/", root=5) == [
        '5 1700000000.000000 openat(-100</>, "/d", 0x10000, 00) = 4</d>',
        "5 1700000000.000000 clone(child_stack=NULL, flags=0x1200011, NULL, NULL, NULL) = 6",
        '6 1700000000.000000 unlinkat(10</d>, "f", 0) = 0',
        '6 1700000000.000000 unlinkat(4, "g", 0) = 0',
        "6 1700000000.000000 +++ exited with 3 +++",
        "5 1700000000.000000 +++ killed by SIGKILL +++",
    ]


def test_program_declares_every_traced_call() -> None:
    text = program(42, "abc", "agent")
    assert "@t[42] = 1" in text
    for name in ("openat", "renameat2", "execve", "clone3", "fchdir", "close", "dup3"):
        assert f"sys_enter_{name} " in text
    assert "sys_enter_newstat " not in text  # the stat family is the verifier's alone
    assert "sys_enter_newstat " in program(42, "abc", "verifier")
