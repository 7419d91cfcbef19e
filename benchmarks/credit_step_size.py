"""How far one update moves the policy, and where, under each optimizer and weighting.

From a bench directory of the menu tier (its start checkpoint and one run's first batch of
training rollouts): the batch's advantages under each estimator, one update from the start
with AdamW (the bench's default: lr 1e-4, gradient norm clipped at 1) or plain SGD (with and
without clipping), then the change in log-probability of the sampled tokens, split by what
the step was: a declared breaking decoy, `done`, or any other command. It shows why blame
concentrated on a few tokens is no larger step under AdamW and clipping, and is under SGD.

Usage: .venv/bin/python benchmarks/credit_step_size.py BENCH_DIR [--run oracle-...] [--seed 0]
Prints a row per (estimator, optimizer) and `RESULT estimator=... optimizer=... decoy=...`.
Measured 2026-12-06 on results/menu-2026-12-06's start (docs/credit-tier.md).
"""

from __future__ import annotations

import argparse
import copy
import functools
import re
from pathlib import Path

import torch

from termcredit.tasks.demos import declared
from termcredit.estimators import build
from termcredit.estimators.spec import split_spec
from termcredit.records import Trajectory, load_json
from termcredit.tasks import load_task
from termcredit.trainer.loss import LossConfig
from termcredit.trainer.policy import load_policy
from termcredit.trainer.update import make_optimizer, ppo_update

REPO = Path(__file__).resolve().parents[1]
ESTIMATORS = ["grpo", "oracle[positive=uniform,inside=true]",
              "oracle[positive=uniform,inside=true,omission=done]",
              "depgpo[positive=uniform,negative=faults,inside=true,omission=done]"]
# (optimizer, lr, max_grad_norm): the bench's default, then SGD at the menu-sgd tier's lr
SETTINGS = [("adamw", 1e-4, 1.0), ("sgd", 0.1, 1.0), ("sgd", 0.1, 0.0)]


@functools.cache
def decoys_of(name: str) -> list[re.Pattern[str]]:
    """A task's declared breaking commands, read once per task."""
    task = load_task(REPO / "tasks" / name)
    return [re.compile("^" + re.escape(c) + "$") for c in declared(task).get("breaking", [])]


def step_kinds(traj: Trajectory) -> list[str | None]:
    """Each token's step kind: decoy (a declared breaking command), done, other."""
    decoys = decoys_of(traj.task.split("/")[-1])
    kinds: list[str | None] = [None] * len(traj.tokens.token_ids)
    for s, (a, b) in zip(traj.steps, traj.tokens.step_spans):
        cmd = s.command.command if s.command is not None else ""
        kind = ("decoy" if any(p.match(cmd) for p in decoys)
                else "done" if s.action.strip() == "done" else "other")
        kinds[a:b] = [kind] * (b - a)
    return kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench_dir", type=Path)
    ap.add_argument("--run", default="oracle-positive_uniform-inside_true-omission_done",
                    help="the run whose first batch is used (its oracle labels are needed)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    batch = args.bench_dir / args.run / f"seed-{args.seed}" / "rollouts" / "step-000000"
    groups = [[load_json(Trajectory, p) for p in sorted(d.glob("g*/trajectory.json"))]
              for d in sorted(batch.iterdir())]
    every = [t for g in groups for t in g]
    seqs, masks = [t.tokens.token_ids for t in every], [t.tokens.loss_mask for t in every]
    start = load_policy(str(args.bench_dir / "start"))
    with torch.no_grad():
        old = start.score(seqs, masks)
    kinds = [step_kinds(t) for t in every]
    for spec in ESTIMATORS:
        name, settings = split_spec(spec)
        est = build(name, **settings)
        adv = [a for g in groups for a in est(g).advantages]
        for opt_name, lr, clip in SETTINGS:
            pol = copy.deepcopy(start)
            opt = make_optimizer(opt_name, pol.model.parameters(), lr)
            got = ppo_update(pol, opt, seqs, masks, adv, old, None, LossConfig(),
                             max_grad_norm=clip)
            with torch.no_grad():
                new = pol.score(seqs, masks)
            deltas: dict[str, list[float]] = {}
            for o, n, m, k in zip(old, new, masks, kinds):
                for i in range(len(m)):
                    if m[i]:
                        deltas.setdefault(k[i], []).append(n[i] - o[i])
            mean = {k: sum(v) / len(v) for k, v in deltas.items()}
            moved = [abs(x) for v in deltas.values() for x in v]
            where = f"{opt_name} lr {lr:g} clip {clip:g}"
            print(f"{spec:68s} {where:22s} grad norm {got['grad_norm']:6.3f}  mean |dlogp| "
                  f"{sum(moved) / len(moved):.4f}  decoy {mean.get('decoy', 0):+.4f}  done "
                  f"{mean.get('done', 0):+.4f}  other {mean.get('other', 0):+.4f}", flush=True)
            print(f"RESULT estimator={spec} optimizer={opt_name} lr={lr:g} clip={clip:g} "
                  f"grad_norm={got['grad_norm']:.3f} decoy={mean.get('decoy', 0):+.4f} "
                  f"done={mean.get('done', 0):+.4f} other={mean.get('other', 0):+.4f}")


if __name__ == "__main__":
    main()
