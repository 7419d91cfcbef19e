"""A small pilot of the horizon tier (issue #34), and the rates its rollouts show.

Runs `termcredit bench --tier horizon` with one seed, STEPS updates and 12 held-out instances
per task (36 evaluation episodes), torch on one thread, into OUT (resumable like any bench
dir); then, or with --analyse-only, prints per algorithm and update (and for the start's and
the final evaluations): success, the errored-command rate (commands that exited non-zero or
timed out), the decoy rate (episodes that ran a command the task declares breaking), the
garbling rate (episodes whose first fault is an errored command rather than a decoy) and
steps per success, from the recorded trajectories.

Usage: .venv/bin/python benchmarks/horizon_pilot.py OUT [--steps 4] [--analyse-only]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from termcredit.bench.protocol import HORIZON_TASKS, bench_config, run_bench
from termcredit.estimators.oracle import OracleSpec, label_steps
from termcredit.records import Trajectory
from termcredit.tasks import load_task
from termcredit.trialdir import load_trajectory

REPO = Path(__file__).resolve().parents[1]


def rates(trajs: list[Trajectory], specs: dict[str, OracleSpec]) -> str:
    wins = [t for t in trajs if t.verifier and t.verifier.reward >= 1]
    cmds = [s.command for t in trajs for s in t.steps if s.command is not None]
    errored = sum(c.exit_code != 0 or c.timed_out for c in cmds) / max(1, len(cmds))
    decoy = garbled = 0
    for t in trajs:
        bad = set(label_steps(t, specs[t.task])["breaking"])
        decoy += bool(bad)
        for s in t.steps:
            if s.command is None or s.index in bad:
                if s.index in bad:
                    break
                continue
            if s.command.exit_code != 0 or s.command.timed_out:
                garbled += 1
                break
    n = max(1, len(trajs))
    sps = f"{sum(len(t.steps) for t in wins) / len(wins):.2f}" if wins else "—"
    return (f"n={len(trajs)} success={len(wins) / n:.3f} errored_cmd={errored:.3f} "
            f"decoy_ep={decoy / n:.3f} garbled_first={garbled / n:.3f} steps/success={sps}")


def analyse(out: Path) -> None:
    specs = {t: OracleSpec.from_metadata(load_task(REPO / "tasks" / t).metadata, t)
             for t in HORIZON_TASKS}

    def load(folder: Path, skip: str = "") -> list[Trajectory]:
        return [load_trajectory(p.parent) for p in sorted(folder.rglob("trajectory.json"))
                if not skip or skip not in p.parts]

    start = load(out / "start-eval")
    if start:
        print("start eval", rates(start, specs))
    for algo in sorted(p for p in out.iterdir() if (p / "seed-0" / "rollouts").is_dir()):
        for step in sorted((algo / "seed-0" / "rollouts").glob("step-*")):
            print(algo.name, step.name, rates(load(step), specs))
        final = load(algo / "seed-0", skip="rollouts")
        if final:
            print(algo.name, "final eval", rates(final, specs))


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
