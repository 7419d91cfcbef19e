"""The whole bench protocol on a micro budget: warm start, teacher, every algorithm, report."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
ALGOS = ["grpo", "gigpo", "adastep", "depgpo", "opd", "depgpo+opd"]


def test_micro_bench_writes_the_report(tmp_path, base_ref):
    out = tmp_path / "bench-micro"
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", "bench", "--tier", "micro",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["algorithms"]) == set(ALGOS)
    for algo, r in summary["algorithms"].items():
        assert r["seeds"] == 1, algo
        assert [x for x, _ in r["curve"]] == [0, 2]  # before training, after 2 updates
        assert set(r["time_s"]) == {"rollout_s", "credit_s", "update_s", "eval_s"}
        assert "zero_advantage_group" in r["credit_stats"]
    # sampled evaluation: eval_samples (2 in micro) episodes per held-out instance; hello-world
    # is not parametrised, so one instance
    rows = [json.loads(ln) for ln in (out / "grpo" / "seed-0" / "metrics.jsonl").read_text()
            .splitlines()]
    assert [r["eval/episodes"] for r in rows if "eval/success" in r] == [2.0, 2.0]
    # the start is evaluated once and shared: every curve begins at the same point
    assert len({r["curve"][0][1] for r in summary["algorithms"].values()}) == 1
    assert summary["warm_start_s"] > 0 and summary["start_eval_s"] > 0
    assert "updates_ratio_grpo_over_depgpo" in summary and summary["updates_ratio_note"]
    assert "singleton_anchor_ratio" in summary["algorithms"]["gigpo"]["credit_stats"]
    assert "fallback_rate" in summary["algorithms"]["depgpo"]["credit_stats"]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "REPORT.md").read_text()
    assert "| depgpo |" in report and "Where DepGPO does not win" in report
    assert "GRPO ÷ DepGPO" in report and "Wall time" in report
    assert "<table>" in (out / "report.html").read_text()
    assert (tmp_path / "bench-latest").resolve() == out.resolve()
    # the same starting weights for everyone: the start checkpoint is shared, not per algorithm
    assert (out / "start" / "config.json").is_file() and (out / "teacher" / "config.json").is_file()


def _metrics(out: Path) -> dict[str, list[dict]]:
    """Every run's metrics without the wall-clock fields."""
    result = {}
    for f in sorted(out.glob("*/seed-0/metrics.jsonl")):
        result[f.parts[-3]] = [{k: v for k, v in json.loads(ln).items()
                                if not k.startswith("time")} for ln in f.read_text().splitlines()]
    return result


def test_same_seed_same_numbers(tmp_path, base_ref):
    """Repeatability: the same bench twice on the same machine gives the same metrics. One
    algorithm comes with settings, whose brackets are printed as text, not read as markup."""
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        proc = subprocess.run([sys.executable, "-m", "termcredit.cli", "bench", "--tier",
                               "micro", "--algo", "depgpo", "--algo", "gigpo[gamma=0.9]",
                               "--out", str(out)], cwd=REPO, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "gigpo[gamma=0.9] seed 0" in proc.stderr
        outs.append(_metrics(out))
    assert set(outs[0]) == {"depgpo", "gigpo-gamma_0.9"}
    assert outs[0] == outs[1]
