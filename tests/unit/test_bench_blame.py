"""Where DepGPO's weight goes in a bench run's rollouts: a recorded trial whose only credited
step is its last (the `mv` that wrote the answer; 49 look-around steps before it get 0),
filed once as solved and once as failed with some commands marked as errored."""

import json
import shutil
from pathlib import Path

from termcredit.bench.blame import blame_lines, blame_split, rollout_trials, tally

TRIAL = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "trial-50"


def _file(run_dir: Path, g: int, reward: float, errored: dict[int, str] = {}) -> None:
    d = run_dir / "seed-0" / "rollouts" / "step-000000" / "chain-answer-i0" / f"g{g}"
    shutil.copytree(TRIAL, d)
    res = json.loads((d / "result.json").read_text())
    (d / "result.json").write_text(json.dumps({**res, "reward": reward}))
    traj = json.loads((d / "trajectory.json").read_text())
    for i, how in errored.items():
        cmd = traj["steps"][i]["command"]
        if how == "exit":
            cmd["exit_code"] = 2
        else:
            cmd["timed_out"] = True
    (d / "trajectory.json").write_text(json.dumps(traj))


def test_blame_split_by_hand(tmp_path):
    run = tmp_path / "depgpo"
    _file(run, 0, 1.0)
    _file(run, 1, 0.0, {0: "exit", 1: "timeout", 49: "exit"})
    _file(run, 2, 0.0, {3: "exit"})
    trials = rollout_trials(run)
    assert [t.name for t in trials] == ["g0", "g1", "g2"]
    n = tally(trials)
    # weights: 0 on steps 0..48, 50 on step 49 (only the answer's writer has credit; mean 1)
    assert (n["ok_traj"], n["fail_traj"], n["ok_fallback"], n["fail_fallback"]) == (1, 2, 0, 0)
    assert (n["fail_steps_errored"], n["fail_steps_exit0"]) == (4, 96)
    assert n["fail_weight_errored"] == 50 and n["fail_weight_exit0"] == 50
    assert (n["fail_zero_errored"], n["fail_zero_exit0"]) == (3, 96 - 1)
    split = blame_split(n)
    assert split == {"trials": 3, "failed": 2, "fail_fallback": 0.0,
                     "fail_weight_on_exit0": 0.5, "fail_errored_zero_weight": 0.75,
                     "ok_fallback": 0.0}
    text = " ".join(blame_lines(split))
    assert "3 training rollouts (2 failed)" in text
    assert "0% of failed episodes fell back" in text and "50% of the weight" in text
    assert "75% of the commands that errored got weight 0" in text


def test_no_failed_rollouts_say_nothing(tmp_path):
    run = tmp_path / "depgpo"
    _file(run, 0, 1.0)
    split = blame_split(tally(rollout_trials(run)))
    assert split["fail_weight_on_exit0"] is None and split["ok_fallback"] == 0.0
    assert blame_lines(split) == [] and blame_lines(None) == []
