"""Learning efficiency per update (bench/efficiency.py, issue #34): rates of a set of episodes
and of a bench directory's start, updates and final evaluation. Expected values by hand.

Task "t" declares the breaking command '^rm -f /tmp/keep'; task "u" declares nothing.
  A t R=1: ls, make, done                    tokens [3, 4, 1] = 8, 3 steps, no fault
  B t R=1: ls, rm -f /tmp/keep, make, done   tokens 7, 4 steps; decoy (first fault: decoy)
  C t R=0: mkae (exit 127), rm -f /tmp/keep, done: decoy, first fault errored -> garbled
  D t R=0: rm -f /tmp/keep (exit 1), cat x (exit 1): decoy, first fault the decoy itself
  E t infra failure: left out of everything
  F u R=0: foo (exit 2): counts for success and errored commands only
Over A-F: 5 episodes, success 2/5; steps/success (3 + 4)/2 = 3.5; tokens/success 7.5;
commands 2 + 3 + 2 + 2 + 1 = 10, errored 1 (C) + 2 (D) + 1 (F) = 4 -> 0.4;
decoy episodes among A-D (the task that declares): B, C, D -> 3/4; garbled first: C -> 1/4.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from termcredit.bench.efficiency import bench_efficiency, efficiency_lines, episode_rates, task_specs
from termcredit.bench.report import _md_table
from termcredit.estimators.oracle import OracleSpec
from termcredit.harness.infra import INFRA_ERROR
from termcredit.records import CommandRecord, Step, TokenLayout, Trajectory, VerifierReport
from termcredit.trialdir import save_trajectory
from task_testutil import make_task

SPECS = {"t": OracleSpec.from_metadata({"oracle": {"necessary": ["^make$"],
                                                   "breaking": ["^rm -f /tmp/keep"]}}, "t")}


def traj(task: str, reward: float, cmds: list[tuple[str, int] | None],
         tokens: list[int] | None = None) -> Trajectory:
    """Steps from (command, exit code) pairs; None is `done`. One loss token a step unless
    ``tokens`` says otherwise."""
    steps = [Step(index=i, action="done") if c is None else
             Step(index=i, action=c[0], command=CommandRecord(
                 command=c[0], stdout="", stderr="", exit_code=c[1], duration_s=0.0, seq=i))
             for i, c in enumerate(cmds)]
    n = tokens or [1] * len(steps)
    mask = [0] + [1 for k in n for _ in range(k)]
    tok = TokenLayout(token_ids=[0] * len(mask), loss_mask=mask, logprobs=[0.0] * len(mask))
    return Trajectory(task=task, instruction="", agent="x", steps=steps,
                      verifier=VerifierReport(reward=reward), tokens=tok)


A = traj("t", 1.0, [("ls", 0), ("make", 0), None], [3, 4, 1])
B = traj("t", 1.0, [("ls", 0), ("rm -f /tmp/keep", 0), ("make", 0), None], [2, 2, 2, 1])
C = traj("t", 0.0, [("mkae", 127), ("rm -f /tmp/keep", 0), None])
D = traj("t", 0.0, [("rm -f /tmp/keep", 1), ("cat x", 1)])
E = traj("t", 0.0, [("mkae", 127)])
E.termination = INFRA_ERROR
F = traj("u", 0.0, [("foo", 2)])


def test_episode_rates_by_hand():
    r = episode_rates([A, B, C, D, E, F], SPECS)
    assert r == pytest.approx({"episodes": 5.0, "success": 0.4, "steps_per_success": 3.5,
                               "tokens_per_success": 7.5, "errored_cmd": 0.4,
                               "decoy_ep": 0.75, "garbled_first": 0.25})


def test_a_command_that_timed_out_is_errored_whatever_its_exit_code():
    # by hand: one episode of task "u", two commands, the second timed out with exit code 0
    # (a killed command's code is whatever the shell reported): 1 errored of 2 -> 0.5
    g = traj("u", 0.0, [("sleep 1", 0), ("sleep 99", 0)])
    g.steps[1].command.timed_out = True
    assert episode_rates([g], SPECS)["errored_cmd"] == 0.5


def test_no_declared_task_no_decoy_rates_and_no_success_no_per_success():
    r = episode_rates([F], SPECS)
    assert r["decoy_ep"] is None and r["garbled_first"] is None
    assert r["steps_per_success"] is None and r["tokens_per_success"] is None
    assert r["success"] == 0.0 and r["errored_cmd"] == 1.0


def _save(t: Trajectory, d: Path) -> None:
    d.mkdir(parents=True)
    save_trajectory(t, d)


def _bench(tmp_path: Path) -> tuple[Path, str]:
    """start: A; grpo update 0: B, C (seed 0) and D (seed 1); update 1: A (seed 0); seed 0
    finished with its last evaluation C (eval/step-000001); seed 1 unfinished, an evaluation
    written but no done.json (not final); depgpo never ran."""
    task = make_task(tmp_path / "tasks" / "t", "")
    with open(task / "task.toml", "a") as f:
        f.write("\n[metadata.oracle]\nnecessary = ['^make$']\nbreaking = ['^rm -f /tmp/keep']\n")
    out = tmp_path / "bench"
    _save(A, out / "start-eval" / "seed-0" / "eval" / "step-start" / "t-i1000" / "g0")
    g = out / "grpo"
    _save(B, g / "seed-0" / "rollouts" / "step-000000" / "t-i0" / "g0")
    _save(C, g / "seed-0" / "rollouts" / "step-000000" / "t-i0" / "g1")
    _save(D, g / "seed-1" / "rollouts" / "step-000000" / "t-i0" / "g0")
    _save(A, g / "seed-0" / "rollouts" / "step-000001" / "t-i1" / "g0")
    _save(B, g / "seed-0" / "eval" / "step-000000" / "t-i1000" / "g0")  # an earlier evaluation
    _save(C, g / "seed-0" / "eval" / "step-000001" / "t-i1000" / "g0")
    (g / "seed-0" / "done.json").write_text("{}")
    _save(A, g / "seed-1" / "eval" / "step-000000" / "t-i1000" / "g0")
    return out, str(task)


def test_bench_efficiency_start_updates_final(tmp_path):
    out, task = _bench(tmp_path)
    eff = bench_efficiency(out, ["grpo", "depgpo"], [0, 1], [task])
    assert eff["start"]["success"] == 1.0 and eff["start"]["decoy_ep"] == 0.0
    assert list(eff["algorithms"]) == ["grpo"]  # depgpo: nothing run yet
    u0, u1 = eff["algorithms"]["grpo"]["updates"]
    # update 0 = B, C, D: success 1/3; commands 3 + 2 + 2 = 7, errored 1 + 2 = 3
    assert u0 == pytest.approx({"update": 0, "episodes": 3.0, "success": 1 / 3,
                                "steps_per_success": 4.0, "tokens_per_success": 7.0,
                                "errored_cmd": 3 / 7, "decoy_ep": 1.0, "garbled_first": 1 / 3})
    assert u1["update"] == 1 and u1["success"] == 1.0 and u1["steps_per_success"] == 3.0
    final = eff["algorithms"]["grpo"]["final"]  # C only: seed 1 has not finished
    assert final["episodes"] == 1.0 and final["success"] == 0.0
    assert final["garbled_first"] == 1.0 and final["steps_per_success"] is None


def test_task_paths_that_do_not_exist_give_no_specs(tmp_path):
    assert task_specs([str(tmp_path / "nowhere")]) == {}


def test_report_lines(tmp_path):
    out, task = _bench(tmp_path)
    lines = efficiency_lines(bench_efficiency(out, ["grpo"], [0, 1], [task]), _md_table)
    text = "\n".join(lines)
    assert "## Learning efficiency per update" in text
    assert "| algorithm | start (eval) | u0 | u1 | final (eval) |" in text
    # the decoy table's grpo row: start 0, updates 1 and 0, final 1
    assert "| grpo | 0.000 | 1.000 | 0.000 | 1.000 |" in text
    # steps per success: start 3 (A), update 0 4 (B), update 1 3 (A), final none
    assert "| grpo | 3.00 | 4.00 | 3.00 | — |" in text
    assert efficiency_lines({"start": None, "algorithms": {}}, _md_table) == []
