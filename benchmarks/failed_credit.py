"""Where DepGPO's credit goes in a bench run's rollouts, failed episodes against solved ones.

For every trial of the chosen algorithm's training rollouts (BENCH_DIR/<algo>/seed-*/rollouts),
the trial is reloaded and weighed again with DepGPO's default settings, and counted:
fallback to unit weights (and why), and, for the trajectories that did not fall back, the
weight their steps get split by how the step's command ended (exit 0 or an error). This is the
evidence behind `depgpo[negative=errors]`: in a failed episode the graph can only credit what
reached the verifier, which need not be the step at fault. The bench report states the same
figures for DepGPO's own rollouts.

Prints one line per outcome and last
`RESULT fail_fallback=... fail_weight_on_exit0=... fail_errored_zero_weight=... ok_fallback=...`:
the failed trajectories that fell back; of the failed non-fallback trajectories' weight, the
share on steps that exited 0; of their errored steps, the share with weight 0; the solved
trajectories that fell back.

Usage: .venv/bin/python benchmarks/failed_credit.py BENCH_DIR [--algo depgpo]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from termcredit.bench.blame import blame_split, rollout_trials, tally


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench_dir", type=Path)
    ap.add_argument("--algo", default="depgpo", help="whose rollouts (a folder of BENCH_DIR)")
    args = ap.parse_args()
    trials = rollout_trials(args.bench_dir / args.algo)
    if not trials:
        raise SystemExit(f"{args.bench_dir / args.algo}: no rollouts (seed-*/rollouts/...)")
    n = tally(trials)
    for key in ("ok", "fail"):
        print(key, {k: round(v, 2) for k, v in sorted(n.items()) if k.startswith(key)})
    split = blame_split(n)
    print("RESULT " + " ".join(
        f"{k}={0.0 if split[k] is None else split[k]:.3f}" for k in
        ("fail_fallback", "fail_weight_on_exit0", "fail_errored_zero_weight", "ok_fallback"))
        + f" trials={split['trials']}")


if __name__ == "__main__":
    main()
