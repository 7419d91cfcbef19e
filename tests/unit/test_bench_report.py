"""The bench report's derived numbers: updates to reach GRPO's final success and their ratio."""

from termcredit.bench.report import _auc, threshold_ratio


def _algo(curve):
    return {"curve": curve, "final_success_mean": curve[-1][1]}


def _summary(grpo, depgpo):
    s = {"grpo": _algo(grpo), "depgpo": _algo(depgpo)}
    final = s["grpo"]["final_success_mean"]
    for r in s.values():
        r["updates_to_grpo_final"] = next((x for x, y in r["curve"] if y >= final and y > 0),
                                          None)
    return s


def test_depgpo_sooner_gives_a_ratio_above_one():
    s = _summary([(0, 0.3), (5, 0.4), (10, 0.5), (15, 0.6)], [(0, 0.3), (5, 0.6), (10, 0.7),
                                                                (15, 0.7)])
    ratio, why = threshold_ratio(s)
    assert ratio == 3.0 and "15" in why and "5" in why


def test_depgpo_later_gives_a_ratio_below_one():
    s = _summary([(0, 0.3), (5, 0.6), (10, 0.6)], [(0, 0.3), (5, 0.4), (10, 0.6)])
    assert threshold_ratio(s)[0] == 0.5


def test_no_grpo_improvement_means_no_ratio():
    s = _summary([(0, 0.5), (5, 0.6), (10, 0.4)], [(0, 0.5), (5, 0.7), (10, 0.8)])
    ratio, why = threshold_ratio(s)
    assert ratio is None and "no higher than the start" in why


def test_depgpo_never_reaching_means_no_ratio():
    s = _summary([(0, 0.2), (5, 0.6)], [(0, 0.2), (5, 0.3)])
    ratio, why = threshold_ratio(s)
    assert ratio is None and "never reached" in why


def test_auc_is_the_mean_height_of_the_curve():
    assert _auc([(0, 0.0), (10, 1.0)]) == 0.5
    assert _auc([(0, 0.5)]) == 0.5
