"""The credit-tier report on a synthetic bench directory: the table's numbers, the paired
differences, the ablation section, and run text printed verbatim."""

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from termcredit.bench.report import write_report
from termcredit.bench.stats import run_dir_name

TRIAL = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "trial-50"
ALGOS = ["grpo", "depgpo", "depgpo[subtract_min=false]"]


@dataclass
class Cfg:  # the BenchConfig fields the report reads
    tier: str = "credit"
    model: str = "tiny"
    algos: list = field(default_factory=lambda: list(ALGOS))
    tasks: list = field(default_factory=lambda: ["tasks/[bold]x", "tasks/plain"])
    seeds: list = field(default_factory=lambda: [0, 1])
    steps: int = 4
    group_size: int = 8
    lr: float = 1e-4
    eval_every: int = 0
    eval_instances: list = field(default_factory=lambda: [1000, 1001])
    eval_samples: int = 1
    eval_temperature: float = 1.0


FINAL = {  # seed -> algo -> successes of slots 0..4 (None: infra failure)
    0: {"grpo": [0, 1, 0, 0], "depgpo": [1, 1, 0, 1]},
    1: {"grpo": [0, 0, 1, 1, None], "depgpo": [0, 1, 1, 0, 1]},
}
TRAIN = {"grpo": [0.25, 0.25, 0.5, 0.5], "depgpo": [0.5, 0.5, 0.75, 0.75]}
CREDIT = {"grpo": {"credit/zero_credit_step_frac": 0.4, "credit/fallback_rate": 1.0,
                   "credit/infra_rate": 0.05},
          "depgpo": {"credit/zero_credit_step_frac": 0.1, "credit/fallback_rate": 0.2,
                     "credit/fallback/single_step": 0.15, "credit/fallback/untraced": 0.05,
                     "credit/infra_rate": 0.0}}


def _write(out):
    cfg = Cfg()
    out.mkdir()
    (out / "bench.json").write_text(json.dumps({"tier": "credit"}))
    (out / "start").mkdir()
    (out / "start" / "start-stats.json").write_text(json.dumps({  # as protocol writes it
        "success": 0.31, "non_fallback": 0.62, "episodes_per_seed": [216.0, 214.0]}))
    for seed in cfg.seeds:
        (out / "start" / f"eval-seed-{seed}.jsonl").write_text("".join(
            json.dumps({"task": "[bold]x", "instance": 1000, "sample": i, "success": i % 2,
                        "steps": 3, "tokens": 40, "infra": False}) + "\n" for i in range(4)))
        for algo in ALGOS:
            base = algo.split("[")[0]
            d = out / run_dir_name(algo) / f"seed-{seed}"
            d.mkdir(parents=True)
            rows = [{"step": s, "success_rate": v, "credit/steps_per_success": 3.0,
                     "credit/tokens_per_success": 120.0, **CREDIT[base]}
                    for s, v in enumerate(TRAIN[base])]
            rows[0].pop("credit/steps_per_success")  # an update without success
            (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            (d / "eval-final.jsonl").write_text("".join(json.dumps(
                {"task": "[bold]x" if i < 2 else "plain", "instance": 1000 + i, "sample": 0,
                 "success": s or 0, "steps": 2 + i, "tokens": 100, "infra": s is None}) + "\n"
                for i, s in enumerate(FINAL[seed][base])))
    return cfg


def test_the_credit_report(tmp_path):
    out = tmp_path / "bench"
    cfg = _write(out)
    # one failed DepGPO rollout: a recorded trial whose only credited step wrote the answer
    g0 = out / "depgpo" / "seed-0" / "rollouts" / "step-000000" / "chain-answer-i0" / "g0"
    shutil.copytree(TRIAL, g0)
    (g0 / "result.json").write_text(json.dumps({"task": "chain-answer", "reward": 0.0}))
    doc = write_report(out, cfg, n_boot=2000)
    algos, cmp_ = doc["algorithms"], doc["comparisons"]
    # final success: mean over seeds of each algorithm's own non-infra episodes
    assert algos["depgpo"]["final_success_mean"] == (0.75 + 0.6) / 2
    assert algos["grpo"]["final_success_mean"] == (0.25 + 0.5) / 2
    # the difference is paired: grpo's infra slot is dropped for depgpo too
    g = cmp_["baselines"]["grpo"]
    assert g["final"]["estimate"] == 0.25 and g["final"]["units"] == 8
    assert (g["auc"]["estimate"], g["auc"]["lo"], g["auc"]["hi"]) == (0.25, 0.25, 0.25)
    abl = cmp_["ablations"]["depgpo[subtract_min=false]"]
    assert (abl["final"]["estimate"], abl["final"]["lo"], abl["final"]["hi"]) == (0, 0, 0)
    assert algos["depgpo"]["credit"]["credit/steps_per_success"] == 3.0
    assert algos["grpo"]["final_eval"]["infra_episodes"] == 1
    assert cmp_["mde"]["episodes_per_algorithm"] == 9
    report = (out / "REPORT.md").read_text()
    assert "| depgpo | 0.675 | — | 0.625 | — | 0.100 | 3.00 | 120 | 0.200 | 0.000 |" in report
    assert "| grpo | 0.375 | +0.250 [" in report
    assert "| 0.375 | +0.250 [+0.250, +0.250] | 0.400 | 3.00 | 120 | 1.000 | 0.050 |" in report
    assert "- DepGPO − grpo: +0.250 [" in report
    assert "depgpo[subtract_min=false] − depgpo: +0.000 [+0.000, +0.000]: not " \
           "distinguishable" in report
    assert "MDE = (z_{1-α/2} + z_{power}) × SE" in report and "a 0.10 difference" in report
    assert ("Start checkpoint (held-out, 430 episodes): success 0.310 (aim 0.2–0.5), DepGPO "
            "non-fallback 0.620") in report
    assert "| single_step | untraced |" in report
    assert doc["warm_start"] is None and "Warm start:" not in report  # no start-refined/
    assert doc["depgpo_blame"]["fail_weight_on_exit0"] == 1.0  # no command errored
    assert "Where DepGPO's weight went in its 1 training rollouts (1 failed)" in report
    assert "| [bold]x | plain |" in report  # run text as text, no markup interpreted
    assert "[bold]x" in (out / "report.html").read_text()
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "summary.json").read_text())["comparisons"]["baselines"]["grpo"]


def test_a_run_without_episodes_says_so(tmp_path):
    """The micro tier's metrics only: no CIs for final success, the rest still reported."""
    out = tmp_path / "bench"
    cfg = Cfg(algos=["grpo", "depgpo"], seeds=[0])
    for algo in cfg.algos:
        d = out / algo / "seed-0"
        d.mkdir(parents=True)
        rows = [{"step": -1, "eval/success": 0.5}, {"step": 0, "success_rate": 0.5},
                {"step": 1, "success_rate": 0.5, "eval/success": 0.5}]
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    doc = write_report(out, cfg, n_boot=500)
    assert doc["algorithms"]["depgpo"]["curve"] == [(0, 0.5), (2, 0.5)]
    assert doc["comparisons"]["baselines"]["grpo"]["final"] is None
    report = (out / "REPORT.md").read_text()
    assert "No per-episode final evaluation (eval-final.jsonl)" in report
    assert "No credit/fallback/<reason> metrics in this run." in report


def test_the_warm_start_comparison(tmp_path):
    """--warm-compare: start/ (noisy) and start-refined/ evaluated on the same slots; the
    table and refined − noisy paired on seeds and episodes, by hand."""
    out = tmp_path / "bench"
    cfg = _write(out)
    (out / "start" / "sft.json").write_text(json.dumps({"demos": 48}))
    refined = out / "start-refined"
    (refined / "refine").mkdir(parents=True)
    (refined / "sft.json").write_text(json.dumps({"demos": 30}))
    (refined / "start-stats.json").write_text(json.dumps({"non_fallback": 0.4}))
    (refined / "refine" / "warm.json").write_text(json.dumps({
        "noisy_demos": 48, "distinct": 20, "successful": 12, "refined": 11,
        "refined_demos": 30, "steps_dropped": 17, "tokens_saved": 250, "token_unit": "tiny"}))
    # noisy (written by _write): seed s, slot i succeeds when i is odd -> 2 of 4 a seed,
    # steps 3; refined: 3 of 4 on seed 0, 4 of 4 on seed 1, steps 2
    for seed, wins in ((0, [1, 1, 1, 0]), (1, [1, 1, 1, 1])):
        (refined / f"eval-seed-{seed}.jsonl").write_text("".join(
            json.dumps({"task": "[bold]x", "instance": 1000, "sample": i, "success": w,
                        "steps": 2, "tokens": 30, "infra": False}) + "\n"
            for i, w in enumerate(wins)))
    doc = write_report(out, cfg, n_boot=2000)
    w = doc["warm_start"]
    assert w["rows"]["noisy"]["success_mean"] == 0.5
    assert w["rows"]["refined"]["success_mean"] == (0.75 + 1.0) / 2
    assert w["rows"]["refined"]["steps_per_success"] == 2
    assert w["rows"]["noisy"]["steps_per_success"] == 3
    # per seed: refined − noisy = (3 − 2)/4 and (4 − 2)/4
    assert w["diff"]["estimate"] == (0.25 + 0.5) / 2 and w["diff"]["units"] == 8
    report = (out / "REPORT.md").read_text()
    assert "## Warm start: noisy vs refined demonstrations" in report
    assert "| noisy (start/: training goes on from it) | 48 | 0.500 | — | 3.00 | 40 | 0.620 |" \
        in report
    assert "| refined | 30 | 0.875 | +0.375 [" in report
    assert "12 solve their task, 11 refined and replayed to reward 1 (30 with their copies); " \
        "17 steps dropped, 250 tokens (tiny) saved" in report
