"""DepGPO cost per trajectory, from raw traces to step weights, on a recorded 50-command trial.

Stages, timed side by side in one run (median of --repeats):
  parse    parse_session over the trial's whole traced-shell session -> per-step accesses
  facts    EpisodeFacts from the trajectory (accesses, content-check states, resources)
  weights  ownership + stdout reuse + credit + token-weighted step weights (the training
           path: no graph is drawn)
Last line: `RESULT ms_per_trajectory=<parse + facts + weights>`. Goal: <= 20 ms.

Usage: .venv/bin/python benchmarks/credit_speed.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from termcredit.depgpo import analyse, depgpo_step_weights
from termcredit.depgpo.load import facts_from_trajectory
from termcredit.tracer import parse_session
from termcredit.trialdir import TrialPaths, load_trajectory

TRIAL = Path(__file__).with_name("data") / "trial-50"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    text = TrialPaths(TRIAL).session_trace_text()
    traj = load_trajectory(TRIAL)
    times: dict[str, list[float]] = {"parse": [], "facts": [], "weights": []}
    for _ in range(args.repeats + 1):
        t0 = time.perf_counter()
        session = parse_session(text)
        for step in traj.steps:  # accesses from the raw trace, as the harness derives them
            step.command.accesses = session.commands[step.command.seq].summary
        t1 = time.perf_counter()
        facts = facts_from_trajectory(traj)
        t2 = time.perf_counter()
        weights = depgpo_step_weights(facts)
        t3 = time.perf_counter()
        for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2)):
            times[key].append(dt * 1000)
    med = {k: statistics.median(v[1:]) for k, v in times.items()}  # first run warms caches
    total = sum(med.values())
    res = analyse(facts)  # the graph the CLI draws, for its size only
    print(f"{len(traj.steps)} commands, {text.count(chr(10))} trace lines, "
          f"{res.graph.graph.number_of_nodes()} graph nodes, fallback {weights.fallback}")
    for k, v in med.items():
        print(f"{k:8s} {v:7.2f} ms  ({v / total:5.1%})")
    print(f"RESULT ms_per_trajectory={total:.2f}")


if __name__ == "__main__":
    main()
