"""Issue #22, trainer side: what a trajectory with recorded tampering (or a suspect verifier
run) trains with. Hand-made trajectories; expected values worked out by hand."""

from __future__ import annotations

import json

import pytest

from termcredit import estimators
from termcredit.estimators import reward_of, training_reward
from termcredit.records import CommandRecord, Step, TokenLayout, Trajectory, VerifierReport
from termcredit.trainer.config import ConfigError, TrainConfig, dump_config, load_config
from termcredit.trainer.train import group_credit, integrity_counts, select_group


def traj(reward: float | None, *, flagged: bool = False, step_flag: bool = False,
         suspect: bool = False, on_suspect: str | None = None, name: str = "") -> Trajectory:
    cmd = CommandRecord(command="true", stdout="", stderr="", exit_code=0, duration_s=0.0,
                        integrity=["forged end marker e1.0 (no token)"] if step_flag else [])
    t = Trajectory(task=name or "t", instruction="", agent="policy",
                   steps=[Step(index=0, action="true", command=cmd)],
                   tokens=TokenLayout(token_ids=[1, 2, 3], loss_mask=[0, 1, 1],
                                      logprobs=[0.0, -1.0, -1.0], step_spans=[[1, 3]]))
    if reward is not None:
        t.verifier = VerifierReport(reward=reward, suspect=suspect, on_suspect=on_suspect)
    if flagged:
        t.integrity = ["step 0: marker s9 from pid 11, not the shell"]
    return t


# ---------------------------------------------------------------- the reward


@pytest.mark.parametrize("policy", ["zero", "mask"])
def test_training_reward(policy: str) -> None:
    assert training_reward(traj(None), policy) == 0.0
    assert training_reward(traj(0.75), policy) == 0.75
    assert training_reward(traj(1.0, flagged=True), policy) == 0.0
    assert training_reward(traj(1.0, step_flag=True), policy) == 0.0  # a step's reasons count
    assert training_reward(traj(1.0, suspect=True), policy) == 0.0  # on_suspect default: zero
    assert training_reward(traj(1.0, suspect=True, on_suspect="zero"), policy) == 0.0
    assert training_reward(traj(1.0, suspect=True, on_suspect="flag"), policy) == 1.0
    assert training_reward(traj(1.0, suspect=False, on_suspect="zero"), policy) == 1.0
    assert training_reward(traj(1.0, flagged=True, suspect=True, on_suspect="flag"), policy) == 0.0


def test_training_reward_rejects_an_unknown_policy_and_reward_of_is_the_same() -> None:
    with pytest.raises(ValueError, match="zero, mask"):
        training_reward(traj(1.0), "keep")
    for t in (traj(1.0), traj(1.0, flagged=True), traj(0.5, suspect=True), traj(None)):
        assert reward_of(t) == training_reward(t)


def test_flagged_needs_a_recorded_reason() -> None:
    assert not estimators.is_flagged(traj(1.0))
    assert estimators.is_flagged(traj(1.0, flagged=True))
    assert estimators.is_flagged(traj(1.0, step_flag=True))


# ---------------------------------------------------------------- the group


def test_select_group() -> None:
    a, b, c = traj(1.0, flagged=True), traj(1.0), traj(0.0, step_flag=True)
    group = [a, b, c]
    kept = select_group(group, "zero")
    assert kept == group and kept is not group
    assert select_group(group, "mask") == [b]
    assert select_group(group) == group
    with pytest.raises(ValueError):
        select_group(group, "drop")


def _grpo() -> estimators.Estimator:
    return estimators.build("grpo", std=False)  # advantage = reward - group mean


def test_zero_policy_trains_the_flagged_episode_with_reward_zero() -> None:
    group = [traj(1.0, flagged=True), traj(1.0), traj(0.0), traj(0.0)]
    kept = select_group(group, "zero")
    rewards, res, skipped = group_credit(group, kept, _grpo(), "zero")
    assert rewards == [0.0, 1.0, 0.0, 0.0] and not skipped
    # mean 0.25: -0.25, 0.75, -0.25, -0.25 on the action tokens
    assert res.advantages == [[0.0, -0.25, -0.25], [0.0, 0.75, 0.75],
                              [0.0, -0.25, -0.25], [0.0, -0.25, -0.25]]


def test_mask_policy_drops_the_flagged_episode_from_baseline_and_gradient() -> None:
    group = [traj(1.0, flagged=True), traj(1.0), traj(0.0), traj(0.0)]
    kept = select_group(group, "mask")
    assert kept == group[1:]
    rewards, res, skipped = group_credit(group, kept, _grpo(), "mask")
    assert rewards == [1.0, 0.0, 0.0] and not skipped
    # mean 1/3: 2/3, -1/3, -1/3
    assert len(res.advantages) == 3
    for adv, a in zip(res.advantages, (2 / 3, -1 / 3, -1 / 3)):
        assert adv[0] == 0.0 and adv[1:] == pytest.approx([a, a])


def test_mask_policy_skips_a_group_left_with_fewer_than_two() -> None:
    calls = []

    def estimator(g):  # must not be asked
        calls.append(g)
        raise AssertionError("estimator called")

    group = [traj(1.0, flagged=True), traj(1.0, step_flag=True), traj(0.0), traj(1.0, flagged=True)]
    kept = select_group(group, "mask")
    rewards, res, skipped = group_credit(group, kept, estimator, "mask")
    assert skipped and rewards == [0.0] and res.advantages == [[0.0, 0.0, 0.0]]
    everyone = [traj(1.0, flagged=True), traj(0.0, flagged=True)]
    kept = select_group(everyone, "mask")
    rewards, res, skipped = group_credit(everyone, kept, estimator, "mask")
    assert skipped and rewards == [] and res.advantages == []
    assert not calls


def test_a_group_of_one_nobody_masked_is_estimated_as_before() -> None:
    """OPD gives a lone trajectory per-token advantages: group_size 1 must still train."""
    group = [traj(1.0)]
    rewards, res, skipped = group_credit(group, select_group(group, "mask"), _grpo(), "mask")
    assert rewards == [1.0] and not skipped and res.advantages == [[0.0, 0.0, 0.0]]


def test_dynamic_sampling_sees_training_rewards() -> None:
    group = [traj(1.0, flagged=True), traj(0.0), traj(1.0, suspect=True)]
    rewards, _, skipped = group_credit(group, select_group(group), _grpo(), "zero", True)
    assert rewards == [0.0, 0.0, 0.0] and skipped  # all equal once zeroed
    group = [traj(1.0, suspect=True, on_suspect="flag"), traj(0.0)]
    rewards, _, skipped = group_credit(group, select_group(group), _grpo(), "zero", True)
    assert rewards == [1.0, 0.0] and not skipped


def test_dynamic_sampling_keeps_a_tied_group_with_nonzero_advantages() -> None:
    group = [traj(1.0), traj(1.0)]

    def kl_like(g):  # an OPD-style term: non-zero although every reward is 1
        return estimators.EstimatorResult(advantages=[[0.0, -0.5, 0.25] for _ in g])

    rewards, res, skipped = group_credit(group, select_group(group), kl_like, "zero", True)
    assert rewards == [1.0, 1.0] and not skipped
    _, _, skipped = group_credit(group, select_group(group), _grpo(), "zero", True)
    assert skipped  # GRPO on tied rewards: all zero, nothing to learn


def test_integrity_counts() -> None:
    group = [traj(1.0, flagged=True), traj(1.0, step_flag=True, suspect=True), traj(0.0),
             traj(1.0, suspect=True, on_suspect="flag"), traj(None)]
    group[2].termination = "infra_error"
    assert integrity_counts(group) == {"flagged_episodes": 2.0, "suspect_episodes": 2.0,
                                       "infra_episodes": 1.0}


def _infra(t: Trajectory) -> Trajectory:
    t.termination, t.info["infra_error"] = "infra_error", "step 1: ShellError: gone"
    return t


def test_infra_failures_leave_the_group_under_either_policy() -> None:
    # a sandbox removed from outside: its reward 0 is no evidence about the policy
    group = [traj(1.0), _infra(traj(0.0)), traj(0.0), traj(0.0)]
    for policy in ("zero", "mask"):
        kept = select_group(group, policy)
        assert kept == [group[0], group[2], group[3]]
        rewards, res, skipped = group_credit(group, kept, _grpo(), policy)
        # by hand (mean-centred, as above): mean 1/3 of the three valid -> 2/3, -1/3, -1/3;
        # with the failed episode's 0 in the group the mean would be 1/4
        assert rewards == [1.0, 0.0, 0.0] and not skipped
        assert res.advantages[0][1:] == pytest.approx([2 / 3] * 2)
        assert res.advantages[1][1:] == pytest.approx([-1 / 3] * 2)


def test_a_group_left_with_one_valid_episode_contributes_nothing() -> None:
    group = [traj(1.0), _infra(traj(0.0))]
    kept = select_group(group)
    rewards, res, skipped = group_credit(group, kept, _grpo())
    assert kept == group[:1] and skipped and res.advantages == [[0.0, 0.0, 0.0]]


# ---------------------------------------------------------------- the setting


def test_config_integrity_setting(tmp_path) -> None:
    assert TrainConfig().integrity == "zero"
    assert load_config(None, {"integrity": "mask"}).integrity == "mask"
    with pytest.raises(ConfigError, match=r"config: field 'integrity': must be one of 'zero', "
                                          r"'mask', not 'drop'"):
        load_config(None, {"integrity": "drop"})
    path = tmp_path / "train.toml"
    path.write_text('integrity = "Mask"\n')
    with pytest.raises(ConfigError, match=r"train.toml: field 'integrity'"):
        load_config(path, {})
    with pytest.raises(ConfigError):
        TrainConfig(integrity="keep")
    path.write_text(dump_config(TrainConfig(integrity="mask")))
    assert load_config(path, {}).integrity == "mask"


# ---------------------------------------------------------------- the trainer's step


def _stub_trainer(cfg: TrainConfig, group: list[Trajectory], updates: list):
    import tempfile
    from pathlib import Path
    from types import SimpleNamespace

    from termcredit.trainer.train import Trainer

    tr = Trainer.__new__(Trainer)  # no sandbox, no policy: rollout and update are stubs
    tr.cfg, tr.providers, tr.estimator = cfg, [], _grpo()
    tr.tasks = [SimpleNamespace(name="t", parametrized=False, path=Path("tasks/t"))]
    tr.run_dir = Path(tempfile.mkdtemp(prefix="tc-stub-trainer-"))
    tr.image = lambda task, inst: "img"
    tr.rollout = lambda *a, **k: group
    tr.update = lambda g, adv: updates.append((g, adv)) or {"loss": 0.5}
    return tr


def test_train_step_masks_and_counts() -> None:
    group = [traj(1.0, flagged=True), traj(1.0), traj(0.0), traj(1.0, suspect=True)]
    updates: list = []
    row = _stub_trainer(TrainConfig(integrity="mask"), group, updates).train_step(0)
    (trained, adv), = updates
    assert trained == group[1:] and len(adv) == 3
    assert row["reward_mean"] == pytest.approx(1 / 3)
    assert row["success_rate"] == pytest.approx(1 / 3)
    assert (row["flagged_episodes"], row["suspect_episodes"], row["masked_episodes"]) == (1, 1, 1)
    assert row["infra_episodes"] == 0
    assert row["skipped_update"] == 0.0 and row["loss"] == 0.5
    assert row["action_tokens"] == 6 and row["tokens"] == 12


def test_train_step_zero_policy_keeps_the_group_and_skips_a_masked_out_one() -> None:
    group = [traj(1.0, flagged=True), traj(0.0)]
    updates: list = []
    row = _stub_trainer(TrainConfig(integrity="zero"), group, updates).train_step(0)
    assert updates[0][0] == group and row["reward_mean"] == 0.0 and row["masked_episodes"] == 0
    updates.clear()
    row = _stub_trainer(TrainConfig(integrity="mask"), group, updates).train_step(0)
    assert not updates and row["skipped_update"] == 1.0 and row["zero_advantage_group"] == 1.0


def test_evaluation_success_is_the_training_reward() -> None:
    group = [traj(1.0, flagged=True), traj(1.0), traj(1.0, suspect=True),
             traj(1.0, suspect=True, on_suspect="flag")]
    tr = _stub_trainer(TrainConfig(eval_samples=4), group, [])
    assert tr.evaluate(0)["eval/success"] == 0.5
    # one line per episode: the slot, its success (the training reward's), steps, tokens
    rows = [json.loads(ln) for ln in (tr.run_dir / "eval" / "step-0.jsonl").read_text()
            .splitlines()]
    assert [(r["task"], r["instance"], r["sample"], r["success"], r["steps"], r["tokens"],
             r["infra"]) for r in rows] == [("t", 0, k, s, 1, 2, False)
                                            for k, s in enumerate([0, 1, 0, 1])]
