"""Issue #16: several groups per update (every task in each update), per-task turn budgets,
and the estimator statistics of a multi-group step. Expected values worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from termcredit.trainer.config import ConfigError, TrainConfig
from termcredit.trainer.train import _mean_stats, step_groups

A = SimpleNamespace(name="a", parametrized=True)
B = SimpleNamespace(name="b", parametrized=False)
C = SimpleNamespace(name="c", parametrized=True)


def names(plan):
    return [(t.name, i) for t, i in plan]


def test_one_task_per_step_is_the_old_round_robin() -> None:
    # step s: task s % 3, instance (s // 3) % 2; b is not parametrised: always instance 0
    got = [names(step_groups([A, B, C], s, 1, 2)) for s in range(7)]
    assert got == [[("a", 0)], [("b", 0)], [("c", 0)], [("a", 1)], [("b", 0)], [("c", 1)],
                   [("a", 0)]]


def test_every_task_in_every_step() -> None:
    # tasks_per_step 0: all three each step; the instance moves on once per step
    assert names(step_groups([A, B, C], 0, 0, 3)) == [("a", 0), ("b", 0), ("c", 0)]
    assert names(step_groups([A, B, C], 1, 0, 3)) == [("a", 1), ("b", 0), ("c", 1)]
    assert names(step_groups([A, B, C], 4, 0, 3)) == [("a", 1), ("b", 0), ("c", 1)]


def test_two_tasks_per_step_wraps_around() -> None:
    # slots 2k, 2k+1: step 1 = slots 2, 3 -> c (instance 0), a (instance 1)
    assert names(step_groups([A, B, C], 1, 2, 4)) == [("c", 0), ("a", 1)]
    assert names(step_groups([A, B, C], 2, 2, 4)) == [("b", 0), ("c", 1)]


def test_estimator_stats_are_averaged_over_groups_missing_keys_zero() -> None:
    got = _mean_stats([{"fallback_rate": 0.5, "fallback/tied-credits": 0.5},
                       {"fallback_rate": 0.0}])
    assert got == {"fallback/tied-credits": 0.25, "fallback_rate": 0.25}


def test_turn_budget_by_task_folder(tmp_path) -> None:
    from termcredit.trainer.train import Trainer

    tr = Trainer.__new__(Trainer)  # no sandbox, no policy: only the job plan
    tr.cfg = TrainConfig(rollout={"max_turns": 6}, turn_budget={"patch-port-config": 4})
    tr.run_dir, tr.image = tmp_path, lambda task, inst: f"img-{task.name}-{inst}"
    port = SimpleNamespace(name="patch-port-config", path=tmp_path / "patch-port-config")
    hello = SimpleNamespace(name="hello-world", path=tmp_path / "hello-world")
    job = tr.job(port, 3, 7, 2)
    assert (job.image, job.instance, job.max_turns) == ("img-patch-port-config-3", 3, 4)
    assert job.out == tmp_path / "rollouts" / "step-000007" / "patch-port-config-i3" / "g2"
    assert tr.job(hello, 0, -1, 0, where="eval").max_turns is None  # the rollout's max_turns
    assert tr.job(hello, 0, -1, 0, where="eval").out.parts[-3:] == (
        "step-start", "hello-world-i0", "g0")


@pytest.mark.parametrize("bad", [{"tasks_per_step": -1}, {"turn_budget": {"x": 0}},
                                 {"turn_budget": {"x": 2.5}}])
def test_bad_settings_are_named(bad) -> None:
    with pytest.raises(ConfigError, match=next(iter(bad))):
        TrainConfig(**bad)
