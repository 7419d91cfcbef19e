"""Cutting a streamed session's lines into steps at end markers with the step's token (#33)."""

from __future__ import annotations

from termcredit.tracer.ebpf_steps import StepCutter

MARK = "/__termcredit__/ab12"


def chdir(path: str) -> str:
    return f'7 1700000000.000001 chdir("{path}") = -1 ENOENT (No such file or directory)'


OPEN = '7 1700000000.000002 openat(-100</app>, "a", 0x241, 0666) = 3</app/a>'
S1, E1 = chdir(f"{MARK}/s1"), chdir(f"{MARK}/e1.0.feed")
S2, E2 = chdir(f"{MARK}/s2"), chdir(f"{MARK}/e2.-3.beef")


def test_a_step_is_cut_at_its_own_end_marker_only() -> None:
    c = StepCutter(MARK)
    c.feed([S1, OPEN])
    assert c.cut(1, "feed") is None
    c.feed([E1, S2])
    assert c.cut(1, "feed") == ([S1, OPEN, E1], 0)
    assert c.lines == [S2]  # the next step's start waits for it
    c.feed([OPEN, E2, OPEN])
    assert c.cut(2, "beef") == ([S2, OPEN, E2], -3)
    assert c.lines == [OPEN] and c.flags == []


def test_a_marker_with_another_token_is_flagged_and_waited_past() -> None:
    c = StepCutter(MARK)
    forged = chdir(f"{MARK}/e1.0.0000")  # the agent's own cd: it cannot know the token
    c.feed([S1, forged])
    assert c.cut(1, "feed") is None
    assert c.cut(1, "feed") is None  # searched once: flagged once
    c.feed([OPEN, E1])
    assert c.cut(1, "feed") == ([S1, forged, OPEN, E1], 0)
    assert c.flags == ["forged end marker for step 1"]


def test_wait_polls_until_the_marker_or_the_timeout() -> None:
    batches = [[S1], [], [OPEN, E1]]
    c = StepCutter(MARK)
    assert c.wait(lambda: batches.pop(0) if batches else [], 1, "feed", timeout=5) == (
        [S1, OPEN, E1], 0)
    now = iter([0.0, 0.5, 1.0, 1.5])  # the deadline (1.0) passes on the third poll
    polls: list[int] = []
    got = c.wait(lambda: polls.append(1) or [], 2, "beef", timeout=1.0, clock=lambda: next(now))
    assert got is None and len(polls) == 2
