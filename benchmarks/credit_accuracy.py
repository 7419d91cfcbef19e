"""Counterfactual credit accuracy of DepGPO on the built-in suite (issue #13).

Trajectories: each task's oracle (tasks/*/solution/solve.sh split into its top-level commands,
`bench.split.split_commands`), and the bench's noisy demonstrations with distractors
(`bench.demos.noisy_demos`: an exploration command before the work, a distractor write after
it; seed 0). Each successful trajectory is replayed once per step with that step left out
(fresh sandbox, concurrency 2); a step is necessary when the reward drops. Recall: necessary
steps with credit > 0; precision: credited steps that are necessary (`bench.credit_audit`).
Prints the per-trajectory table, every miss, and last `RESULT recall=... precision=...`
(pooled over all audited steps); writes OUT/audit.json.

Usage: .venv/bin/python benchmarks/credit_accuracy.py [--task NAME ...] [--no-demos]
       [--out DIR] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime
from pathlib import Path

from termcredit.bench.credit_audit import AuditJob, audit, fmt, oracle_job, result_line
from termcredit.bench.demos import noisy_demos
from termcredit.tasks import find_tasks
from termcredit.harness.actions import parse_action

REPO = Path(__file__).resolve().parents[1]


def demo_jobs(task, seed: int = 0) -> list[AuditJob]:
    """The noisy demonstrations with distractors (kinds 1 and 2 of `noisy_demos`)."""
    demos = noisy_demos(task, random.Random(seed), copies=3)[1:]  # kind 0 is the oracle itself
    jobs = []
    for kind, demo in zip(("explore", "distract"), demos):
        cmds = [parse_action(a).command for a, _ in demo.turns if a != "done"]
        jobs.append(AuditJob(task, cmds, label=f"{task.name}/{kind}", solution=True))
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", action="append", help="only these suite tasks (repeatable)")
    ap.add_argument("--no-demos", action="store_true", help="oracles only")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out", help="default runs/<stamp>-credit-accuracy")
    args = ap.parse_args()
    tasks = [t for t in find_tasks([REPO / "tasks"]) if t.has_solution
             and (not args.task or t.name in args.task)]
    jobs = [oracle_job(t) for t in tasks]
    if not args.no_demos:
        jobs += [j for t in tasks for j in demo_jobs(t)]
    out = Path(args.out or REPO / "runs" / f"{datetime.now():%Y%m%d-%H%M%S}-credit-accuracy")
    data = audit(jobs, out, concurrency=args.concurrency, log=lambda m: print(m, flush=True))
    print(f"\n{'trajectory':40} {'steps':>5} {'nec':>4} {'cred':>4} {'recall':>7} {'prec':>7}")
    for e in data["trajectories"]:
        if e.get("error"):
            print(f"{e['label']:40} skipped: {e['error']}")
            continue
        print(f"{e['label']:40} {e['n_steps']:>5} {e['n_necessary']:>4} {e['n_credited']:>4} "
              f"{fmt(e['recall']):>7} {fmt(e['precision']):>7}")
    print(f"\nmisses ({len(data['misses'])}):")
    for m in data["misses"]:
        print(f"  {m['label']} step {m['step']} {m['miss']} (credit {fmt(m['credit'])}, "
              f"reward without {m['reward_without']}): {m['command']!r}")
    print(f"\naudit: {out / 'audit.json'}")
    print(result_line(data))


if __name__ == "__main__":
    main()
