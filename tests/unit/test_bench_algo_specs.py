"""Issue #16: `--algo` specs with settings (DepGPO's ablations), the credit tier's turn budget,
and the start statistics file. Expected values by hand."""

from __future__ import annotations

import json

import pytest

from termcredit.bench.protocol import ABLATIONS, _start_stats, bench_config, turn_budget
from termcredit.estimators import parse_spec


def test_specs_parse_to_an_estimator_and_its_settings() -> None:
    assert parse_spec("grpo") == ("grpo", {})
    assert parse_spec("depgpo+opd") == ("depgpo+opd", {})
    assert parse_spec("depgpo[subtract_min=false]") == ("depgpo", {"subtract_min": False})
    assert parse_spec("depgpo[beta=0, diff_rewrites=never]") == (
        "depgpo", {"beta": 0, "diff_rewrites": "never"})
    assert parse_spec("depgpo[untraced_weight=0.5]") == ("depgpo", {"untraced_weight": 0.5})


@pytest.mark.parametrize("spec, says", [
    ("depgpo[nope=1]", "takes no setting"), ("dep", "unknown estimator"),
    ("depgpo[beta]", "not key=value"), ("depgpo[beta=2]", "beta must be in"),
    ("depgpo[beta=0", "brackets")])
def test_bad_specs_fail_before_anything_runs(spec: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_spec(spec)
    with pytest.raises(ValueError, match=says):
        bench_config("quick", algos=[spec])


def test_ablations_replace_the_algorithms_unless_some_are_named() -> None:
    assert bench_config("credit", ablations=True).algos == ABLATIONS
    assert bench_config("credit", ablations=True, algos=["grpo"]).algos == ["grpo"]
    assert all(parse_spec(a)[0] == "depgpo" for a in ABLATIONS)


def test_turn_budget_is_the_oracles_steps_plus_two() -> None:
    cfg = bench_config("credit")
    budget = turn_budget(cfg)
    # patch-port-config: grep, then sed (2 commands); repack-fixed-archive: untar, sed, tar (3)
    assert budget["patch-port-config"] == 4
    assert budget["repack-fixed-archive"] == 5
    assert len(budget) == 6
    assert turn_budget(bench_config("micro")) == {}


def test_start_stats_average_over_seeds(tmp_path) -> None:
    (tmp_path / "start").mkdir()
    rows = [{"eval/success": 0.25, "eval/episodes": 216.0, "eval/credit/fallback_rate": 0.5,
             "eval/credit/fallback/tied-credits": 0.5},
            {"eval/success": 0.5, "eval/episodes": 214.0, "eval/credit/fallback_rate": 0.25,
             "eval/credit/fallback/tied-credits": 0.125,
             "eval/credit/fallback/no-traced-steps": 0.125}]
    _start_stats(tmp_path, rows)
    got = json.loads((tmp_path / "start" / "start-stats.json").read_text())
    assert got["success"] == 0.375
    assert got["non_fallback"] == 0.625  # (0.5 + 0.75) / 2
    assert got["fallback_reasons"] == {"tied-credits": 0.3125, "no-traced-steps": 0.0625}
