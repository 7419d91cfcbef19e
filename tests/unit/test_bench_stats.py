"""The bench's decision statistics: paired two-stage bootstrap CIs, pairing of evaluation slots
(infra slots dropped for both), AUC and the detectable-difference formulas, by hand."""

import math
import time

import numpy as np
import pytest

from termcredit.bench.stats import (Run, apriori_mde, auc, compare, episode_stats, mde,
                                    pair_episodes, pair_updates, paired_bootstrap, run_dir_name)


def _eps(successes, task="t", infra=()):
    return [{"task": task, "instance": 1000 + i // 2, "sample": i % 2, "success": s,
             "steps": 3, "tokens": 50, "infra": i in infra} for i, s in enumerate(successes)]


def test_a_constant_difference_gives_that_difference_and_a_ci_of_zero_width():
    # every slot: a succeeds, b fails -> each slot differs by exactly one success
    d = paired_bootstrap([[1] * 8, [1] * 5], [[0] * 8, [0] * 5], n_boot=2000)
    assert (d.estimate, d.lo, d.hi) == (1.0, 1.0, 1.0)
    # a quarter of the slots differ by one success: the point estimate is that fraction, and
    # resampling slots moves it, so the CI has width
    d = paired_bootstrap([[1, 0, 0, 0]] * 3, [[0, 0, 0, 0]] * 3, n_boot=2000)
    assert d.estimate == 0.25 and d.lo < 0.25 < d.hi


def test_identical_outcomes_give_zero_and_a_ci_of_zero():
    rng = np.random.default_rng(3)
    xs = [rng.integers(2, size=50) for _ in range(3)]
    d = paired_bootstrap(xs, [x.copy() for x in xs], n_boot=2000)
    assert (d.estimate, d.lo, d.hi, d.se) == (0.0, 0.0, 0.0, 0.0)
    assert d.verdict() == "not distinguishable"


def test_two_seeds_four_slots_by_hand():
    # seed 0: d = [1, 0, 0, 1] -> 0.5; seed 1: d = [0, 1, 0, -1] -> 0; mean over seeds 0.25
    a = [_eps([1, 1, 0, 1]), _eps([0, 1, 1, 0, 1])]
    b = [_eps([0, 1, 0, 0]), _eps([0, 0, 1, 1, 0], infra={4})]  # slot 4 lost: dropped for both
    pairs = [pair_episodes(x, y) for x, y in zip(a, b)]
    assert [len(x) for x, _ in pairs] == [4, 4]
    d = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs], n_boot=2000)
    assert d.estimate == pytest.approx(0.25) and d.units == 8 and d.seeds == 2
    # unpaired, a's own success would count the dropped slot: 0.675 - 0.375
    assert episode_stats(a[1])["success"] == 0.6 and episode_stats(b[1])["infra_rate"] == 0.2


def test_seeds_are_resampled():
    # seed 0 all +1, seed 1 all 0: resampling seeds gives 0, 0.5 or 1 (1/4, 1/2, 1/4), so the
    # 95% interval is [0, 1]; resampling only slots within seeds would give [0.5, 0.5]
    d = paired_bootstrap([[1] * 6, [0] * 6], [[0] * 6, [0] * 6], n_boot=4000)
    assert d.estimate == 0.5 and (d.lo, d.hi) == (0.0, 1.0)


def test_the_ci_covers_the_true_difference():
    rng = np.random.default_rng(7)
    covered, delta = 0, 0.1
    for design in range(200):
        xs, ys = [], []
        for _ in range(3):  # seeds; each slot has its own difficulty, shared by both algorithms
            q = rng.uniform(0.2, 0.8, size=120)
            xs.append((rng.random(120) < q + delta / 2).astype(float))
            ys.append((rng.random(120) < q - delta / 2).astype(float))
        d = paired_bootstrap(xs, ys, n_boot=1000, seed=design)
        covered += d.lo <= delta <= d.hi
    assert covered >= 180


def test_ten_thousand_resamples_are_fast():
    rng = np.random.default_rng(0)
    xs = [rng.integers(2, size=216) for _ in range(3)]
    t0 = time.perf_counter()
    for _ in range(5):  # DepGPO against five baselines
        paired_bootstrap(xs, [rng.integers(2, size=216) for _ in range(3)])
    assert time.perf_counter() - t0 < 1.0


def test_same_seed_same_interval():
    xs, ys = [[1, 0, 1, 1, 0]] * 3, [[0, 0, 1, 0, 1]] * 3
    assert paired_bootstrap(xs, ys, seed=5) == paired_bootstrap(xs, ys, seed=5)


def test_mde_by_hand():
    z = 1.959963984540054 + 0.8416212335729143
    assert mde(0.05) == pytest.approx(z * 0.05)
    # p = 0.5, 200 episodes each: SE of the difference = sqrt(2 * 0.25 / 200) = 0.05
    assert apriori_mde(200) == pytest.approx(z * 0.05)
    assert apriori_mde(648) == pytest.approx(z * math.sqrt(0.5 / 648))  # 3 seeds x 216
    assert apriori_mde(648) < 0.10 < apriori_mde(200)


def test_auc_and_update_pairing():
    rows = [{"step": -1, "eval/success": 0.3}] + [{"step": i, "success_rate": v}
                                                  for i, v in enumerate([0.25, 0.5, 0.75])]
    assert auc(rows) == 0.5 and auc([{"step": -1}]) is None
    a, b = pair_updates(rows, rows[:3])
    assert list(a) == [0.25, 0.5] and list(b) == [0.25, 0.5]


def test_run_dir_names():
    assert run_dir_name("depgpo+opd") == "depgpo_plus_opd"
    assert run_dir_name("depgpo[subtract_min=false,beta=0.5]") == \
        "depgpo-subtract_min_false-beta_0.5"


def test_variants_are_compared_with_their_own_algorithm():
    """opd[scope=relevant] − opd and depgpo[beta=0] − depgpo; DepGPO − every non-variant,
    opd's variant included; a variant whose plain algorithm did not run has no Δ of its own."""
    finals = {"depgpo": [1, 1, 0, 0], "opd": [1, 0, 0, 0], "opd[scope=relevant]": [1, 1, 1, 0],
              "depgpo[beta=0]": [0, 0, 0, 0], "gigpo[gamma=0.9]": [1, 1, 1, 1]}
    runs = {a: {0: Run(rows=[], final=_eps(f), start=None)} for a, f in finals.items()}
    cmp_ = compare(runs, n_boot=200)
    assert set(cmp_["baselines"]) == {"opd", "opd[scope=relevant]", "gigpo[gamma=0.9]"}
    assert set(cmp_["ablations"]) == {"opd[scope=relevant]", "depgpo[beta=0]"}
    assert cmp_["ablations"]["opd[scope=relevant]"]["final"]["estimate"] == 0.75 - 0.25
    assert cmp_["ablations"]["depgpo[beta=0]"]["final"]["estimate"] == 0 - 0.5
    assert cmp_["baselines"]["opd[scope=relevant]"]["final"]["estimate"] == 0.5 - 0.75
    assert cmp_["ablations"]["opd[scope=relevant]"]["sentence"].startswith(
        "opd[scope=relevant] − opd: +0.500")
