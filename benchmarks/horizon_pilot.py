"""A small pilot of the horizon tier (issue #34), and the rates its rollouts show.

Runs `termcredit bench --tier horizon` with one seed, STEPS updates and 12 held-out instances
per task (36 evaluation episodes), torch on one thread, into OUT (resumable like any bench
dir); then, or with --analyse-only, prints per algorithm and update (and for the start's and
the final evaluations) the rates the bench report's "Learning efficiency" tables hold
(bench/efficiency.py: success, steps and tokens per success, the decoy-episode rate, the
errored-command rate, the share of episodes whose first fault is a garbled command), from the
recorded trajectories.

Usage: .venv/bin/python benchmarks/horizon_pilot.py OUT [--steps 4] [--analyse-only]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from termcredit.bench.efficiency import RATES, bench_efficiency
from termcredit.bench.protocol import HORIZON_TASKS, bench_config, run_bench
from termcredit.bench.stats import cell

REPO = Path(__file__).resolve().parents[1]


def line(r: dict) -> str:
    """One set of episodes' rates (bench/efficiency.py, the report's own)."""
    return " ".join(f"{k}={cell(r.get(k), '.0f' if k == 'episodes' else '.3f')}"
                    for k in ("episodes", *RATES))


def analyse(out: Path) -> None:
    algos = json.loads((out / "bench.json").read_text())["algos"]
    eff = bench_efficiency(out, algos, [0], [str(REPO / "tasks" / t) for t in HORIZON_TASKS])
    if eff["start"]:
        print("start eval", line(eff["start"]))
    for algo, a in eff["algorithms"].items():
        for u in a["updates"]:
            print(algo, f"update {u['update']}", line(u))
        if a["final"]:
            print(algo, "final eval", line(a["final"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--analyse-only", action="store_true")
    args = ap.parse_args()
    if not args.analyse_only:
        import torch

        torch.set_num_threads(1)  # a shared 2-core machine
        cfg = bench_config("horizon", seeds=[0], steps=args.steps, eval_every=args.steps,
                           eval_instances=list(range(1000, 1012)))
        t0 = time.monotonic()
        run_bench(cfg, args.out)
        print(f"PILOT wall {time.monotonic() - t0:.0f} s")
    analyse(args.out)


if __name__ == "__main__":
    main()
