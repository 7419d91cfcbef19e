"""One episode lifecycle: a `termcredit run` trial and a trainer rollout leave the same files
in their trial directories, record the same phases, and treat a verifier crash the same way.
Real Docker; a scripted policy stands in for the model (what it says is fixed)."""

from pathlib import Path

import pytest
from scripted_policy import Layout, ScriptedPolicy

from termcredit.depgpo.trial_hook import default_hooks  # graph.json, as cli/trainer pass it
from termcredit.harness import episode as episode_mod
from termcredit.harness.agents import ReplayAgent
from termcredit.harness.trial import run_trial, task_spec
from termcredit.sandbox import SandboxPool, gc
from termcredit.tasks import load_task
from termcredit.tasks.build import build_image
from termcredit.trainer.rollout import RolloutConfig, rollout_group
from termcredit.trialdir import TrialPaths, load_trajectory

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
SOLVE = "sort -t, -k2 -n /app/data.csv | tail -n 1 | cut -d, -f1 > /app/answer.txt"
PHASES = {"start", "agent", "finalize", "verify", "hooks"}


def solving_policy() -> ScriptedPolicy:
    return ScriptedPolicy([[SOLVE, "done"]])


def files(root: Path) -> set[str]:
    """Relative file names, content hashes folded (their names depend on the content only)."""
    out = set()
    for p in root.rglob("*"):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            out.add("content/<sha256>" if rel.startswith("content/") else rel)
    return out


def both(client, base_ref, run_id, tmp_path: Path) -> tuple[Path, Path]:
    task = load_task(REPO / "tests/fixtures/tasks/chain-answer")
    image = build_image(client, task, base_ref=base_ref)
    pool = SandboxPool(client, run_id, ahead=1)
    replay = tmp_path / "replay.txt"
    replay.write_text(SOLVE + "\n")
    try:
        run_trial(task, ReplayAgent(replay), pool, task_spec(task, image), tmp_path / "run",
                  command_timeout=60, hooks=default_hooks())
        rollout_group(solving_policy(), Layout(), task, image, pool, 1, tmp_path / "rollout",
                      RolloutConfig(max_turns=3, command_timeout=60), hooks=default_hooks())
    finally:
        pool.close()
        gc(client, run_id=run_id)
    return tmp_path / "run", tmp_path / "rollout" / "g0"


def test_run_trial_and_rollout_write_the_same_trial_directory(client, base_ref, run_id,
                                                              tmp_path):
    run_dir, roll_dir = both(client, base_ref, run_id, tmp_path)
    assert files(run_dir) == files(roll_dir)
    for name in ("trajectory.json", "result.json", "steps.jsonl", "graph.json",
                 "trace/shell-start.strace", "trace/step-000.strace", "trace/verifier.strace",
                 "verifier/resources.json"):
        assert name in files(roll_dir), name
    for d in (run_dir, roll_dir):
        traj = load_trajectory(d)
        assert traj.verifier is not None and traj.verifier.reward == 1.0
        assert set(traj.info["phases"]) == PHASES
        # the agent shell's whole trace reads back from either (it failed on rollouts before)
        text = TrialPaths(d).session_trace_text()
        assert text.startswith(TrialPaths(d).shell_start_trace.read_text())
        assert TrialPaths(d).step_traces()[0].read_text() in text


def test_a_verifier_crash_is_an_infrastructure_failure_in_both(client, base_ref, run_id,
                                                              tmp_path, monkeypatch):
    def crash(*_a, **_kw):
        raise RuntimeError("verifier harness exploded")

    monkeypatch.setattr(episode_mod, "verify_episode", crash)
    run_dir, roll_dir = both(client, base_ref, run_id, tmp_path)
    for d in (run_dir, roll_dir):
        traj = load_trajectory(d)
        assert traj.termination == "infra_error"
        assert traj.info["infra_error"] == "verification: RuntimeError: verifier harness exploded"
        assert traj.verifier is not None and traj.verifier.reward == 0.0
        assert "verifier harness exploded" in TrialPaths(d).error.read_text()
        assert len(traj.steps) >= 1 and traj.steps[0].command is not None  # kept


class InterruptedPolicy(ScriptedPolicy):
    """Ctrl-C arrives while the second turn is being generated."""

    def generate(self, prompts, **kw):
        if self.turn == 1:
            raise KeyboardInterrupt
        return super().generate(prompts, **kw)


def test_an_interrupted_rollout_keeps_its_steps_and_gives_the_sandboxes_back(
        client, base_ref, run_id, tmp_path):
    task = load_task(REPO / "tests/fixtures/tasks/chain-answer")
    image = build_image(client, task, base_ref=base_ref)
    pool = SandboxPool(client, run_id, ahead=2)
    released = []
    real_release = pool.release
    pool.release = lambda sb: released.append(sb.id) or real_release(sb)
    try:
        with pytest.raises(KeyboardInterrupt):
            rollout_group(InterruptedPolicy([[SOLVE, "done"]]), Layout(), task, image, pool, 2, tmp_path,
                          RolloutConfig(max_turns=3, command_timeout=60))
        assert len(released) == 2  # both sandboxes handed back before the interrupt went on
        for k in range(2):
            paths = TrialPaths(tmp_path / f"g{k}")
            traj = load_trajectory(paths.root)
            assert [s.command.command for s in traj.steps] == [SOLVE]  # the step that ran
            assert traj.verifier is None and not paths.result.exists()  # no verdict
    finally:
        pool.close()
        gc(client, run_id=run_id)
