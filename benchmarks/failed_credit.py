"""Where DepGPO's credit goes in a bench run's rollouts, failed episodes against solved ones.

For every trial of the chosen algorithm's training rollouts (BENCH_DIR/<algo>/seed-*/rollouts),
the trial is reloaded and weighed again with DepGPO's default settings, and counted:
fallback to unit weights (and why), and, for the trajectories that did not fall back, the
weight their steps get split by how the step's command ended (exit 0 or an error). This is the
evidence behind `depgpo[negative=uniform]`: in a failed episode the graph can only credit what
reached the verifier, which need not be the step at fault.

Prints one line per outcome and last
`RESULT fail_fallback=... fail_weight_on_exit0=... fail_errored_zero_weight=... ok_fallback=...`:
the failed trajectories that fell back; of the failed non-fallback trajectories' weight, the
share on steps that exited 0; of their errored steps, the share with weight 0; the solved
trajectories that fell back.

Usage: .venv/bin/python benchmarks/failed_credit.py BENCH_DIR [--algo depgpo]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from termcredit.depgpo import DepGPOConfig, depgpo_step_weights
from termcredit.depgpo.load import facts_from_trajectory, load_trajectory
from termcredit.trialdir import TrialPaths


def tally(trials: list[Path]) -> Counter[str]:
    n: Counter[str] = Counter()
    for d in trials:
        traj = load_trajectory(d)
        key = "ok" if json.loads(TrialPaths(d).result.read_text()).get("reward") == 1 else "fail"
        n[f"{key}_traj"] += 1
        sw = depgpo_step_weights(facts_from_trajectory(traj), DepGPOConfig())
        if sw.fallback:
            n[f"{key}_fallback"] += 1
            n[f"{key}_fallback/{sw.fallback}"] += 1
            continue
        for s, w in zip(traj.steps, sw.w):
            if s.command is None:  # `done` and invalid actions: untraced
                continue
            end = "exit0" if s.command.exit_code == 0 else "errored"
            n[f"{key}_steps_{end}"] += 1
            n[f"{key}_weight_{end}"] += w
            n[f"{key}_zero_{end}"] += w == 0
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench_dir", type=Path)
    ap.add_argument("--algo", default="depgpo", help="whose rollouts (a folder of BENCH_DIR)")
    args = ap.parse_args()
    trials = sorted(p.parent for p in
                    (args.bench_dir / args.algo).glob("seed-*/rollouts/*/*/g*/trajectory.json"))
    if not trials:
        raise SystemExit(f"{args.bench_dir / args.algo}: no rollouts (seed-*/rollouts/...)")
    n = tally(trials)
    for key in ("ok", "fail"):
        print(key, {k: round(v, 2) for k, v in sorted(n.items()) if k.startswith(key)})

    def ratio(a: float, b: float) -> float:
        return a / b if b else 0.0

    weight = n["fail_weight_exit0"] + n["fail_weight_errored"]
    print(f"RESULT fail_fallback={ratio(n['fail_fallback'], n['fail_traj']):.3f} "
          f"fail_weight_on_exit0={ratio(n['fail_weight_exit0'], weight):.3f} "
          f"fail_errored_zero_weight={ratio(n['fail_zero_errored'], n['fail_steps_errored']):.3f} "
          f"ok_fallback={ratio(n['ok_fallback'], n['ok_traj']):.3f} trials={len(trials)}")


if __name__ == "__main__":
    main()
