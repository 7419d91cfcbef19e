"""Each algorithm against GRPO task by task (bench/by_task.py), by hand."""

import pytest

from termcredit.bench.by_task import by_task_lines, task_diffs
from termcredit.bench.stats import Run


def _eps(task_successes: list[tuple[str, int]]):
    return [{"task": t, "instance": 1000 + i, "sample": 0, "success": s, "steps": 3,
             "tokens": 50, "infra": False} for i, (t, s) in enumerate(task_successes)]


def test_task_diffs_by_hand() -> None:
    # seed 0, slots (a, b, a, b): grpo [1, 0, 0, 1], depgpo [1, 1, 1, 0]
    # task a: depgpo − grpo = [0, +1] -> +0.5; task b: [+1, −1] -> 0
    runs = {"grpo": {0: Run([], _eps([("a", 1), ("b", 0), ("a", 0), ("b", 1)]), None)},
            "depgpo": {0: Run([], _eps([("a", 1), ("b", 1), ("a", 1), ("b", 0)]), None)}}
    got = task_diffs(runs, n_boot=2000)
    assert set(got) == {"a", "b"} and set(got["a"]) == {"depgpo"}
    assert got["a"]["depgpo"]["estimate"] == pytest.approx(0.5)
    assert got["b"]["depgpo"]["estimate"] == pytest.approx(0.0)
    assert got["a"]["depgpo"]["units"] == 2
    text = "\n".join(by_task_lines(got))
    assert "| algorithm | a | b |" in text and "| depgpo | +0.500 [" in text
    assert task_diffs({"depgpo": runs["depgpo"]}) == {} and by_task_lines({}) == []
