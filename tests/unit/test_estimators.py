"""Every baseline estimator on hand-made groups, against the reference's formulas."""

import math

import pytest

from termcredit import estimators
from termcredit.records import Step, TokenLayout, Trajectory, VerifierReport, step_token_counts


def traj(reward: float, anchors: list[str], actions: list[str] | None = None,
         invalid: list[bool] | None = None, tokens: TokenLayout | None = None) -> Trajectory:
    steps = [Step(index=i, action=a, anchor_obs=a_obs, action_key=(actions or anchors)[i],
                  invalid=(invalid or [False] * len(anchors))[i])
             for i, (a, a_obs) in enumerate(zip(actions or anchors, anchors))]
    return Trajectory(task="t", instruction="", agent="x", steps=steps,
                      verifier=VerifierReport(reward=reward), tokens=tokens)


def close(a, b, tol=1e-4):
    return all(math.isclose(x, y, abs_tol=tol) for x, y in zip(a, b)) and len(a) == len(b)


def test_grpo_and_dr_grpo():
    group = [traj(1, ["s"]), traj(0, ["s"]), traj(0, ["s"]), traj(1, ["s"])]
    out = estimators.build("grpo")(group)
    assert close([a[0] for a in out.advantages], [1, -1, -1, 1])
    out = estimators.build("grpo", std=False)(group)
    assert close([a[0] for a in out.advantages], [0.5, -0.5, -0.5, 0.5])
    same = estimators.build("grpo")([traj(1, ["s"]), traj(1, ["s"])])
    assert same.stats["zero_advantage_group"] == 1.0 and same.advantages == [[0.0], [0.0]]


def test_broadcast_to_loss_tokens_only():
    tok = TokenLayout(token_ids=list(range(8)), loss_mask=[0, 0, 1, 1, 0, 0, 1, 0],
                      logprobs=[0.0] * 8, step_spans=[[2, 4], [6, 8]])
    group = [traj(1, ["a", "b"], tokens=tok), traj(0, ["a", "b"], tokens=tok)]
    out = estimators.build("grpo", std=False)(group)
    assert out.advantages[0] == [0, 0, 0.5, 0.5, 0, 0, 0.5, 0]
    assert step_token_counts(group[0]) == [2, 1]


def test_gigpo_step_advantage_within_anchor_groups():
    group = [traj(1, ["S0", "A1"]), traj(0, ["S0", "B1"])]
    out = estimators.build("gigpo", anchor="observation", gamma=0.5)(group)
    # returns A: [0.5, 1], B: [0, 0]; A^E = ±0.5; S0 group -> ±0.25; step-1 singletons -> 0
    assert close(out.step_advantages[0], [0.75, 0.5])
    assert close(out.step_advantages[1], [-0.75, -0.5])
    assert out.stats["singleton_anchor_ratio"] == pytest.approx(0.5)


def test_gigpo_singleton_anchors_degrade_to_grpo_mean_norm():
    group = [traj(1, ["a", "b"]), traj(0, ["c", "d"])]
    out = estimators.build("gigpo", anchor="observation")(group)
    assert close(out.step_advantages[0], [0.5, 0.5]) and close(out.step_advantages[1], [-0.5, -0.5])
    assert out.stats["singleton_anchor_ratio"] == 1.0


def test_gigpo_std_mode_and_invalid_penalty():
    group = [traj(1, ["s", "x"], invalid=[False, True]), traj(0, ["s", "y"])]
    out = estimators.build("gigpo", anchor="observation", gamma=1.0, mode="mean_std_norm", invalid_penalty=0.1)(group)
    sd = 0.5  # population std of [1, 0]
    # A^E rows: A [(1 - .5)/sd, (0.9 - .5)/sd] (penalty on its own row), B [-.5/sd] * 2
    # step returns: A [1, 0.9] (penalty on its own step only), B [0, 0]; S0 group [1, 0]
    assert close(out.step_advantages[0], [0.5 / sd + 0.5 / sd, 0.4 / sd], 1e-3)
    assert close(out.step_advantages[1], [-0.5 / sd - 0.5 / sd, -0.5 / sd], 1e-3)


def test_gigpo_similarity_grouping():
    group = [traj(1, ["$ ls\nfile_a.txt"]), traj(0, ["$ ls\nfile_b.txt"])]
    exact = estimators.build("gigpo", anchor="observation")(group)
    similar = estimators.build("gigpo", anchor="observation", similarity=0.8)(group)
    assert exact.stats["singleton_anchor_ratio"] == 1.0
    assert similar.stats["singleton_anchor_ratio"] == 0.0


def test_adastep_weight_from_variance_decomposition():
    from termcredit.estimators.adastep import shrinkage_weight

    assert shrinkage_weight([1, 1, 0, 0], ["a", "a", "b", "b"]) == pytest.approx(1.0)
    assert shrinkage_weight([1, 0, 1, 0], ["a", "a", "b", "b"]) == pytest.approx(0.0)
    assert shrinkage_weight([1, 0.5, 0, 0.5], ["a", "a", "b", "b"]) == pytest.approx(0.5)
    assert shrinkage_weight([1, 0], ["a", "a"]) is None  # one action: not eligible
    assert shrinkage_weight([1, 0, 1], ["a", "a", "b"]) is None  # an action seen once
    assert shrinkage_weight([1, 1, 1, 1], ["a", "a", "b", "b"]) is None  # no variance


def test_adastep_scales_step_advantage_and_falls_back():
    # 4 trajectories share anchor S; actions a,a,b,b; rewards 1,0,1,0: the action explains
    # nothing -> w = 0 -> A = A^E only
    group = [traj(r, ["S"], actions=[a]) for r, a in ((1, "a"), (0, "a"), (1, "b"), (0, "b"))]
    out = estimators.build("adastep", anchor="observation", gamma=1.0)(group)
    assert close([s[0] for s in out.step_advantages], [0.5, -0.5, 0.5, -0.5])
    assert out.stats["fallback_rate"] == 0.0
    gigpo = estimators.build("gigpo", anchor="observation", gamma=1.0)(group)
    assert close([s[0] for s in gigpo.step_advantages], [1.0, -1.0, 1.0, -1.0])
    # ineligible group (all actions distinct) -> fallback weight 1 == GiGPO
    group2 = [traj(r, ["S"], actions=[a]) for r, a in ((1, "a"), (0, "b"))]
    ada2 = estimators.build("adastep", anchor="observation", gamma=1.0)(group2)
    assert close(ada2.step_advantages[0], estimators.build("gigpo", anchor="observation", gamma=1.0)(group2)
                 .step_advantages[0])
    assert ada2.stats["fallback_rate"] == 1.0


def test_opd_sampled_token_reverse_kl():
    tok = TokenLayout(token_ids=[1, 2, 3, 4], loss_mask=[0, 1, 1, 0],
                      logprobs=[0, -0.5, -1.0, 0], step_spans=[[1, 3]],
                      teacher_logprobs=[0, -0.2, -2.0, 0])
    out = estimators.build("opd", kappa=1.0)([traj(1, ["s"], tokens=tok)])
    assert close(out.advantages[0], [0, 0.3, -1.0, 0])
    disc = estimators.build("opd", kappa=1.0, gamma_kl=0.5)([traj(1, ["s"], tokens=tok)])
    assert close(disc.advantages[0], [0, 0.3 - 0.5, -1.0, 0])


def test_composition_sums_and_errors():
    tok = TokenLayout(token_ids=[1, 2], loss_mask=[1, 1], logprobs=[-1, -1], step_spans=[[0, 2]],
                      teacher_logprobs=[-0.5, -1.5])
    group = [traj(1, ["s"], tokens=tok), traj(0, ["s"], tokens=tok)]
    both = estimators.build("grpo+opd", std=False)(group)
    assert close(both.advantages[0], [0.5 + 0.5, 0.5 - 0.5])  # grpo 0.5 + opd ±0.5
    with pytest.raises(ValueError, match="unknown estimator"):
        estimators.build("grpo+nope")
    with pytest.raises(ValueError, match="takes no setting"):
        estimators.build("grpo", beta=3)


def test_needs_read_the_spec_as_build_does():
    assert estimators.spec_parts(" depgpo + opd ") == ["depgpo", "opd"]
    teacher = frozenset({estimators.TEACHER_LOGPROBS})
    assert estimators.needs("depgpo+opd") == estimators.needs(" opd ") == teacher
    assert estimators.build("depgpo+opd").needs == estimators.build("opd").needs == teacher
    assert estimators.needs("grpo") == estimators.needs("depgpo+gigpo") == frozenset()
    assert estimators.build("grpo").needs == estimators.build("gigpo+adastep").needs == frozenset()
    with pytest.raises(ValueError, match="unknown estimator"):
        estimators.needs("grpo+nope")
