"""host_steps.HostSession: a sandbox session's steps from the host tracer's lines (#33), over a
stand-in for SessionTrace (the lines are given; the live path is test_ebpf_sandbox.py)."""

from __future__ import annotations

import time

import pytest

from termcredit.sandbox import host_steps
from termcredit.sandbox.host_steps import END_HOLD_NS, HostSession
from termcredit.tracer.ebpf_stream import WINDOW_NS

MARK = "/__termcredit__/abc"


class FakeTrace:
    """What HostSession uses of SessionTrace: lines() hands out what was queued."""

    def __init__(self) -> None:
        self.queue: list[str] = []
        self.closed = False
        self.fenced: int | None = None  # what fence() answers (None: no fence could be made)
        self.asked: list[int | None] = []  # the clocks lines() was asked for

    def hurry(self) -> None:
        pass

    def drop(self) -> None:
        self.closed = True

    def fence(self) -> int | None:
        return self.fenced

    def lines(self, now_ns: int | None = None) -> list[str]:
        self.asked.append(now_ns)
        out, self.queue = self.queue, []
        return out


def _start(seq: int) -> str:
    return f'1 0.1 chdir("{MARK}/s{seq}") = -1 ENOENT'


def _end(seq: int, code: int, token: str) -> str:
    return f'1 0.2 chdir("{MARK}/e{seq}.{code}.{token}") = -1 ENOENT'


@pytest.fixture
def session():
    trace = FakeTrace()
    s = HostSession(trace, MARK)  # type: ignore[arg-type]
    yield s, trace
    s.abandon()


def test_a_step_is_its_lines_up_to_its_own_marker(session):
    s, trace = session
    trace.queue += [_start(1), '2 0.15 openat(-100</>, "/a", 0, 00) = 3</a>', _end(1, 4, "t1"),
                    _start(2)]
    step = s.step(1, "t1", ended=True)
    assert step.exit_code == 4 and step.flags == [] and step.dropped == 0
    assert step.text.splitlines() == [_start(1), '2 0.15 openat(-100</>, "/a", 0, 00) = 3</a>',
                                      _end(1, 4, "t1")]
    assert s.rest() == _start(2) + "\n"  # the next step's start stays for it


def test_a_step_end_releases_the_lines_up_to_the_fence(session):
    s, trace = session
    trace.fenced = 7_000_000  # every record printed before t = 7 ms has been read
    trace.queue += [_start(1), _end(1, 0, "t1")]
    s.step(1, "t1", ended=True)
    # the stream releases what is due by clock - window: the fence's time, exactly
    assert trace.asked[-1] == 7_000_000 + WINDOW_NS


def test_without_a_fence_a_step_end_holds_the_lines_of_the_last_moments(session):
    s, trace = session
    trace.queue += [_start(1), _end(1, 0, "t1")]
    before = time.monotonic_ns()
    s.step(1, "t1", ended=True)
    asked = trace.asked[-1]
    assert asked is not None
    assert before + WINDOW_NS - END_HOLD_NS <= asked <= time.monotonic_ns() + WINDOW_NS - END_HOLD_NS


def test_a_forged_marker_is_flagged_and_waited_past(session):
    s, trace = session
    trace.queue += [_start(1), _end(1, 0, "forged"), _end(1, 0, "t1")]
    step = s.step(1, "t1", ended=True)
    assert step.flags == ["forged end marker for step 1"]
    assert len(step.text.splitlines()) == 3


def test_a_marker_that_never_comes_flags_the_step(session, monkeypatch):
    monkeypatch.setattr(host_steps, "MARKER_WAIT_S", 0.2)
    s, trace = session
    trace.queue += [_start(1), '2 0.15 openat(-100</>, "/a", 0, 00) = 3</a>']
    step = s.step(1, "t1", ended=True)
    assert step.exit_code is None
    assert step.flags == ["no end marker for step 1 from the host tracer"]
    assert len(step.text.splitlines()) == 2  # what did come is the step's


def test_a_step_without_its_marker_hands_its_lines_out_for_good(session, monkeypatch):
    # the lines of a step whose marker never came are that step's: none reach the next step
    monkeypatch.setattr(host_steps, "MARKER_WAIT_S", 0.2)
    s, trace = session
    trace.queue += [_start(1), '2 0.15 openat(-100</>, "/a", 0, 00) = 3</a>']
    assert len(s.step(1, "t1", ended=True).text.splitlines()) == 2
    trace.queue += [_start(2), _end(2, 0, "t2")]
    assert s.step(2, "t2", ended=True).text.splitlines() == [_start(2), _end(2, 0, "t2")]


def test_a_shell_that_died_takes_what_came_without_waiting_for_a_marker(session):
    s, trace = session
    trace.queue += [_start(1), "1 0.3 +++ killed by SIGKILL +++"]
    step = s.step(1, "t1", ended=False)
    assert step.exit_code is None and step.flags == [] and len(step.text.splitlines()) == 2


def test_lost_events_flag_the_step_they_fall_in(session):
    s, trace = session
    trace.queue += [_start(1), "ebpf: lost 7 events", _end(1, 0, "t1")]
    assert s.step(1, "t1", ended=True).flags == ["the host tracer lost 7 events during step 1"]
    trace.queue += [_start(2), _end(2, 0, "t2")]
    assert s.step(2, "t2", ended=True).flags == []


def test_a_flood_keeps_head_and_tail_and_every_marker(session, monkeypatch):
    monkeypatch.setattr(host_steps, "TRACE_HEAD", 100)
    monkeypatch.setattr(host_steps, "TRACE_TAIL", 50)
    s, trace = session
    flood = [f"3 0.1{i:04d} openat(-100</>, \"/f{i}\", 0, 00) = 3" for i in range(200)]
    trace.queue += [_start(1)] + flood[:100] + ["ebpf: lost 2 events"] + flood[100:] \
        + [_end(1, 0, "t1")]
    s.take()
    step = s.step(1, "t1", ended=True)
    lines = step.text.splitlines()
    # by hand: the head is whole lines within 100 characters (the start marker, 50 with its
    # newline, and one openat, 44), the tail within 50 (the end marker's line, 55, does not
    # fit: the tail is empty, and the marker is kept as a marker); the lost note is kept
    assert lines == [_start(1), flood[0], "ebpf: lost 2 events", _end(1, 0, "t1")]
    kept = sum(len(x) + 1 for x in lines)
    every = sum(len(x) + 1 for x in [_start(1)] + flood + ["ebpf: lost 2 events", _end(1, 0, "t1")])
    assert step.dropped == every - kept
    assert step.flags == ["the host tracer lost 2 events during step 1"]
