"""GRPO (Dr.GRPO via std=False), OPD and `+` composition through the registry on hand-built
groups; expected per-token advantages worked out by hand."""

from __future__ import annotations

import math

import pytest

from termcredit import estimators
from termcredit.records import Step, TokenLayout, Trajectory, VerifierReport


def traj(reward: float | None, n_steps: int = 1, tokens: TokenLayout | None = None) -> Trajectory:
    steps = [Step(index=i, action=f"cmd{i}") for i in range(n_steps)]
    return Trajectory(task="t", instruction="", agent="x", steps=steps, tokens=tokens,
                      verifier=None if reward is None else VerifierReport(reward=reward))


def close(a: list[float], b: list[float], tol: float = 1e-6) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=tol) for x, y in zip(a, b))


R2 = math.sqrt(2)


def test_grpo_population_std() -> None:
    out = estimators.build("grpo")([traj(1), traj(0), traj(0)])
    # mean 1/3, population std √2/3 (the sample std would be 1/√3): Â = [√2, -1/√2, -1/√2]
    assert close([a[0] for a in out.advantages], [R2, -1 / R2, -1 / R2], 1e-5)
    assert out.stats["zero_advantage_group"] == 0.0


def test_dr_grpo_no_std() -> None:
    out = estimators.build("grpo", std=False)([traj(1, 2), traj(0), traj(0)])
    assert close(out.step_advantages[0], [2 / 3, 2 / 3])
    assert close([a[0] for a in out.advantages[1:]], [-1 / 3, -1 / 3])


def test_grpo_eps_and_missing_verifier() -> None:
    # no verifier: reward 0; rewards [1, 0]: std 0.5 + eps 1 = 1.5 -> ±1/3
    out = estimators.build("grpo", eps=1.0)([traj(1), traj(None)])
    assert close([a[0] for a in out.advantages], [1 / 3, -1 / 3])


def test_grpo_single_and_tied() -> None:
    assert estimators.build("grpo")([traj(0.7)]).advantages == [[0.0]]
    tied = estimators.build("grpo")([traj(0.5), traj(0.5)])
    assert tied.advantages == [[0.0], [0.0]] and tied.stats["zero_advantage_group"] == 1.0
    assert estimators.build("grpo")([]).advantages == []


def tok(old: list[float], teacher: list[float], mask: list[int],
        spans: list[list[int]]) -> TokenLayout:
    return TokenLayout(token_ids=list(range(len(old))), loss_mask=mask, logprobs=old,
                       step_spans=spans, teacher_logprobs=teacher)


# two steps of two sampled tokens each, an observation token between them; the prompt and
# observation tokens (mask 0) have log-probs that must not leak into an advantage
TWO_STEPS = tok(old=[-3.0, -1.0, -0.5, -2.0, -2.0, -0.25],
                teacher=[-1.0, -0.5, -1.0, -0.5, -1.0, -0.75],
                mask=[0, 1, 1, 0, 1, 1], spans=[[1, 3], [4, 6]])


def test_opd_kappa() -> None:
    out = estimators.build("opd", kappa=2.0)([traj(1, 2, TWO_STEPS)])
    # -2·(old - teacher): -2·(-0.5) = 1, -2·0.5 = -1, -2·(-1) = 2, -2·0.5 = -1
    assert close(out.advantages[0], [0.0, 1.0, -1.0, 0.0, 2.0, -1.0])
    assert out.stats["missing_teacher"] == 0.0


def test_opd_discount_stays_within_each_step() -> None:
    out = estimators.build("opd", kappa=2.0, gamma_kl=0.5)([traj(1, 2, TWO_STEPS)])
    # step 0: [1 + 0.5·(-1), -1]; step 1: [2 + 0.5·(-1), -1]; nothing flows from step 1 back
    assert close(out.advantages[0], [0.0, 0.5, -1.0, 0.0, 1.5, -1.0])


def test_opd_discount_skips_masked_tokens_inside_a_step() -> None:
    layout = tok(old=[-1.0, -3.0, -1.0, -1.0], teacher=[0.0, 0.0, 0.0, -2.0],
                 mask=[1, 0, 1, 1], spans=[[0, 4]])
    out = estimators.build("opd", gamma_kl=0.5)([traj(1, 1, layout)])
    # raw [1, 0 (masked), 1, -1]; backwards: -1, 1 + 0.5·(-1) = 0.5, masked 0, 1 + 0.5·0.5
    assert close(out.advantages[0], [1.25, 0.0, 0.5, -1.0])


def test_opd_without_teacher_gives_zeros() -> None:
    no_teacher = TokenLayout(token_ids=[1, 2, 3], loss_mask=[0, 1, 1], logprobs=[0, -1, -1],
                             step_spans=[[1, 3]])
    out = estimators.build("opd")([traj(1, 1, no_teacher), traj(1, 2), traj(1, 1, TWO_STEPS)])
    assert out.advantages[0] == [0.0, 0.0, 0.0] and out.advantages[1] == [0.0, 0.0]
    assert out.stats["missing_teacher"] == pytest.approx(2 / 3)
    assert estimators.build("opd")([]).stats["missing_teacher"] == 0.0


def test_grpo_plus_opd_sums_and_prefixes_stats() -> None:
    group = [traj(1, 2, TWO_STEPS), traj(0, 2, TWO_STEPS)]
    out = estimators.build("grpo + opd", std=False, kappa=2.0)(group)
    # Dr.GRPO ±0.5 on the four loss tokens, plus OPD [1, -1, 2, -1]
    assert close(out.advantages[0], [0.0, 1.5, -0.5, 0.0, 2.5, -0.5])
    assert close(out.advantages[1], [0.0, 0.5, -1.5, 0.0, 1.5, -1.5])
    assert out.stats == {"grpo/zero_advantage_group": 0.0, "opd/missing_teacher": 0.0}


def test_gigpo_plus_opd_settings_reach_their_part() -> None:
    group = [traj(1, 2, TWO_STEPS), traj(0, 2, TWO_STEPS)]
    for t, anchors in zip(group, (["a", "b"], ["c", "d"])):
        for s, a in zip(t.steps, anchors):
            s.anchor_obs = a
    out = estimators.build("gigpo+opd", anchor="observation", omega=0.5, kappa=2.0)(group)
    # singleton anchors: GiGPO = A^E = ±0.5 per step; OPD as above
    assert close(out.advantages[0], [0.0, 1.5, -0.5, 0.0, 2.5, -0.5])
    assert close(out.advantages[1], [0.0, 0.5, -1.5, 0.0, 1.5, -1.5])


def test_build_rejects_unknown_names_and_settings() -> None:
    with pytest.raises(ValueError, match="unknown estimator"):
        estimators.build(" + ")
    with pytest.raises(ValueError, match=r"\['gamma_kl'\]"):
        estimators.build("grpo", gamma_kl=0.5)
    assert set(estimators.names()) >= {"adastep", "depgpo", "gigpo", "grpo", "opd"}
