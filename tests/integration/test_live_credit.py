"""Credit ready when the episode ends: in a real episode the trace is parsed a step at a time
and DepGPO's dependencies are built as the steps come (tracer/stream.py, depgpo/live.py). The
weights from them must be those of the trial directory read back and weighed from scratch,
both for a plain episode (the live builder is used as is) and for one whose background job
writes after its step ended (that step's facts change at the end: built anew)."""

from pathlib import Path

import pytest

from termcredit.depgpo import DepGPOConfig, depgpo_step_weights
from termcredit.depgpo.live import KEY, deps_for
from termcredit.depgpo.load import facts_from_trajectory
from termcredit.depgpo.trial_hook import default_hooks  # DepGPO's hooks, as cli/trainer pass
from termcredit.harness.agents import ReplayAgent
from termcredit.harness.trial import run_trial, task_spec
from termcredit.sandbox import SandboxPool, gc
from termcredit.tasks import load_task
from termcredit.tasks.build import build_image
from termcredit.trialdir import load_trajectory

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def episode(client, base_ref, run_id, tmp_path: Path, commands: list[str]):
    task = load_task(REPO / "tests/fixtures/tasks/chain-answer")
    image = build_image(client, task, base_ref=base_ref)
    pool = SandboxPool(client, run_id, ahead=0)
    replay = tmp_path / "replay.txt"
    replay.write_text("\n".join(commands) + "\n")
    seen = {}

    class Keep(ReplayAgent):  # the trajectory in memory, as the trainer holds it
        def run(self, env):
            seen["traj"] = env.trajectory
            return super().run(env)

    try:
        result = run_trial(task, Keep(replay), pool, task_spec(task, image), tmp_path / "t",
                           command_timeout=60, hooks=default_hooks())
    finally:
        pool.close()
        gc(client, run_id=run_id)
    assert result.reward == 1.0, result
    return seen["traj"], Path(result.trial_dir)


def weights(traj):
    facts = facts_from_trajectory(traj)
    return depgpo_step_weights(facts, DepGPOConfig(), deps_for(traj, facts))


SOLVE = [
    "ls /app",
    "sort -t, -k2 -n /app/data.csv > /tmp/stage.csv",
    "tail -n 1 /tmp/stage.csv | cut -d, -f1 > /app/answer.txt",
]


def test_live_weights_are_the_trial_directorys(client, base_ref, run_id, tmp_path):
    traj, trial = episode(client, base_ref, run_id, tmp_path, SOLVE)
    live = weights(traj)
    assert not traj.live[KEY].rebuilt  # the dependencies built as the episode ran
    assert len(traj.live[KEY].prints) == len(traj.steps)
    again = weights(load_trajectory(trial))  # from disk, no live state: from scratch
    assert live == again
    assert live.credit[0] == 0.0 and live.credit[1] > 0 and live.credit[2] > 0


def test_a_late_background_write_rebuilds_and_still_agrees(client, base_ref, run_id, tmp_path):
    traj, trial = episode(client, base_ref, run_id, tmp_path, [
        "(sleep 1; echo late > /tmp/bg.txt) &",
        "sleep 2",
        *SOLVE,
    ])
    assert "/tmp/bg.txt" in traj.steps[0].command.accesses.written  # given to its starter
    live = weights(traj)
    assert traj.live[KEY].rebuilt
    assert live == weights(load_trajectory(trial))
