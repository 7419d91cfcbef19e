"""A trial whose files cannot be saved records that as its own error; nothing is raised, so
the run goes on (#32). The failing save is faked: the lifecycle layer alone is under test."""

from __future__ import annotations

from pathlib import Path

from termcredit.harness import episode as episode_mod
from termcredit.harness.episode import Episode, task_spec
from termcredit.tasks import load_task
from termcredit.trialdir import load_result

HELLO = Path(__file__).resolve().parents[2] / "tasks" / "hello-world"


def _episode(trial: Path) -> Episode:
    task = load_task(HELLO)
    return Episode(task, None, task_spec(task, "unused"), trial, agent="replay:x")  # type: ignore[arg-type]


def test_a_trajectory_that_cannot_be_saved_is_the_trials_error(tmp_path, monkeypatch):
    def refuse(traj, trial_dir=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(episode_mod, "save_trajectory", refuse)
    ep = _episode(tmp_path / "t")
    result = ep.finish()  # never raises
    assert result.error == "OSError: [Errno 28] No space left on device"
    assert result.reward == 0.0
    assert load_result(tmp_path / "t").error == result.error  # its result.json says so
    assert "No space left on device" in (tmp_path / "t" / "error.txt").read_text()
    assert ep.traj.info["infra_error"].startswith("saving the trajectory: OSError")


def test_a_result_that_cannot_be_saved_comes_back_with_the_error(tmp_path, monkeypatch):
    def refuse(result, trial_dir):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(episode_mod, "save_result", refuse)
    result = _episode(tmp_path / "t").finish()
    assert result.error == "result.json not written: OSError: [Errno 5] Input/output error"
    assert not (tmp_path / "t" / "result.json").exists()  # a resume runs it again
    assert (tmp_path / "t" / "trajectory.json").is_file()

