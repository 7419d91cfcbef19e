"""GiGPO and AdaStep through the registry on hand-built groups; every expected per-step and
per-token advantage is worked out by hand in the comments (population stds throughout)."""

from __future__ import annotations

import math

import pytest

from termcredit import estimators
from termcredit.records import Step, TokenLayout, Trajectory, VerifierReport


def traj(reward: float, anchors: list[str], *, actions: list[str] | None = None,
         invalid: list[bool] | None = None, tokens: TokenLayout | None = None) -> Trajectory:
    acts = actions or [f"cmd{i}" for i in range(len(anchors))]
    bad = invalid or [False] * len(anchors)
    steps = [Step(index=i, action=acts[i], anchor_obs=anchors[i], action_key=acts[i],
                  invalid=bad[i]) for i in range(len(anchors))]
    return Trajectory(task="t", instruction="", agent="x", steps=steps,
                      verifier=VerifierReport(reward=reward), tokens=tokens)


def close(a: list[float], b: list[float], tol: float = 1e-6) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=tol) for x, y in zip(a, b))


def penalty_group() -> list[Trajectory]:
    """T1 (R=1) takes an invalid action at step 1, inside the 2-member anchor group S1."""
    return [traj(1, ["S0", "S1"], invalid=[False, True]),
            traj(0, ["S0", "S1"]),
            traj(0, ["S0", "Z"])]


def test_gigpo_omega_scales_the_step_term_and_penalty_stays_on_its_row() -> None:
    out = estimators.build("gigpo", anchor="observation", gamma=0.5, omega=0.5, invalid_penalty=0.1)(penalty_group())
    # returns G_t: T1 [0.5·1, 1] - [0, 0.1] = [0.5, 0.9] (penalty not discounted back); T2, T3 0
    # A^E rows, mean R = 1/3: T1 [1 - 1/3, 0.9 - 1/3] = [2/3, 17/30]; T2, T3 [-1/3, -1/3]
    # A^S: S0 [0.5, 0, 0] - 1/6 = [1/3, -1/6, -1/6]; S1 [0.9, 0] - 0.45 = [0.45, -0.45]; Z 0
    assert close(out.step_advantages[0], [2 / 3 + 0.5 / 3, 17 / 30 + 0.5 * 0.45])
    assert close(out.step_advantages[1], [-1 / 3 - 0.5 / 6, -1 / 3 - 0.5 * 0.45])
    assert close(out.step_advantages[2], [-1 / 3 - 0.5 / 6, -1 / 3])
    assert out.stats["singleton_anchor_ratio"] == pytest.approx(1 / 6)
    assert out.stats["anchor_groups"] == 3.0


def test_gigpo_penalised_step_in_a_singleton_anchor_group_still_pays() -> None:
    group = [traj(1, ["a", "b"], invalid=[False, True]), traj(0, ["c", "d"])]
    out = estimators.build("gigpo", anchor="observation", invalid_penalty=0.25)(group)
    # all anchors singletons: A^S = 0; A^E rows [1 - 0.5, 0.75 - 0.5], [-0.5, -0.5]
    assert close(out.step_advantages[0], [0.5, 0.25])
    assert close(out.step_advantages[1], [-0.5, -0.5])


def test_gigpo_lone_trajectory_only_pays_its_penalty() -> None:
    out = estimators.build("gigpo", anchor="observation")([traj(1, ["a", "b"], invalid=[True, False])])
    assert close(out.step_advantages[0], [-0.1, 0.0])


def test_gigpo_mean_std_norm_uses_the_population_std() -> None:
    group = [traj(r, ["S"]) for r in (1, 0, 0)]
    out = estimators.build("gigpo", anchor="observation", gamma=1.0, mode="mean_std_norm")(group)
    # R = [1, 0, 0]: mean 1/3, population std √2/3 -> A^E = [√2, -1/√2, -1/√2]; one anchor
    # group with the same returns: A^S = A^E; A = 2·A^E
    r2 = math.sqrt(2)
    assert close([s[0] for s in out.step_advantages], [2 * r2, -2 / r2, -2 / r2], 1e-5)


def test_gigpo_eps_is_added_to_the_std() -> None:
    group = [traj(1, ["S"]), traj(0, ["S"])]
    out = estimators.build("gigpo", anchor="observation", gamma=1.0, mode="mean_std_norm", eps=1.0)(group)
    # std 0.5 + eps 1 = 1.5: A^E = A^S = ±0.5/1.5
    assert close([s[0] for s in out.step_advantages], [2 / 3, -2 / 3])


def test_gigpo_std_mode_without_spread_does_not_divide_a_penalty_by_eps() -> None:
    group = [traj(0, ["a"], invalid=[True]), traj(0, ["b"])]
    out = estimators.build("gigpo", anchor="observation", mode="mean_std_norm", invalid_penalty=0.1)(group)
    # rewards [0, 0] have no spread: F_norm = 1, so the penalised row is -0.1, not -0.1/eps
    assert close([s[0] for s in out.step_advantages], [-0.1, 0.0])


def test_gigpo_cross_steps_baseline_over_all_step_rows() -> None:
    # T1 (R=1) has 3 steps, one invalid; T2 (R=0) has 1; all anchors singletons (A^S = 0)
    group = [traj(1, ["a", "b", "c"], invalid=[False, True, False]), traj(0, ["d"])]
    out = estimators.build("gigpo", anchor="observation", cross_steps=True)(group)
    # rows [1, 0.9, 1, 0]: mean 2.9/4 = 0.725
    assert close(out.step_advantages[0], [0.275, 0.175, 0.275])
    assert close(out.step_advantages[1], [-0.725])
    per_traj = estimators.build("gigpo", anchor="observation")(group)  # mean over trajectories: 0.5
    assert close(per_traj.step_advantages[0], [0.5, 0.4, 0.5])


def test_gigpo_cross_steps_std() -> None:
    group = [traj(1, ["a", "b", "c"]), traj(0, ["d"])]
    out = estimators.build("gigpo", anchor="observation", cross_steps=True, mode="mean_std_norm")(group)
    # rows [1, 1, 1, 0]: mean 0.75, population std √(0.75·0.25) = √3/4
    sd = math.sqrt(3) / 4
    assert close(out.step_advantages[0], [0.25 / sd] * 3, 1e-5)
    assert close(out.step_advantages[1], [-0.75 / sd], 1e-5)


def test_gigpo_similarity_compares_with_the_first_member() -> None:
    # difflib ratios: r1~r2 = 2·5/20 = 0.5, r2~r3 = 0.5, r1~r3 = 0: with threshold 0.5, r3 is
    # compared with r1 (the cluster's first member) and opens its own anchor group
    r1, r2, r3 = "aaaaaaaaaa", "aaaaabbbbb", "bbbbbbbbbb"
    group = [traj(1, [r1]), traj(0, [r2]), traj(0, [r3])]
    out = estimators.build("gigpo", anchor="observation", similarity=0.5)(group)
    # A^E = [2/3, -1/3, -1/3]; anchor group {r1, r2}: returns [1, 0] -> ±0.5; r3 alone -> 0
    assert close([s[0] for s in out.step_advantages], [2 / 3 + 0.5, -1 / 3 - 0.5, -1 / 3])
    assert out.stats["anchor_groups"] == 2.0
    exact = estimators.build("gigpo", anchor="observation")(group)
    assert close([s[0] for s in exact.step_advantages], [2 / 3, -1 / 3, -1 / 3])


def test_gigpo_similarity_exact_repeat_joins_its_cluster() -> None:
    # r4 repeats r2 exactly; r2 joined r1's cluster, so r4 does too (3 rows: returns [1, 0, 0])
    r1, r2 = "aaaaaaaaaa", "aaaaabbbbb"
    group = [traj(1, [r1]), traj(0, [r2]), traj(0, [r2])]
    out = estimators.build("gigpo", anchor="observation", similarity=0.5)(group)
    assert close([s[0] for s in out.step_advantages], [4 / 3, -2 / 3, -2 / 3])


def test_gigpo_broadcasts_to_loss_tokens() -> None:
    tok = TokenLayout(token_ids=[0, 1, 2, 3, 4], loss_mask=[0, 1, 0, 1, 1], logprobs=[0.0] * 5,
                      step_spans=[[1, 2], [3, 5]])
    group = [traj(1, ["a", "b"], invalid=[False, True], tokens=tok), traj(0, ["c", "d"])]
    out = estimators.build("gigpo", anchor="observation")(group)
    assert close(out.advantages[0], [0.0, 0.5, 0.0, 0.4, 0.4])
    assert close(out.advantages[1], [-0.5, -0.5])  # no tokens: one value per step


def test_gigpo_rejects_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="mean_norm or mean_std_norm"):
        estimators.build("gigpo", anchor="observation", mode="std")


# ---------------------------------------------------------------- AdaStep


def adastep_group() -> list[Trajectory]:
    """Anchor S shared at step 0 by four trajectories, actions a, a, b, b; step 1 singletons."""
    return [traj(r, ["S", f"x{i}"], actions=[a, "z"])
            for i, (r, a) in enumerate(((1, "a"), (0, "a"), (1, "b"), (1, "b")))]


def test_adastep_shrinkage_weight_scales_the_step_term() -> None:
    out = estimators.build("adastep", anchor="observation", gamma=0.5)(adastep_group())
    # step-0 returns 0.5·R = [0.5, 0, 0.5, 0.5]: mean 0.375, pvar (3·0.125² + 0.375²)/4
    # = 0.046875; within: a [0.5, 0] pvar 0.0625, b pvar 0 -> 0.5·0.0625 = 0.03125;
    # ŵ = 1 - 0.03125/0.046875 = 1/3. A^S = [0.125, -0.375, 0.125, 0.125];
    # A^E = R - 0.75 = [0.25, -0.75, 0.25, 0.25]
    w = 1 / 3
    assert close([s[0] for s in out.step_advantages],
                 [0.25 + w * 0.125, -0.75 - w * 0.375, 0.25 + w * 0.125, 0.25 + w * 0.125])
    assert close([s[1] for s in out.step_advantages], [0.25, -0.75, 0.25, 0.25])
    assert out.stats["fallback_rate"] == 0.0 and out.stats["anchor_groups"] == 5.0


def test_adastep_invalid_penalty_in_both_terms() -> None:
    group = adastep_group()
    group[3].steps[1].invalid = True  # a singleton step: only its A^E row pays
    group[1].steps[0].invalid = True  # inside S: its return and its A^E row pay
    out = estimators.build("adastep", anchor="observation", gamma=0.5, invalid_penalty=0.1)(group)
    # step-0 returns [0.5, -0.1, 0.5, 0.5]: mean 0.35, pvar (3·0.15² + 0.45²)/4 = 0.0675;
    # within: a [0.5, -0.1] pvar 0.09 -> 0.5·0.09 = 0.045; ŵ = 1 - 0.045/0.0675 = 1/3
    # A^S = [0.15, -0.45, 0.15, 0.15]; A^E rows step 0: [0.25, -0.85, 0.25, 0.25]
    w = 1 / 3
    assert close([s[0] for s in out.step_advantages],
                 [0.25 + w * 0.15, -0.85 - w * 0.45, 0.25 + w * 0.15, 0.25 + w * 0.15])
    assert close([s[1] for s in out.step_advantages], [0.25, -0.75, 0.25, 0.15])


def test_adastep_mean_std_norm() -> None:
    group = [traj(r, ["S"], actions=[a]) for r, a in ((1, "a"), (0.5, "a"), (0, "b"), (0.5, "b"))]
    out = estimators.build("adastep", anchor="observation", gamma=1.0, mode="mean_std_norm")(group)
    # R = [1, .5, 0, .5]: mean .5, population std √0.125; ŵ = 1 - 0.0625/0.125 = 0.5
    # A^E = A^S = [.5, 0, -.5, 0]/√0.125 = [√2, 0, -√2, 0]; A = 1.5·A^E
    r2 = math.sqrt(2)
    assert close([s[0] for s in out.step_advantages], [1.5 * r2, 0.0, -1.5 * r2, 0.0], 1e-5)


def test_adastep_fallback_weight_and_eps() -> None:
    group = [traj(1, ["S"], actions=["a"]), traj(0, ["S"], actions=["b"])]  # ineligible
    out = estimators.build("adastep", anchor="observation", gamma=1.0, fallback=0.25)(group)
    assert close([s[0] for s in out.step_advantages], [0.5 + 0.25 * 0.5, -0.5 - 0.25 * 0.5])
    assert out.stats["fallback_rate"] == 1.0
    std = estimators.build("adastep", anchor="observation", gamma=1.0, mode="mean_std_norm", eps=1.0)(group)
    # std 0.5 + eps 1: A^E = A^S = ±1/3, fallback ŵ = 1
    assert close([s[0] for s in std.step_advantages], [2 / 3, -2 / 3])


def test_adastep_similarity_groups_anchors() -> None:
    group = [traj(1, ["$ ls\nfile_a.txt"], actions=["a"]),
             traj(0, ["$ ls\nfile_b.txt"], actions=["b"])]
    out = estimators.build("adastep", anchor="observation", similarity=0.8)(group)
    # one anchor group (ratio 26/28), ineligible -> ŵ = 1: A = ±(0.5 + 0.5)
    assert close([s[0] for s in out.step_advantages], [1.0, -1.0])
    exact = estimators.build("adastep", anchor="observation")(group)
    assert close([s[0] for s in exact.step_advantages], [0.5, -0.5])
    assert exact.stats["fallback_rate"] == 1.0  # no multi-member anchor group at all


def test_adastep_rejects_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="mean_norm or mean_std_norm"):
        estimators.build("adastep", anchor="observation", mode="std")


def defaults_group() -> list[Trajectory]:
    """Anchor S at 2 steps from the end in T1 and 1 in T2; T1's last step is invalid and has a
    step reward of 0.5."""
    group = [traj(1, ["S", "x"], invalid=[False, True]), traj(0, ["S"])]
    group[0].steps[1].reward = 0.5
    return group


@pytest.mark.parametrize("name", ["gigpo", "adastep"])
def test_defaults_gamma_095_penalty_01(name: str) -> None:
    out = estimators.build(name, anchor="observation")(defaults_group())
    # T1 rewards [0, 0.5 + R 1] -> G = [0.95·1.5, 1.5] - [0, 0.1] = [1.425, 1.4]; T2 G = [0]
    # S: [1.425, 0] - 0.7125 = ±0.7125 (AdaStep: 2 rows, ineligible -> ŵ = 1); x alone -> 0
    # A^E rows: T1 [1 - 0.5, 0.9 - 0.5], T2 [-0.5]
    assert close(out.step_advantages[0], [0.5 + 0.7125, 0.4])
    assert close(out.step_advantages[1], [-0.5 - 0.7125])
    assert close(out.advantages[0], [0.5 + 0.7125, 0.4])  # no tokens: per step


def test_gigpo_empty_group() -> None:
    out = estimators.build("gigpo", anchor="observation")([])
    assert out.advantages == [] and out.stats["singleton_anchor_ratio"] == 1.0


def test_adastep_weights_and_fallback_rate_per_anchor_group() -> None:
    # anchors: T0 [U0, S, Q, P], T1 [U1, S, Q, P], T2 [U2, S, Q], T3 [U3, S, Q]; a singleton
    # anchor group comes first. R = [1, 0, 1, 1], γ = 1: every return is R.
    # S actions a, a, b, b: within 0.5·pvar[1, 0] = 0.125, pvar(R) = 0.1875 -> ŵ = 1/3
    # Q actions a, b, a, b: within 0.5·pvar[0, 1] = 0.125 -> ŵ = 1/3
    # P (2 rows, ineligible): ŵ = 1, A^S = ±0.5. fallback rate = 1 - 2 eligible / 3 multi
    rows = [("a", "a", "p"), ("a", "b", "q"), ("b", "a"), ("b", "b")]
    group = [traj(r, [f"U{i}", "S", "Q", "P"][:len(acts) + 1], actions=["u", *acts])
             for i, (r, acts) in enumerate(zip((1, 0, 1, 1), rows))]
    out = estimators.build("adastep", anchor="observation", gamma=1.0)(group)
    w = 1 / 3
    expect = [[0.25, 0.25 + w * 0.25, 0.25 + w * 0.25, 0.25 + 0.5],
              [-0.75, -0.75 - w * 0.75, -0.75 - w * 0.75, -0.75 - 0.5],
              [0.25, 0.25 + w * 0.25, 0.25 + w * 0.25],
              [0.25, 0.25 + w * 0.25, 0.25 + w * 0.25]]
    for got, exp, adv in zip(out.step_advantages, expect, out.advantages):
        assert close(got, exp) and close(adv, exp)
    assert out.stats["fallback_rate"] == pytest.approx(1 / 3)
    assert out.stats["anchor_groups"] == 7.0


def test_shrinkage_weight_of_nothing() -> None:
    from termcredit.estimators.adastep import shrinkage_weight

    assert shrinkage_weight([], []) is None
