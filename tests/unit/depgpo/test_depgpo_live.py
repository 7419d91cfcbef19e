"""DepGPO's dependencies built step by step while the episode runs (depgpo/live.py).

Three steps: `echo hi > /w/a`, `cp /w/a /w/out`, `cat /w/notes`; the verifier reads /w/out. By
hand: the cp wrote the verified file (credit 1) and read /w/a, whose only line is the echo's,
while writing /w/out, so the echo's record is indirect credit (1); the cat read what nobody
wrote (0). If the cp's read of /w/a goes away after the step was fed (the end-of-episode pass
dropped it), the echo gets 0: the live builder must not answer from what it was fed then.
"""

from __future__ import annotations

import hashlib

from termcredit.depgpo import DepGPOConfig, depgpo_step_weights
from termcredit.depgpo.live import KEY, LiveDependencies, deps_for
from termcredit.depgpo.load import facts_from_trajectory
from termcredit.depgpo.trial_hook import default_hooks
from termcredit.estimators import build
from termcredit.harness.hooks import run_step_hooks
from termcredit.records import CommandRecord, FileState, Step, TraceCwd, Trajectory, VerifierReport
from termcredit.tracer import AccessSummary


def _file(path: str, text: str) -> FileState:
    return FileState(path, "file", size=len(text), sha256=hashlib.sha256(text.encode()).hexdigest(),
                     text=True, content=text)


def _rec(seq: int, command: str, *, read=(), written: dict[str, str]) -> CommandRecord:
    acc = AccessSummary(read=set(read), written=set(written))
    return CommandRecord(command=command, stdout="", stderr="", exit_code=0, duration_s=0.0,
                         seq=seq, accesses=acc, files=[_file(p, t) for p, t in written.items()],
                         trace_cwd=TraceCwd("/w", "/w", []))


def _episode_as_it_runs() -> Trajectory:
    """The two steps recorded one at a time, the step hooks run after each (as AgentEnv.step)."""
    traj = Trajectory(task="t", instruction="copy", agent="x")
    for i, rec in enumerate([_rec(1, "echo hi > /w/a", written={"/w/a": "hi\n"}),
                             _rec(2, "cp /w/a /w/out", read={"/w/a"},
                                  written={"/w/out": "hi\n"}),
                             _rec(3, "cat /w/notes", read={"/w/notes"}, written={})]):
        traj.steps.append(Step(index=i, action=rec.command, command=rec))
        run_step_hooks(default_hooks(), traj)
    traj.verifier = VerifierReport(reward=1.0, resources=["/w/out"])
    return traj


def test_the_step_hook_feeds_every_step_and_the_weights_are_the_walk_from_it() -> None:
    traj = _episode_as_it_runs()
    live = traj.live[KEY]
    assert isinstance(live, LiveDependencies) and len(live.prints) == 3
    facts = facts_from_trajectory(traj)
    sw = depgpo_step_weights(facts, DepGPOConfig(), deps_for(traj, facts))
    assert not live.rebuilt
    assert sw.credit == (1.0, 1.0, 0.0)


def test_a_step_changed_after_it_was_fed_is_built_anew() -> None:
    traj = _episode_as_it_runs()
    traj.steps[1].command.accesses.read.discard("/w/a")  # as finalize drops a maybe-new read
    facts = facts_from_trajectory(traj)
    sw = depgpo_step_weights(facts, DepGPOConfig(), deps_for(traj, facts))
    assert traj.live[KEY].rebuilt
    assert sw.credit == (0.0, 1.0, 0.0)


def test_other_rewrite_settings_do_not_take_the_live_builder() -> None:
    traj = _episode_as_it_runs()
    facts = facts_from_trajectory(traj)
    deps_for(traj, facts, diff_rewrites="never")
    assert traj.live[KEY].rebuilt


def test_the_estimator_weighs_from_the_live_dependencies() -> None:
    """The depgpo estimator weighs a trajectory from its live dependencies. By hand, without
    the std: rewards 1 and 0, Â = ±0.5; credits (1, 1, 0) give f = 3·(C − 0)/2 = (1.5, 1.5, 0)
    (one token a step: w = f), so the steps get (0.75, 0.75, 0) and (−0.75, −0.75, 0)."""
    ran, fresh = _episode_as_it_runs(), _episode_as_it_runs()
    fresh.live.clear()
    failed = _episode_as_it_runs()
    failed.verifier = VerifierReport(reward=0.0, resources=["/w/out"])
    est = build("depgpo", std=False)
    assert est([ran, failed]).step_advantages == [[0.75, 0.75, 0.0], [-0.75, -0.75, 0.0]]
    assert not ran.live[KEY].rebuilt and not failed.live[KEY].rebuilt
    assert est([fresh, failed]).step_advantages == [[0.75, 0.75, 0.0], [-0.75, -0.75, 0.0]]
