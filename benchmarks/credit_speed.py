"""DepGPO cost per trajectory, from raw traces to step weights, on a recorded 50-command trial.

Two paths over the same trial, timed side by side in one run (median of --repeats):

* whole: after the episode, parse_session over the whole traced-shell session, then facts and
  weights (how credit was computed before the trace was parsed as it came);
* streamed, as the harness runs it: after each step the observer feeds that step's trace chunk
  to its TraceStream and DepGPO's step hook adds the step to the episode's dependencies
  (``per_step``, CPU spent while the episode runs); after the last one ``finalize``, facts and
  the walk from the verifier's resources (``after_episode``: what stands between
  verification and DepGPO's weights).

The observer and the hooks are the product's own (``harness.observe.StepObserver``,
``depgpo/live.py``) on a stand-in shell that replays the recorded chunks and content-check
states; both paths must give the same weights. Last line:
`RESULT ms_per_trajectory=<whole> after_episode_ms=<x> cpu_ms_per_trajectory=<per_step +
after> speedup=<whole / after_episode>`. Goal: after_episode_ms <= 2.

Usage: .venv/bin/python benchmarks/credit_speed.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import re
import copy
import statistics
import time
from pathlib import Path

from termcredit.depgpo import DepGPOConfig, StepWeights, analyse, depgpo_step_weights
from termcredit.depgpo.live import deps_for
from termcredit.depgpo.load import facts_from_trajectory
from termcredit.depgpo.trial_hook import default_hooks
from termcredit.harness.hooks import run_step_hooks
from termcredit.harness.observe import StepObserver
from termcredit.records import FileState, TraceCwd, Trajectory
from termcredit.tracer import parse_session
from termcredit.trialdir import TrialPaths, load_trajectory

TRIAL = Path(__file__).with_name("data") / "trial-50"


class ReplayShell:
    """The recorded episode's shell: its trace chunks arrive one per step, and a snapshot
    returns the states the content check recorded for the step at hand."""

    nonce = None

    def __init__(self, start: str):
        self.session_trace = [start]
        self.states: dict[str, FileState] = {}

    def snapshot(self, paths: list[str], content_cap: int) -> list[FileState]:
        return [self.states[p] for p in paths if p in self.states]


END = re.compile(r'chdir\("/__termcredit__/[0-9a-f]+/(e\d+)')


def step_chunks(text: str) -> list[str]:
    """The trace as the sandbox hands it over: each command up to its end marker's lines (the
    first with the shell's start-up; this older recording cut its files inside the
    end-marker line)."""
    lines = text.splitlines(keepends=True)
    chunks, cur = [], []
    for i, line in enumerate(lines):
        cur.append(line)
        m = END.search(line)
        nxt = END.search(lines[i + 1]) if i + 1 < len(lines) else None
        if m and not (nxt and nxt.group(1) == m.group(1)):
            chunks.append("".join(cur))
            cur = []
    return [*chunks, "".join(cur)] if cur else chunks


def whole(traj: Trajectory, text: str) -> tuple[float, float, float, StepWeights]:
    t0 = time.perf_counter()
    session = parse_session(text)
    for step in traj.steps:  # accesses from the raw trace, as finalize derives them
        cmd = session.commands[step.command.seq]
        step.command.accesses = cmd.summary
        step.command.trace_cwd = TraceCwd(cmd.cwd_start, cmd.cwd_end, sorted(cmd.cwd_used))
    t1 = time.perf_counter()
    facts = facts_from_trajectory(traj)
    t2 = time.perf_counter()
    weights = depgpo_step_weights(facts)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, weights


def streamed(traj: Trajectory, chunks: list[str]) -> tuple[float, float, StepWeights]:
    shell = ReplayShell("")
    obs = StepObserver(shell)
    steps, traj.steps = traj.steps, []
    per_step = 0.0
    for step, chunk in zip(steps, chunks):
        shell.session_trace.append(chunk)  # the sandbox hands over the step's trace
        shell.states = {f.path: f for f in step.command.files}
        t0 = time.perf_counter()
        obs.after_step(step.command)  # as AgentEnv.step does
        traj.steps.append(step)
        run_step_hooks(default_hooks(), traj)
        per_step += time.perf_counter() - t0
    t0 = time.perf_counter()
    shell.session_trace += chunks[len(steps):]  # the shell's last words, if any
    obs.finalize([s.command for s in steps], "".join(shell.session_trace))
    facts = facts_from_trajectory(traj)  # as the depgpo estimator does
    weights = depgpo_step_weights(facts, DepGPOConfig(), deps_for(traj, facts))
    after = time.perf_counter() - t0
    return per_step, after, weights


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    paths = TrialPaths(TRIAL)
    text = paths.session_trace_text()
    chunks = step_chunks(text)
    assert "".join(chunks) == text and len(chunks) >= len(load_trajectory(TRIAL).steps)
    recorded = load_trajectory(TRIAL)
    times: dict[str, list[float]] = {k: [] for k in ("parse", "facts", "weights", "per_step",
                                                     "after_episode")}
    for _ in range(args.repeats + 1):
        *dts, expected = whole(copy.deepcopy(recorded), text)
        for key, dt in zip(("parse", "facts", "weights"), dts):
            times[key].append(dt * 1000)
        per_step, after, got = streamed(copy.deepcopy(recorded), chunks)
        assert got == expected, "the streamed path gave other weights than the whole parse"
        times["per_step"].append(per_step * 1000)
        times["after_episode"].append(after * 1000)
    med = {k: statistics.median(v[1:]) for k, v in times.items()}  # first run warms caches
    total = med["parse"] + med["facts"] + med["weights"]
    traj = copy.deepcopy(recorded)
    whole(traj, text)
    res = analyse(facts_from_trajectory(traj))  # the graph the CLI draws, for its size only
    print(f"{len(traj.steps)} commands, {text.count(chr(10))} trace lines, "
          f"{res.graph.graph.number_of_nodes()} graph nodes, fallback {res.weights.fallback}")
    print("whole trace after the episode:")
    for k in ("parse", "facts", "weights"):
        print(f"  {k:8s} {med[k]:7.2f} ms  ({med[k] / total:5.1%})")
    print("streamed, as the harness runs it:")
    print(f"  during the episode (all steps) {med['per_step']:7.2f} ms")
    print(f"  after the last step            {med['after_episode']:7.2f} ms")
    cpu = med["per_step"] + med["after_episode"]
    print(f"RESULT ms_per_trajectory={total:.2f} after_episode_ms={med['after_episode']:.2f} "
          f"cpu_ms_per_trajectory={cpu:.2f} speedup={total / med['after_episode']:.1f}")


if __name__ == "__main__":
    main()
