"""`termcredit bench --report-only DIR` (issue #34): the report of a bench directory that is
still running, from what it holds, with its own bench.json. The partial directory is
test_bench_efficiency's: grpo's seed 0 finished (2 updates), its seed 1 one update in, depgpo
not started."""

from __future__ import annotations

import json
from dataclasses import asdict

from termcredit.bench.protocol import bench_config
from termcredit.cli import main
from test_bench_efficiency import _bench


def test_report_only_on_a_partial_bench_dir(tmp_path, capsys):
    out, task = _bench(tmp_path)
    cfg = bench_config("horizon", algos=["grpo", "depgpo"], seeds=[0, 1], tasks=[task],
                       steps=2, eval_every=2)
    (out / "bench.json").write_text(json.dumps(asdict(cfg)))
    g = out / "grpo"
    rows = {0: [{"step": -1, "eval/success": 1.0}, {"step": 0, "success_rate": 1 / 2},
                {"step": 1, "success_rate": 1.0, "eval/success": 0.0}],
            1: [{"step": -1, "eval/success": 1.0}, {"step": 0, "success_rate": 0.0}]}
    for seed, rs in rows.items():
        (g / f"seed-{seed}" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rs))
    assert main(["bench", "--report-only", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out / "REPORT.md")
    doc = json.loads((out / "summary.json").read_text())
    eff = doc["efficiency"]
    assert list(eff["algorithms"]) == ["grpo"]
    assert [u["success"] for u in eff["algorithms"]["grpo"]["updates"]] == [1 / 3, 1.0]
    md = (out / "REPORT.md").read_text()
    assert "## Learning efficiency per update" in md
    assert "| grpo | 1.000 | 0.333 | 1.000 | 0.000 |" in md  # success: start, u0, u1, final
    for name in ("curves.png", "efficiency.png", "report.html"):
        assert (out / name).is_file()


def test_report_only_needs_a_bench_dir(tmp_path):
    assert main(["bench", "--report-only", str(tmp_path)]) == 2
