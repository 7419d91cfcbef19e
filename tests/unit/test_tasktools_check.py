"""`termcredit tasks check` without Docker: a trial's outcome from the run's summary, the
agent_may_modify proposal, and the package boundary (the task model imports no tooling)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from task_testutil import make_task

from termcredit.records import Trajectory, VerifierReport, save_json
from termcredit.tasks import load_task
from termcredit.tasktools.check import _trial_outcome, may_modify_proposal
from termcredit.trialdir import TrialPaths

HITS = [{"path": "/usr/local/lib/python3.11/site-packages/foo/__init__.py",
         "reason": "python library"},
        {"path": "/usr/local/bin/foo", "reason": "executed"}]


def _trial(d: Path, *, suspect_files: list[dict[str, str]] | None = None) -> Path:
    paths = TrialPaths(d)
    paths.verifier_dir.mkdir(parents=True)
    paths.resources.write_text(json.dumps({"raw_read": ["/app/x", "/tests/t.py"],
                                           "cleaned": ["/app/x"]}))
    verifier = VerifierReport(reward=1.0, resources=["/app/x"], suspect=bool(suspect_files),
                              suspect_files=suspect_files or [])
    save_json(Trajectory(task="t", instruction="", agent="oracle", verifier=verifier),
              paths.trajectory)
    return d


def test_suspect_trial_gives_its_hits_and_a_proposal(tmp_path):
    trial = _trial(tmp_path / "trial", suspect_files=HITS)
    summary = {"trial_dir": str(trial), "reward": 1.0, "suspect": True, "error": None}
    reward, error, resources, hits = _trial_outcome(summary)
    assert (reward, error, resources, hits) == (1.0, None, ["/app/x"], HITS)
    task = load_task(make_task(tmp_path / "t", 'agent_may_modify = ["/opt/**"]\n'))
    line = may_modify_proposal(task, hits)
    assert line == ('agent_may_modify = ["/opt/**", "/usr/local/bin/foo", '
                    '"/usr/local/lib/python3*/site-packages/**"]')
    assert tomllib.loads(line)["agent_may_modify"][0] == "/opt/**"  # valid TOML


def test_clean_trial_needs_no_trajectory(tmp_path):
    """What the run had in memory (its summary) decides; the trajectory is not read back."""
    trial = _trial(tmp_path / "trial")
    TrialPaths(trial).trajectory.write_text("not json: reading it would fail")
    summary = {"trial_dir": str(trial), "reward": 0.0, "suspect": False, "error": "boom"}
    assert _trial_outcome(summary) == (0.0, "boom", ["/app/x"], [])


def test_suspect_without_files_and_trial_without_verifier(tmp_path):
    trial = _trial(tmp_path / "trial")  # suspect through tampering alone: no files listed
    hits = _trial_outcome({"trial_dir": str(trial), "reward": 1.0, "suspect": True})[3]
    assert hits == [{"path": "", "reason": "suspect, no files listed"}]
    (tmp_path / "none").mkdir()
    assert _trial_outcome({"trial_dir": str(tmp_path / "none"), "reward": 0.0})[2] is None


def test_task_model_imports_no_tooling_harness_or_cli():
    code = ("import sys, termcredit.tasks, termcredit.tasks.audit, termcredit.tasks.verifier\n"
            "print([m for m in sys.modules if m.startswith(('termcredit.harness', "
            "'termcredit.cli', 'termcredit.tasktools', 'termcredit.viewer'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_task_needs_a_known_good_solution_of_some_kind(tmp_path):
    """solve.sh (the oracle), solution/commands.txt (the oracle replays it) or a replay file
    given to `check --solution replay:FILE`: without any, check says how to give one."""
    from termcredit.tasktools.check import lint, oracle_steps

    task = load_task(make_task(tmp_path / "t", ""))
    (problem,) = lint(task)
    assert problem == (f"{task.solution_dir / 'solve.sh'}: missing, and no "
                       "solution/commands.txt (the oracle runs one of them; or check with "
                       "--solution replay:FILE, one known-good command per line)")
    assert lint(task, solution="replay:/x/cmds.txt") == []
    assert oracle_steps(task.path) is None
    (task.solution_dir).mkdir()
    (task.solution_dir / "commands.txt").write_text("cd /app\n\n# a note\necho 4 > a\n")
    assert lint(task) == [] and oracle_steps(task.path) == 3  # steps: the comment is one too


def test_problems_are_printed_as_text(tmp_path):
    """A problem quotes build output (untrusted): no markup, no terminal control codes."""
    import io

    from rich.console import Console

    from termcredit.tasktools.check import TaskCheck, render

    out = io.StringIO()
    check = TaskCheck(path=tmp_path, name="[bold]t", problems=[
        "image build failed: \x1b]0;owned\x07 [red]x[/red]"])
    render([check], Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    assert "✗ [bold]t: image build failed: \\x1b]0;owned\\x07 [red]x[/red]" in text
