"""Streaming eBPF conversion: records fed as they arrive, lines out in time order (#33).

Records are hand-written (the helpers of test_ebpf_format); times are nanoseconds of the
monotonic clock, the window 100 ns, and ``poll`` is given the clock by hand.
"""

from __future__ import annotations

from termcredit.tracer.ebpf_format import Converter, split_records
from termcredit.tracer.ebpf_stream import StreamConverter

from test_ebpf_format import NUM, N, call, convert, enter, leave, rec, string

EPOCH = 1_700_000_000_000_000_000


def stream(cwd: bytes = b"/app", root: int = 100) -> StreamConverter:
    return StreamConverter(Converter(NUM, root, cwd, epoch_ns=EPOCH), window_ns=100,
                           clock=lambda: 0)


def feed(s: StreamConverter, *records: bytes, lost: str = "") -> None:
    data = b"".join(records) + (f"Lost {lost} events\n".encode() if lost else b"")
    s.feed(split_records(data, N))


OPEN_A = call(1000, 100, "openat", 3, -100, 0x5000, 0x241, 0o666, files=(0, 0),
              opened=(0xA, 0xB), text=b"a")
CHDIR = call(2000, 100, "chdir", 0, 0x6000, text=b"sub")
RENAME = call(3000, 100, "renameat2", -17, -100, 0x7000, 3, 0x7100, 1,
              files=(0, 0, 0xA, 0xB), text=b"x")
RENAME_Y = string(3000, 100, 3, b"y")
LINES = [
    '100 1700000000.000001 openat(-100</app>, "a", 0x241, 0666) = 3</app/a>',
    '100 1700000000.000002 chdir("sub") = 0',
    '100 1700000000.000003 renameat2(-100</app/sub>, "x", 3</app/a>, "y", 0x1) = -1 EEXIST'
    " (File exists)",
]


def test_all_at_once_gives_the_batch_lines() -> None:
    s = stream()
    feed(s, OPEN_A, CHDIR, RENAME, RENAME_Y)
    assert s.finish() == LINES == convert(OPEN_A + CHDIR + RENAME + RENAME_Y)


def test_records_wait_for_the_window_then_come_out_in_time_order() -> None:
    s = stream()
    # the rename (t=3000) and its second string arrive before the chdir (t=2000) it followed,
    # and the string before its call: another CPU's buffer was read first
    feed(s, OPEN_A, RENAME_Y)
    assert s.poll(now_ns=1099) == []  # 1000 is due at 1100
    assert s.poll(now_ns=1100) == LINES[:1]
    feed(s, RENAME)
    assert s.poll(now_ns=2500) == []  # nothing held is due: the rename is at 3000
    feed(s, CHDIR)
    assert s.poll(now_ns=3100) == LINES[1:]  # the rename's cwd is the chdir's
    assert s.late == 0 and s.dropped_strings == 0 and s.finish() == []


def test_a_record_later_than_the_window_is_replayed_next_and_counted() -> None:
    s = stream()
    feed(s, OPEN_A, RENAME, RENAME_Y)
    assert s.poll(now_ns=5000) == [LINES[0], LINES[2].replace("/app/sub", "/app")]
    feed(s, CHDIR)  # a chdir timed before the rename, read after its line was out
    assert s.poll(now_ns=5000) == LINES[1:2]
    assert s.late == 1


def test_a_string_after_its_line_is_dropped_and_counted() -> None:
    s = stream()
    feed(s, RENAME)
    assert s.poll(now_ns=3100) == [
        '100 1700000000.000003 renameat2(-100</app>, "x", 3, 0x7100, 0x1) = -1 EEXIST'
        " (File exists)"]
    feed(s, RENAME_Y)
    assert s.poll(now_ns=3100) == [] and s.dropped_strings == 1
    # a string whose call never comes (its record lost) is dropped once two windows past
    feed(s, string(4000, 100, 3, b"z"))
    assert s.poll(now_ns=4199) == [] and s.dropped_strings == 1
    assert s.poll(now_ns=4200) == [] and s.dropped_strings == 2 and not s.loose


def test_exec_strings_and_a_fork_across_polls() -> None:
    s = stream(cwd=b"/", root=5)
    feed(s, enter(10, 5, "clone", 0, 0x1200011, 0, 0, 0), rec("F", 20, 5, 6))
    assert s.poll(now_ns=125) == []  # the clone's line comes at its X
    feed(s, leave(30, 5, "clone", 6), enter(40, 6, "execve", 0x1, 0x2, 0x3),
         string(40, 6, 0, b"/bin/true"), string(40, 6, 100, b"true"))
    assert s.poll(now_ns=135) == [
        "5 1700000000.000000 clone(child_stack=NULL, flags=0x1200011, NULL, NULL, NULL) = 6"]
    feed(s, leave(50, 6, "execve", 0), rec("Q", 60, 6, 0))
    assert s.poll(now_ns=160) == [
        '6 1700000000.000000 execve("/bin/true", ["true"], 0x3) = 0',
        "6 1700000000.000000 +++ exited with 0 +++"]
    assert not s.enters and not s.held  # nothing of finished calls is kept


def test_lost_events_flag_the_poll_that_saw_them_once() -> None:
    s = stream()
    feed(s, OPEN_A, lost="7")
    assert s.poll(now_ns=0) == ["ebpf: lost 7 events"]  # before the open is due: flag now
    assert s.poll(now_ns=1100) == LINES[:1]
    feed(s, CHDIR, lost="2")
    assert s.finish() == [LINES[1], "ebpf: lost 2 events"] and s.lost == 9
