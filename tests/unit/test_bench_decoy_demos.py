"""Issue #34: the horizon tier's demonstrations (decoys declared by each task) and the ground
truth its tasks declare for the oracle estimator, checked against each other by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from termcredit.bench.decoy_demos import LOOKED, MIX, decoy_demos, declared, has_decoys
from termcredit.bench.demos import OK, oracle_commands
from termcredit.bench.protocol import (CHOICES_TASKS, CREDIT_TASKS, HORIZON_TASKS,
                                       _train_config, bench_config, turn_budget)
from termcredit.estimators.oracle import OracleSpec
from termcredit.tasks import load_task

# every task that declares decoys: the horizon tier's and the choices tier's
DECOY_TASKS = sorted(set(HORIZON_TASKS) | set(CHOICES_TASKS))
REPO = Path(__file__).resolve().parents[2]


def _task(name: str):
    return load_task(REPO / "tasks" / name)


def test_the_ledger_mix_by_hand() -> None:
    task = _task("close-ledger-period")
    o = oracle_commands(task)
    assert len(o) == 7
    demos = [[a for a, _ in d.turns] for d in decoy_demos(task)]
    # harmless rotate: ls inbox (before 1), cat state/period (2), head (4), ls archive (5),
    # tail (6), then round again; breaking rotate: cp (4), rm batch (4), rm -rf archive (5)
    assert demos[0] == [o[0], "ls inbox", *o[1:], "done"]
    assert demos[1] == [*o[:2], "cat state/period", *o[2:], "done"]
    assert demos[2] == [*o[:4], "head -n 3 ledger.csv", o[4], "ls archive", *o[5:], "done"]
    assert demos[3] == [*o[:6], "tail -n 2 ledger.csv", o[6], "done"]
    assert demos[4] == [*o[:4], "cp /tmp/batch.csv ledger.csv", *o[4:], "done"]
    assert demos[5] == [o[0], "ls inbox", *o[1:4], "rm -f /tmp/batch.csv", *o[4:], "done"]
    assert demos[6] == [*o[:5], "rm -rf archive", *o[5:], "done"]
    assert demos[7] == [*o[:2], "cat state/period", *o[2:4], "cp /tmp/batch.csv ledger.csv",
                        *o[4:], "done"]
    obs = dict(decoy_demos(task)[0].turns)
    assert obs["ls inbox"] == LOOKED and obs[o[0]] == OK


@pytest.mark.parametrize("name", DECOY_TASKS)
def test_horizon_task_demos_are_long_and_half_broken(name: str) -> None:
    task = _task(name)
    assert has_decoys(task)
    n = len(oracle_commands(task))
    lengths = [len(d.turns) for d, (_, broken) in zip(decoy_demos(task), MIX) if not broken]
    # solved copies: the oracle's 7, one or two look-arounds, `done`: 9 or 10 steps
    assert n == 7 and sorted(lengths) == [9, 9, 9, 10]
    assert sum(broken for _, broken in MIX) == 4
    # the turn budget leaves room for the longest solved copy
    tier = "horizon" if name in HORIZON_TASKS else "choices"
    assert turn_budget(bench_config(tier))[name] == 10


@pytest.mark.parametrize("name", DECOY_TASKS)
def test_declared_ground_truth_matches_the_demos(name: str) -> None:
    """Every oracle command matches a necessary pattern and no breaking one; every declared
    breaking decoy matches a breaking pattern; no look-around matches either."""
    task = _task(name)
    spec = OracleSpec.from_metadata(task.metadata, name)

    def hits(patterns: tuple[re.Pattern[str], ...], cmd: str) -> bool:
        return any(p.search(cmd) for p in patterns)

    cmds = declared(task)
    for cmd in oracle_commands(task):
        assert hits(spec.necessary, cmd) and not hits(spec.breaking, cmd), cmd
    for cmd in cmds["breaking"]:
        assert hits(spec.breaking, cmd) and not hits(spec.necessary, cmd), cmd
    for cmd in cmds["harmless"]:
        assert not hits(spec.necessary, cmd) and not hits(spec.breaking, cmd), cmd


def test_the_credit_tier_keeps_its_noisy_demos_and_the_horizon_tier_its_algorithms() -> None:
    assert not any(has_decoys(_task(t)) for t in CREDIT_TASKS)
    cfg = bench_config("horizon")
    assert cfg.algos == ["grpo", "depgpo", "oracle"] and len(cfg.seeds) == 3
    assert [Path(t).name for t in cfg.tasks] == HORIZON_TASKS


def test_the_choices_tier_is_the_horizon_protocol_on_short_commands() -> None:
    """Its design in one place: the horizon tier's seeds, updates and sampling, the two best
    credit shapes against grpo, and tasks whose every demonstrated command is short (the
    horizon tier's typos were in 40-60 character `sed` lines)."""
    horizon, choices = bench_config("horizon"), bench_config("choices")
    for key in ("seeds", "steps", "group_size", "eval_instances", "eval_temperature",
                "warm_steps", "replay_demos", "turns_over_oracle"):
        assert getattr(choices, key) == getattr(horizon, key), key
    # training samples hotter than evaluation, so a group's six episodes differ
    assert choices.rollout == {**horizon.rollout, "temperature": 0.75}
    assert choices.eval_temperature == horizon.rollout["temperature"] == 0.3
    assert choices.algos == ["grpo", "depgpo", "oracle[positive=uniform,inside=true]",
                             "depgpo[positive=uniform,negative=faults,inside=true]"]
    assert [Path(t).name for t in choices.tasks] == CHOICES_TASKS
    for name in CHOICES_TASKS:
        task = _task(name)
        cmds = oracle_commands(task) + sum(declared(task).values(), [])
        assert max(len(c) for c in cmds) <= 33, name
        assert turn_budget(choices)[name] == 10


def test_the_menu_tier_is_the_choices_tier_sampled_from_a_menu() -> None:
    """The same start, tasks, budgets and sampling as the choices tier, every reply drawn from
    the task's declared commands, and the two shapes again with blame on a premature `done`."""
    choices, menu = bench_config("choices"), bench_config("menu")
    for key in ("seeds", "steps", "group_size", "eval_instances", "eval_temperature",
                "warm_steps", "replay_demos", "turns_over_oracle", "tasks", "model"):
        assert getattr(menu, key) == getattr(choices, key), key
    assert menu.rollout == {**choices.rollout, "menu": True}
    assert menu.algos == [*choices.algos, "oracle[positive=uniform,inside=true,omission=done]",
                          "depgpo[positive=uniform,negative=faults,inside=true,omission=done]"]


def test_the_menu_sgd_tier_is_the_menu_tier_with_plain_sgd() -> None:
    """Only the optimizer differs (SGD at 0.1, no clipping), and the algorithm list."""
    menu, sgd = bench_config("menu"), bench_config("menu-sgd")
    for key in ("seeds", "steps", "group_size", "eval_instances", "eval_temperature",
                "warm_steps", "replay_demos", "turns_over_oracle", "tasks", "model", "rollout"):
        assert getattr(sgd, key) == getattr(menu, key), key
    assert (menu.optimizer, menu.lr, menu.max_grad_norm) == ("adamw", 1e-4, 1.0)
    assert (sgd.optimizer, sgd.lr, sgd.max_grad_norm) == ("sgd", 0.1, 0.0)
    assert set(sgd.algos) <= set(menu.algos) and "grpo" in sgd.algos
    tc = _train_config(sgd, "grpo", 0, "tiny", None)
    assert (tc.optimizer, tc.lr, tc.max_grad_norm) == ("sgd", 0.1, 0.0)
