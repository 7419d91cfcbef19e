"""eBPF records -> strace lines: hand-written records, hand-written expected lines (#33)."""

from __future__ import annotations

from termcredit.tracer.ebpf_format import Converter, split_records
from termcredit.tracer.ebpf_program import CHUNK, numbering, program, record_size
from termcredit.tracer.session import summarize_segment

N = "n0nce"
NUM = numbering("agent")


def rec(kind: str, *fields: object, text: bytes | None = None) -> bytes:
    body = " ".join(str(f) for f in fields)
    if text is not None:
        return N.encode() + kind.encode() + b" " + body.encode() + b" " + text + N.encode() + b"Z\n"
    return f"{N}{kind} {body}{N}Z\n".encode()


def enter(t: int, tid: int, name: str, *nums: int) -> bytes:
    """An E record (exec and the clone family only)."""
    return rec("E", t, tid, NUM.nr(name), *nums)


def call(t: int, tid: int, name: str, ret: int, *nums: int, files: tuple[int, ...] = (),
         opened: tuple[int, int] | None = None, text: bytes | None = None) -> bytes:
    """A C record: the whole call; ``files`` a (file, dentry) pair per fd argument."""
    fields = [t, tid, NUM.nr(name), ret, *nums, *files, *(opened or ())]
    assert len(fields) == record_size(name)
    return rec("C", len(fields), *fields, text=text)


def string(t: int, tid: int, i: int, value: bytes, k: int = 0) -> bytes:
    return rec("S", t, tid, i, k, text=value)


def leave(t: int, tid: int, name: str, ret: int) -> bytes:
    return rec("X", t, tid, NUM.nr(name), ret)


def convert(data: bytes, cwd: bytes | None = b"/app", root: int = 100) -> list[str]:
    return Converter(NUM, root, cwd, epoch_ns=1_700_000_000_000_000_000).convert(
        split_records(data, N))


def test_open_chdir_rename_lines() -> None:
    data = b"".join([
        call(1000, 100, "openat", 3, -100, 0x5000, 0x241, 0o666, files=(0, 0),
             opened=(0xA, 0xB), text=b"a"),
        call(2000, 100, "chdir", 0, 0x6000, text=b"sub"),
        # the second string comes as an S record; fd 3's file is the one the open made
        call(3000, 100, "renameat2", -17, -100, 0x7000, 3, 0x7100, 1,
             files=(0, 0, 0xA, 0xB), text=b"x"),
        string(3000, 100, 3, b"y"),
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
        call(10, 7, "unlinkat", 0, -100, 0x1, 0, files=(0, 0), text=name),
        call(20, 7, "mkdirat", 0, -100, 0x2, 0o755, files=(0, 0), text=long[:CHUNK]),
        string(20, 7, 1, long[CHUNK:], k=1),
        string(20, 7, 1, b"stale", k=2),  # after a short chunk: not part of the string
        call(30, 7, "openat", -2, -100, 0x3, 0, 0, files=(0, 0), opened=(0, 0), text=b""),
        b"Lost 5 events\n",
    ])
    lines = Converter(NUM, 7, b"/w").convert(split_records(data, N))
    assert lines == [
        '7 0.000000 unlinkat(-100</w>, "q\\"\\n\\xffxZ\\nevilE 1 2 3", 0) = 0',
        f'7 0.000000 mkdirat(-100</w>, "{"d" * CHUNK}/tail", 0755) = 0',
        '7 0.000000 openat(-100</w>, "", 0, 00) = -1 ENOENT (No such file or directory)',
        "ebpf: lost 5 events",
    ]
    # the parser reads the name back byte for byte, and the lost note flags the trace
    summary = summarize_segment("\n".join(lines) + "\n")
    assert summary.deleted == {"/w/q\"\n\udcffxZ\nevilE 1 2 3"}
    assert summary.written == {"/w/" + "d" * CHUNK + "/tail"}


def test_open_files_dup_fork_and_exit() -> None:
    """An fd is named by its open file: a dup (fd 10) shares it, a closed fd's number (4)
    holding a file no open made (a pipe) has no path; a fork shares the map."""
    data = b"".join([
        call(1, 5, "openat", 4, -100, 0x1, 0x10000, 0, files=(0, 0), opened=(0xF1, 0xD1),
             text=b"/d"),
        enter(7, 5, "clone", 0, 0x1200011, 0, 0, 0),
        rec("F", 8, 5, 6),
        leave(9, 5, "clone", 6),
        leave(10, 6, "clone", 0),  # the child's return: no line
        call(11, 6, "unlinkat", 0, 10, 0x3, 0, files=(0xF1, 0xD1), text=b"f"),
        call(13, 6, "unlinkat", -9, 4, 0x3, 0, files=(0xF2, 0xD2), text=b"g"),
        # the same file pointer reused for another dentry is not the old file
        call(14, 6, "ftruncate", 0, 4, 0, files=(0xF1, 0xD9)),
        call(15, 6, "fchdir", 0, 10, files=(0xF1, 0xD1)),
        call(16, 6, "mkdir", 0, 0x4, 0o700, text=b"sub"),
        rec("Q", 17, 6, 256 * 3),
        rec("Q", 18, 5, 9),
    ])
    assert convert(data, cwd=b"/", root=5) == [
        '5 1700000000.000000 openat(-100</>, "/d", 0x10000, 00) = 4</d>',
        "5 1700000000.000000 clone(child_stack=NULL, flags=0x1200011, NULL, NULL, NULL) = 6",
        '6 1700000000.000000 unlinkat(10</d>, "f", 0) = 0',
        '6 1700000000.000000 unlinkat(4, "g", 0) = -1 EBADF (Bad file descriptor)',
        "6 1700000000.000000 ftruncate(4, 0) = 0",
        "6 1700000000.000000 fchdir(10</d>) = 0",
        '6 1700000000.000000 mkdir("sub", 0700) = 0',
        "6 1700000000.000000 +++ exited with 3 +++",
        "5 1700000000.000000 +++ killed by SIGKILL +++",
    ]
    summary = summarize_segment("\n".join(convert(data, cwd=b"/", root=5)) + "\n")
    # the failed unlink deletes nothing; the ftruncate of an unknown file writes nothing
    assert summary.written == {"/d/sub"} and summary.deleted == {"/d/f"}


def test_program_declares_every_traced_call() -> None:
    text = program(42, "abc", "agent")
    assert "@t[42] = 1" in text
    for name in ("openat", "renameat2", "execve", "clone3", "fchdir"):
        assert f"sys_enter_{name} " in text
    # the fd bookkeeping calls are not traced: fds are named by their open file
    for name in ("close", "dup3", "fcntl"):
        assert f"sys_enter_{name} " not in text
    assert "sys_enter_newstat " not in text  # the stat family is the verifier's alone
    assert "sys_enter_newstat " in program(42, "abc", "verifier")
