"""The shared host tracer's user space on hand-written bpftrace output (#33): records routed by
their session's tag, lost events flag every open session, the program's registration guard."""

from __future__ import annotations

import os
import subprocess

import pytest

from termcredit.tracer.ebpf_fence import FENCE
from termcredit.tracer.ebpf_host import Demux, HostTracer, SessionTrace
from termcredit.tracer.ebpf_program import numbering, record_size
from termcredit.tracer.ebpf_shared import REGISTER, shared_program, tag_of
from termcredit.tracer.ebpf_stream import WINDOW_NS
from termcredit.tracer.session import summarize_segment

N = "n0nce"
NUM = numbering("verifier")
A, B = tag_of(1, "agent"), tag_of(2, "verifier")  # 2 and 3


def tagged(tag: int, kind: str, *fields: object, text: bytes | None = None) -> bytes:
    body = " ".join(str(f) for f in fields).encode() + (b" " + text if text is not None else b"")
    return f"{N}{tag}:{kind} ".encode() + body + f"{N}Z\n".encode()


def untagged(record: bytes) -> bytes:
    head, _, rest = record.partition(b":")
    return N.encode() + rest


def openat(tag: int, t: int, tid: int, path: bytes, ret: int) -> bytes:
    """openat(AT_FDCWD, path, O_WRONLY|O_CREAT|O_TRUNC, 0644) = ret, as a C record."""
    fields = [t, tid, NUM.nr("openat"), ret, -100, 0x1000, 0o1101, 0o644, 0, 0, 0x5000 + ret, 7]
    assert len(fields) == record_size("openat")
    return tagged(tag, "C", len(fields), *fields, text=path)


def sessions() -> dict[int, SessionTrace]:
    return {A: SessionTrace(A, 100, "agent", b"/w", 0, N, live={100}),
            B: SessionTrace(B, 200, "verifier", b"/v", 0, N, live={200})}


STREAM = [
    f"{N}0:R 5{N}Z\n".encode(),
    tagged(A, "G", 6, 100), tagged(B, "G", 7, 200),
    tagged(A, "F", 10, 100, 101),
    openat(B, 11, 200, b"/v/x: y", 3),  # a name with a colon and a space
    openat(A, 12, 101, b"out", 3),
    tagged(A, "Q", 13, 101, 0),
    tagged(B, "Q", 14, 200, 0),
]


def test_each_session_gets_its_own_records_whatever_the_chunks():
    for size in (1, 7, 1 << 20):  # byte by byte: a nonce or a record cut anywhere
        s = sessions()
        d = Demux(N, s)
        data = b"".join(STREAM)
        for i in range(0, len(data), size):
            d.feed(data[i : i + size])
        assert d.ready and s[A].registered.is_set() and s[B].registered.is_set()
        assert bytes(s[A].data) == b"".join(untagged(r) for r in (STREAM[3], STREAM[5], STREAM[6]))
        assert bytes(s[B].data) == b"".join(untagged(r) for r in (STREAM[4], STREAM[7]))
        assert (d.unrouted, d.stray, d.tail) == (0, [], b"")
        # A: root 100 forked 101, only 101 exited; B: its root exited
        assert s[A].live == {100} and not s[A].ended.is_set()
        assert s[B].live == set() and s[B].ended.is_set()


def test_a_session_converts_to_its_own_strace_lines():
    s = sessions()
    d = Demux(N, s)
    d.feed(b"".join(STREAM))
    mine, theirs = s[A].close(timeout=0), s[B].close(timeout=0)
    assert (mine.lost, mine.stray, mine.unpaired) == (0, 0, 0)
    # 101 inherits the root's cwd /w: `out` is /w/out; 200's name is absolute
    assert summarize_segment(mine.text).written == {"/w/out"}
    assert summarize_segment(theirs.text).written == {"/v/x: y"}
    assert "/v/" not in mine.text and "/w/" not in theirs.text


def test_lost_events_flag_every_open_session_and_unknown_tags_are_counted():
    s = sessions()
    s[B].closed = True  # ended before the loss
    d = Demux(N, s)
    d.feed(b"Lost 7 events\n" + tagged(9, "Q", 1, 5, 0) + b"garbage\n" + b"Lost 2 ev")
    assert (d.lost, s[A].lost, s[B].lost) == (7, 7, 0)
    assert d.unrouted == 1 and d.stray == [b"garbage"]
    d.feed(b"ents\n")
    assert (d.lost, s[A].lost) == (9, 9)
    s[A].closed = False
    result = s[A].close(timeout=0)
    assert result.lost == 9 and result.lines[-1] == "ebpf: lost 9 events"


def test_tags_mark_the_session_and_its_role():
    assert (tag_of(1, "agent"), tag_of(1, "verifier"), tag_of(5, "agent")) == (2, 3, 10)
    with pytest.raises(ValueError):
        tag_of(0, "agent")


def test_the_program_registers_only_with_the_key_from_the_host_pidns():
    text = shared_program(N, 12345, 4026531836)
    guard = (f"/args->option == {REGISTER} && args->arg4 == 12345 && args->arg3 > 1 && "
             "curtask->nsproxy->pid_ns_for_children->ns.inum == 4026531836/")
    assert guard in text and "@t[args->arg2] = args->arg3;" in text
    assert "@t[args->child_pid] = @t[args->parent_pid];" in text  # a child keeps the tag
    # every record but the ready one carries the printing task's tag (the flush probe's and
    # a fence's empty printfs print nothing: they only make the kernel announce a buffer)
    printfs = [line for line in text.splitlines() if "printf(" in line]
    records = [p for p in printfs if 'printf("")' not in p]
    assert len(records) > 50 and len(printfs) - len(records) == 2
    assert all(f'printf("{N}%lld:' in p or f'printf("{N}0:R' in p or f'printf("{N}0:B' in p
               for p in records)
    # a fence answers the host only: the key, and the host's PID namespace
    assert (f"/args->option == {FENCE} && args->arg3 == 12345 && "
            "curtask->nsproxy->pid_ns_for_children->ns.inum == 4026531836/") in text
    # the stat family is traced for verifier sessions (odd tags) only
    assert "tracepoint:syscalls:sys_enter_newfstatat /(@t[tid] & 1)/" in text
    assert "tracepoint:syscalls:sys_enter_openat /@t[tid]/" in text
    with pytest.raises(ValueError):
        shared_program(N, 0, 1)


def test_sessions_get_fresh_tags_and_closed_ones_are_forgotten():
    tracer = HostTracer()  # no bpftrace: a stand-in process; the prctl is only EINVAL here
    tracer.proc = subprocess.Popen(["sleep", "30"])
    try:
        first = tracer.follow(os.getpid(), "agent")
        assert (first.tag, first.live, first.cwd) == (2, {os.getpid()}, os.getcwd().encode())
        first.close(timeout=0)
        assert first.data == bytearray()
        second = tracer.follow(os.getpid(), "verifier")
        assert second.tag == 5 and list(tracer.sessions) == [5]
        late = f"{tracer.nonce}2:Q 1 {os.getpid()} 0{tracer.nonce}Z\n"  # the closed one's
        tracer.demux.feed(late.encode())
        assert tracer.demux.unrouted == 1 and second.data == bytearray()
    finally:
        tracer.proc.kill()
        tracer.proc.wait()


def test_a_session_streams_its_lines_while_it_runs_and_close_gives_the_rest():
    s = sessions()
    d = Demux(N, s)
    d.feed(b"".join(STREAM[:5]) + b"Lost 2 events\n")
    # the fork (t=10) is not due at t=0; the loss flags the lines of now
    assert s[A].lines(now_ns=0) == ["ebpf: lost 2 events"]
    d.feed(b"".join(STREAM[5:]))
    assert s[A].lines(now_ns=12 + WINDOW_NS) == [
        '101 0.000000 openat(-100</w>, "out", 0x241, 0644) = 3</w/out>']
    rest = s[A].close(timeout=0)  # the exit (t=13) was not due yet
    assert rest.lines == ["101 0.000000 +++ exited with 0 +++"]
    assert (rest.lost, rest.stray, rest.unpaired) == (2, 0, 0)
    assert bytes(s[A].data) == b""  # nothing kept once taken
