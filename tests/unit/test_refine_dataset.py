"""The SFT chat layout refine writes and the loader reads, and refine's verdict when a replay
fails (the replay itself replaced by a stand-in: the Docker path has its integration test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termcredit.records import (CommandRecord, Step, TraceCwd, Trajectory, VerifierReport)
from termcredit.refine import run as refine_run
from termcredit.tasks import load_task
from termcredit.tracer import AccessSummary
from termcredit.trainer.actions import SYSTEM_PROMPT
from termcredit.trainer.sft import Demo, demo_from_messages, demo_messages, load_sft_jsonl

REPO = Path(__file__).resolve().parents[2]


def test_demo_messages_and_back() -> None:
    demo = Demo("do it", [("ls", "exit code: 0"), ("done", "")])
    msgs = demo_messages(demo)
    assert msgs == [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": "do it"},
                    {"role": "assistant", "content": "ls"},
                    {"role": "user", "content": "exit code: 0"},
                    {"role": "assistant", "content": "done"}]
    assert demo_from_messages(msgs) == demo


def test_loader_names_the_bad_line(tmp_path: Path) -> None:
    good = json.dumps({"messages": demo_messages(Demo("x", [("done", "")])), "task": "t"})
    f = tmp_path / "d.jsonl"
    f.write_text(good + "\n\n" + json.dumps({"messages": [{"role": "user", "content": "x"}]})
                 + "\n")
    with pytest.raises(ValueError, match=r"d.jsonl:3: messages"):
        load_sft_jsonl(f)
    f.write_text(good + "\n{oops\n")
    with pytest.raises(ValueError, match=r"d.jsonl:2: not JSON"):
        load_sft_jsonl(f)
    other = demo_messages(Demo("x", [("done", "")]), system="You are a pirate.")
    f.write_text(json.dumps({"messages": other}) + "\n")
    with pytest.raises(ValueError, match=r"d.jsonl:1: messages\[0\]: the system message"):
        load_sft_jsonl(f)
    f.write_text(good + "\n")
    assert load_sft_jsonl(f) == [Demo("x", [("done", "")])]


def _traj(reward: float, commands: list[str]) -> Trajectory:
    """Commands that write the file their text names after `>` (the verifier reads /app/out)."""
    steps = []
    for i, c in enumerate(commands):
        written = {c.split("> ")[1]} if "> " in c else set()
        rec = CommandRecord(command=c, stdout="", stderr="", exit_code=0, duration_s=0.0, seq=i,
                            accesses=AccessSummary(written=written),
                            trace_cwd=TraceCwd("/app", "/app", []))
        steps.append(Step(index=i, action=c, command=rec))
    return Trajectory(task="hello-world", instruction="hi", agent="x", steps=steps,
                      verifier=VerifierReport(reward=reward, resources=["/app/out"]),
                      trial_dir="/nowhere")


def test_a_refined_trajectory_whose_replay_fails_is_not_kept(tmp_path, monkeypatch) -> None:
    # `true` changes nothing: dropped; the stand-in replay of what is left scores 0
    source = refine_run.Source(_traj(1.0, ["true", "echo hi > /app/out"]),
                               load_task(REPO / "tasks" / "hello-world"))
    seen = []

    def fake_replay(jobs, out_dir, **kw):
        seen.extend(jobs)
        return [_traj(0.0, cmds) for _, _, cmds in jobs]

    monkeypatch.setattr(refine_run, "replay", fake_replay)
    out = tmp_path / "r.jsonl"
    report = refine_run.refine_sources([source], out)
    assert [cmds for _, _, cmds in seen] == [["echo hi > /app/out"]]
    assert (report["trials_in"], report["kept"], report["rejected"]) == (1, 0, 1)
    assert report["trajectories"][0]["why"] == ("replay reward 0 < 1: a dropped step mattered "
                                                "after all")
    assert out.read_text() == ""


def test_trials_are_found_in_train_and_bench_layouts(tmp_path) -> None:
    from termcredit.records import save_json
    from termcredit.trialdir import save_trajectory

    hello = str(REPO / "tasks" / "hello-world")
    # a train run: config.toml names its tasks; rollouts and evaluation hold trial folders
    train = tmp_path / "train"
    train.mkdir()
    (train / "config.toml").write_text(f'tasks = ["{hello}"]\n')
    good = train / "rollouts" / "step-000000" / "hello-world-i0" / "g0"
    bad = train / "rollouts" / "step-000000" / "hello-world-i0" / "g1"
    mine = train / "refined-replays" / "0000-hello-world"
    save_trajectory(_traj(1.0, ["echo hi > /app/out"]), good)
    save_trajectory(_traj(0.0, ["echo no > /app/out"]), bad)
    replayed = _traj(1.0, ["echo hi > /app/out"])
    replayed.agent = refine_run.StepsAgent.name
    save_trajectory(replayed, mine)
    index = refine_run.task_index(train, [])
    assert list(index) == ["hello-world"]
    sources, skipped = refine_run.find_sources(train, index)
    assert [s.traj.trial_dir for s in sources] == [str(good)]
    assert sorted((Path(s["trial"]).name, s["why"]) for s in skipped) == [
        ("0000-hello-world", "a refine replay (an earlier refine's output)"),
        ("g1", "not successful")]
    # a bench folder: bench.json and the runs inside it name the tasks
    bench = tmp_path / "bench"
    (bench / "depgpo" / "seed-0").mkdir(parents=True)
    save_json({"tasks": [hello]}, bench / "bench.json")
    save_trajectory(_traj(1.0, ["echo hi > /app/out"]),
                    bench / "depgpo" / "seed-0" / "eval" / "step-000001" / "hello-world-i1000" / "g0")
    index = refine_run.task_index(bench, [])
    sources, skipped = refine_run.find_sources(bench, index)
    assert len(sources) == 1 and skipped == []
    # a task nobody names is reported, not guessed
    sources, skipped = refine_run.find_sources(bench, {})
    assert sources == [] and skipped[0]["why"] == "task 'hello-world' not found (--tasks)"
