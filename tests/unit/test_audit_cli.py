"""`termcredit audit RUN_DIR` and the viewer's suspect markers, on a hand-built run directory.

Agent-chosen strings (paths, task names, tampering notes) carry Rich markup and HTML so that
a renderer which interprets them shows it: each must come out verbatim (Rich) or escaped (HTML).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from termcredit.viewer import build_view
from termcredit.cli import build_parser, main
from termcredit.harness.audit_cli import audit_run, find_trials, plain, render_audit
from termcredit.records import (CommandRecord, Step, Trajectory, TrialResult, VerifierReport,
                                save_json)

MARKUP_PATH = "/usr/lib/python3/dist-packages/[/x]/[bold]conftest.py"
HTML_PATH = "/usr/local/bin/<b>python3</b>"


def _trial(d: Path, task: str, reward: float, verifier: VerifierReport | None,
           integrity: list[str] = (), step_integrity: list[str] = ()) -> None:
    cmd = CommandRecord(command="echo hi", stdout="hi\n", stderr="", exit_code=0,
                        duration_s=0.01, integrity=list(step_integrity))
    traj = Trajectory(task=task, instruction="Do it.", agent="replay", termination="done",
                      steps=[Step(index=0, action="echo hi", command=cmd)], verifier=verifier,
                      integrity=list(integrity))
    save_json(traj, d / "trajectory.json")
    save_json(TrialResult(task=task, reward=reward, trial_dir=str(d), n_steps=1,
                          suspect=bool(verifier and verifier.suspect),
                          integrity=list(integrity)), d / "result.json")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run[bold]"
    _trial(run / "clean" / "attempt-0", "clean", 1.0, VerifierReport(reward=1.0))
    _trial(run / "hack" / "attempt-0", "[bold]hack[/bold]", 1.0, VerifierReport(
        reward=1.0, suspect=True, on_suspect="flag",
        suspect_files=[{"path": MARKUP_PATH, "reason": "conftest.py"},
                       {"path": HTML_PATH, "reason": "executed"}]))
    _trial(run / "tamper" / "attempt-[1]", "tamper", 0.0,
           VerifierReport(reward=0.0, tampering=["wrote /tests/[red]x[/red] during verification"]),
           integrity=["forged end marker [/x]"], step_integrity=["\x1b[2Jterminal escape"])
    (run / "result.json").write_text(json.dumps({"trials": [], "mean_reward": 2 / 3}))
    return run


def _render(run: Path) -> str:
    rows, seen = audit_run(run)
    buf = io.StringIO()
    render_audit(run, rows, seen, Console(file=buf, width=400, color_system=None))
    return buf.getvalue()


def test_finds_every_trial_not_the_run_result(run_dir):
    assert [p.relative_to(run_dir).as_posix() for p in find_trials(run_dir)] == [
        "clean/attempt-0", "hack/attempt-0", "tamper/attempt-[1]"]


def test_lists_suspect_and_tampered_trials_only(run_dir):
    rows, seen = audit_run(run_dir)
    assert seen == 3 and [r.trial_dir for r in rows] == ["hack/attempt-0", "tamper/attempt-[1]"]
    hack, tamper = rows
    assert hack.suspect and hack.reward == 1.0 and hack.task == "[bold]hack[/bold]"
    assert hack.suspect_files == [(MARKUP_PATH, "conftest.py"), (HTML_PATH, "executed")]
    assert not tamper.suspect and tamper.reward == 0.0
    assert tamper.tampering == ["wrote /tests/[red]x[/red] during verification"]
    assert tamper.integrity == ["forged end marker [/x]", "step 0: \x1b[2Jterminal escape"]


def test_agent_strings_print_verbatim_never_as_markup(run_dir):
    out = _render(run_dir)
    for text in (f"{MARKUP_PATH}: conftest.py", f"{HTML_PATH}: executed", "[bold]hack[/bold]",
                 "wrote /tests/[red]x[/red] during verification", "forged end marker [/x]",
                 "tamper/attempt-[1]", "run[bold]"):
        assert text in out, text
    assert "\x1b" not in out and "step 0: \\x1b[2Jterminal escape" in out
    assert "2 of 3 trial(s) listed: 1 suspect, 1 with tampering or integrity problems only" in out


def test_no_suspect_trials_one_line(tmp_path):
    run = tmp_path / "r[/x]"
    _trial(run / "clean" / "attempt-0", "clean", 1.0, VerifierReport(reward=1.0))
    assert _render(run) == f"no suspect trials in {run} (1 trial(s) read)\n"


def test_unreadable_trial_is_listed(tmp_path):
    (tmp_path / "t" / "attempt-0").mkdir(parents=True)
    (tmp_path / "t" / "attempt-0" / "trajectory.json").write_text("{not json")
    rows, seen = audit_run(tmp_path)
    assert seen == 1 and rows[0].problems == ["trajectory.json unreadable: JSONDecodeError"]


def test_plain_makes_control_characters_visible():
    assert plain("a\x1b[31mb\nc\x7f") == "a\\x1b[31mb\\nc\\x7f"


def test_cli_verb_exits_0(run_dir, capsys):
    args = build_parser().parse_args(["audit", str(run_dir)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "hack/attempt-0" in out and "conftest.py" in out and "executed" in out
    assert main(["audit", str(run_dir / "missing")]) == 2  # not a run directory: an error


def test_help_names_the_verb():
    assert "audit" in build_parser().format_help()


def test_view_marks_suspect_trials_and_lists_findings(run_dir):
    index_path = build_view(run_dir, run_dir / "site", graphs=False)
    index = index_path.read_text()
    assert "suspect rewards</dt><dd>1" in index and "tampering recorded</dt><dd>1" in index
    assert index.count(">suspect</span>") == 1 and index.count(">tampering</span>") == 1
    pages = {p.name: p.read_text() for p in (run_dir / "site" / "trials").iterdir()}
    hack = pages["hack__attempt-0.html"]
    assert "<b>suspect reward</b>" in hack and "(the reward was kept, flagged)" in hack
    assert "<code>/usr/local/bin/&lt;b&gt;python3&lt;/b&gt;</code> — executed" in hack
    assert "<b>python3</b>" not in hack and MARKUP_PATH in hack
    tamper = pages["tamper__attempt-_1.html"]
    assert "wrote /tests/[red]x[/red] during verification" in tamper
    assert "forged end marker [/x]" in tamper and "step 0: \x1b[2Jterminal escape" in tamper
    assert "suspect reward" not in tamper and ">suspect</span>" not in pages["clean__attempt-0.html"]
