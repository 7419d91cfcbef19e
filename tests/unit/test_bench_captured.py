"""captured = (DepGPO − GRPO) / (oracle − GRPO) in the bench report (issue #34): the ratio of
two paired differences over the slots all three algorithms evaluated, with a bootstrap CI, by
hand."""

import pytest

from termcredit.bench.ceiling import ceiling_lines
from termcredit.bench.stats import Run, compare, ratio_bootstrap


def _eps(successes, infra=()):
    return [{"task": "t", "instance": 1000 + i, "sample": 0, "success": s, "steps": 3,
             "tokens": 50, "infra": i in infra} for i, s in enumerate(successes)]


def _runs(finals: dict[str, list[list[int]]], infra: dict[str, set[int]] | None = None):
    infra = infra or {}
    return {a: {s: Run(rows=[], final=_eps(f, infra.get(f"{a}/{s}", ())), start=None)
                for s, f in enumerate(per_seed)} for a, per_seed in finals.items()}


def test_two_seeds_by_hand() -> None:
    # seed 0: depgpo − grpo = [1, 0, 0, 0] -> 0.25; oracle − grpo = [1, 1, 0, 0] -> 0.5
    # seed 1 (grpo's slot 4 lost to infra: dropped for all three):
    #         depgpo − grpo = [0, 0, 1, 0] -> 0.25; oracle − grpo = [1, 0, 1, 0] -> 0.5
    # means over seeds 0.25 / 0.5 -> captured 0.5; the ceiling's own gain 0.5
    runs = _runs({"grpo": [[0, 0, 1, 0], [0, 1, 0, 0, 0]],
                  "depgpo": [[1, 0, 1, 0], [0, 1, 1, 0, 1]],
                  "oracle": [[1, 1, 1, 0], [1, 1, 1, 0, 1]]}, infra={"grpo/1": {4}})
    cap = compare(runs, n_boot=4000)["captured"]
    assert cap["estimate"] == pytest.approx(0.5)
    assert (cap["numerator"], cap["denominator"]) == (pytest.approx(0.25), pytest.approx(0.5))
    assert cap["units"] == 8 and cap["seeds"] == 2
    assert cap["lo"] < 0.5 < cap["hi"]
    assert cap["ceiling_gain"]["estimate"] == pytest.approx(0.5)
    text = "\n".join(ceiling_lines(cap))
    assert "- **captured: +0.500** [" in text
    assert "- oracle − grpo: +0.500 [" in text and "- depgpo − grpo: +0.250 on" in text


def test_depgpo_equal_to_the_oracle_captures_all_of_it() -> None:
    # every resample with a ceiling gives 1 exactly; one whose four draws all land on the two
    # slots without a gain has none: (1/2)^4 = 1/16 of them, left out of the CI
    cap = ratio_bootstrap([[1, 1, 0, 0]], [[1, 1, 0, 0]], n_boot=8000)
    assert (cap["estimate"], cap["lo"], cap["hi"]) == (1.0, 1.0, 1.0)
    assert cap["den_not_positive"] == pytest.approx(1 / 16, abs=0.015)
    assert "of the resamples had no ceiling" in "\n".join(ceiling_lines(
        {**cap, "ref": "depgpo", "floor": "grpo", "ceiling": "oracle",
         "ceiling_gain": {"estimate": 0.5, "lo": 0.0, "hi": 1.0, "se": 0.25, "seeds": 1,
                          "units": 4, "level": 0.95}}))


def test_no_ceiling_no_ratio() -> None:
    runs = _runs({"grpo": [[1, 0, 1, 0]], "depgpo": [[1, 1, 1, 0]], "oracle": [[1, 0, 1, 0]]})
    cap = compare(runs, n_boot=500)["captured"]
    assert cap["estimate"] is None and cap["denominator"] == 0.0
    assert "captured: undefined" in "\n".join(ceiling_lines(cap))


def test_without_an_oracle_run_nothing_is_said() -> None:
    runs = _runs({"grpo": [[1, 0]], "depgpo": [[1, 1]]})
    assert compare(runs, n_boot=200)["captured"] is None
    assert ceiling_lines(None) == []


def test_a_variant_of_depgpo_gets_its_own_share() -> None:
    # depgpo − grpo = [1, 0, 0, 0] -> 0.25; the variant − grpo = [1, 1, 0, 0] -> 0.5;
    # oracle − grpo = [1, 1, 0, 0] -> 0.5: depgpo captures 0.5, the variant 1.0
    runs = _runs({"grpo": [[0, 0, 1, 0]], "depgpo": [[1, 0, 1, 0]],
                  "depgpo[negative=destroyers]": [[1, 1, 1, 0]], "oracle": [[1, 1, 1, 0]]})
    cmp_ = compare(runs, n_boot=1000)
    assert cmp_["captured"]["estimate"] == pytest.approx(0.5)
    variant = cmp_["captured_variants"]["depgpo[negative=destroyers]"]
    assert (variant["estimate"], variant["numerator"]) == (pytest.approx(1.0), pytest.approx(0.5))
    assert "oracle" not in cmp_["captured_variants"]  # only the reference's own variants
    text = "\n".join(ceiling_lines(cmp_["captured"], cmp_["captured_variants"]))
    assert ("- depgpo[negative=destroyers] − grpo: +0.500; "
            "**depgpo[negative=destroyers] captured: +1.000**") in text


def test_the_ceiling_is_the_best_oracle_weighting() -> None:
    # oracle 0.25, oracle[inside=true] 1.0 (final success): the variant is the ceiling.
    # depgpo − grpo = [0, 1, 0, 0] -> 0.25; variant − grpo = [1, 1, 0, 1] -> 0.75 -> 1/3
    runs = _runs({"grpo": [[0, 0, 1, 0]], "depgpo": [[0, 1, 1, 0]],
                  "oracle": [[0, 0, 1, 0]], "oracle[inside=true]": [[1, 1, 1, 1]]})
    cmp_ = compare(runs, n_boot=1000)
    assert cmp_["ceiling_candidates"] == {"oracle": 0.25, "oracle[inside=true]": 1.0}
    cap = cmp_["captured"]
    assert cap["ceiling"] == "oracle[inside=true]"
    assert cap["estimate"] == pytest.approx(1 / 3)
    text = "\n".join(ceiling_lines(cap, None, cmp_["ceiling_candidates"]))
    assert "- oracle[inside=true] − grpo: +0.750 [" in text
    assert "best of the oracle's weightings run here (final success: oracle 0.250, " \
           "oracle[inside=true] 1.000)" in text
    # a tie keeps the plain oracle
    tie = _runs({"grpo": [[0, 0]], "depgpo": [[1, 0]], "oracle": [[1, 1]],
                 "oracle[negative=uniform]": [[1, 1]]})
    assert compare(tie, n_boot=200)["captured"]["ceiling"] == "oracle"


def test_without_plain_depgpo_its_shape_is_the_reference() -> None:
    # the menu-sgd tier runs only a DepGPO shape: it is what captured measures.
    # shape − grpo = [1, 0, 0, 0] -> 0.25; oracle[...] − grpo = [1, 1, 0, 0] -> 0.5: 0.5
    shape = "depgpo[negative=faults,omission=done]"
    runs = _runs({"grpo": [[0, 0, 1, 0]], "oracle[omission=done]": [[1, 1, 1, 0]],
                  shape: [[1, 0, 1, 0]]})
    cmp_ = compare(runs, n_boot=1000)
    assert cmp_["reference"] == shape
    assert set(cmp_["baselines"]) == {"grpo", "oracle[omission=done]"}
    assert cmp_["captured"]["ref"] == shape
    assert cmp_["captured"]["estimate"] == pytest.approx(0.5)
    # with plain depgpo present it stays the reference
    runs["depgpo"] = runs[shape]
    assert compare(runs, n_boot=200)["reference"] == "depgpo"
