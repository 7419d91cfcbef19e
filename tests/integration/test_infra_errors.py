"""Infrastructure failures are not the agent's: a sandbox removed from outside mid-episode is
marked and left out of training; an agent that breaks its own environment keeps reward 0.
Real Docker, real rollouts (a scripted policy stands in for the model: what it says is fixed)."""

import threading
import time
from pathlib import Path

import pytest
from scripted_policy import Layout, ScriptedPolicy

from termcredit.sandbox import SandboxPool, gc
from termcredit.tasks import load_task
from termcredit.tasks.build import build_image
from termcredit.trainer.rollout import RolloutConfig, rollout_group
from termcredit.trainer.train import integrity_counts, select_group

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
SOLVE = "sort -t, -k2 -n /app/data.csv | tail -n 1 | cut -d, -f1 > /app/answer.txt"
SCRIPTS = [
    ["sleep 31", SOLVE],  # its sandbox is removed while this runs
    # solved, then moved its working directory away: its own environment broken (its python
    # is no longer the verifier's: that is the image's, whatever the agent removes)
    [SOLVE, "mv /app /app-gone"],
    [SOLVE, "done"],
    ["echo wrong > /app/answer.txt", "done"],
]


def remove_when_sleeping(client, run_id: str, stop: threading.Event) -> None:
    """Bounded: polls for 60 s at most, then gives up."""
    deadline = time.monotonic() + 60
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            found = client.containers.list(filters={"label": f"termcredit.run={run_id}"})
        except Exception:  # noqa: BLE001 - a container went away while listed: look again
            found = []
        for c in found:
            try:
                if any(p and p[-1].startswith("sleep 31") for p in c.top()["Processes"] or []):
                    c.remove(force=True)
                    return
            except Exception:  # noqa: BLE001 - not running (yet, or any more)
                continue
        time.sleep(0.2)


def test_removed_sandbox_is_masked_and_a_broken_environment_scores_zero(
        client, base_ref, run_id, tmp_path):
    task = load_task(REPO / "tests/fixtures/tasks/chain-answer")
    image = build_image(client, task, base_ref=base_ref)
    pool = SandboxPool(client, run_id, ahead=len(SCRIPTS))
    stop = threading.Event()
    killer = threading.Thread(target=remove_when_sleeping, args=(client, run_id, stop))
    killer.start()
    try:
        trajs = rollout_group(ScriptedPolicy(SCRIPTS), Layout(), task, image, pool, len(SCRIPTS),
                              tmp_path, RolloutConfig(max_turns=2, command_timeout=60))
    finally:
        stop.set()
        killer.join()
        pool.close()
        gc(client, run_id=run_id)
    removed, broke, solved, wrong = trajs
    assert removed.termination == "infra_error"
    assert removed.info["infra_error"].startswith("step 0: ")
    assert (tmp_path / "g0" / "trajectory.json").is_file()  # kept on disk
    assert broke.termination != "infra_error" and broke.verifier.reward == 0.0
    assert solved.verifier.reward == 1.0 and wrong.verifier.reward == 0.0
    assert integrity_counts(trajs)["infra_episodes"] == 1.0
    kept = select_group(trajs)
    assert kept == [broke, solved, wrong]
