"""Nothing crashes on bytes (#32): a real `termcredit run` whose agent makes files with names
that are not UTF-8, prints such bytes to stdout and stderr and `cd`s into such a folder; then
`--resume`, `view`, `credit`, `graph` and the trainer's observation tokens on that run.

In memory such a byte is a lone surrogate (U+DC00 + byte, ``os.fsdecode``); the expected
strings below are written out by hand in that form."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from termcredit.harness.steplog import load_steps
from termcredit.trialdir import load_trajectory

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]

# one step per line; bash's $'..' makes the bytes (the replay file itself is UTF-8)
COMMANDS = r"""cd /app
touch $'/app/caf\xe9.txt'
printf 'out \xff\xfe end\n'; printf 'err \xe9\n' >&2
mkdir $'/app/d\xe9' && cd $'/app/d\xe9' && pwd
printf '\xe9\n' > $'n\xff'
cat $'n\xff' > /app/copy.txt
echo 'Hello, world!' > /app/hello.txt
ls /app
"""
CAFE = "/app/caf\udce9.txt"  # b"/app/caf\xe9.txt"
FOLDER = "/app/d\udce9"
NAME = "/app/d\udce9/n\udcff"


def termcredit(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300, errors="backslashreplace")
    if check and proc.returncode != 0:
        raise AssertionError(f"termcredit {args} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def _check_trial(trial: Path) -> None:
    # the files are UTF-8 JSON (the bytes as \udcXX escapes), read back to the same strings
    for name in ("trajectory.json", "steps.jsonl", "result.json"):
        (trial / name).read_bytes().decode("utf-8")
    traj = load_trajectory(trial)
    cmds = [s.command for s in traj.steps]
    assert all(c is not None for c in cmds) and len(cmds) == 8
    assert cmds[1].command == r"touch $'/app/caf\xe9.txt'"
    assert CAFE in cmds[1].accesses.written
    assert (cmds[2].stdout, cmds[2].stderr) == ("out \udcff\udcfe end\n", "err \udce9\n")
    assert cmds[3].stdout == FOLDER + "\n" and cmds[3].cwd == FOLDER
    assert cmds[3].trace_cwd is not None and cmds[3].trace_cwd.after == FOLDER
    assert NAME in cmds[4].accesses.written
    (state,) = [f for f in cmds[4].files if f.path == NAME]
    assert (state.kind, state.size, state.text) == ("file", 2, False)  # b"\xe9\n": not text
    assert NAME in cmds[5].accesses.read
    assert "caf\udce9.txt\n" in cmds[7].stdout and "d\udce9\n" in cmds[7].stdout
    # the step log says the same as the trajectory
    logged = load_steps(trial)
    assert [s.command.stdout for s in logged] == [c.stdout for c in cmds]
    assert logged[1].command.accesses.written >= {CAFE}
    # the raw trace keeps strace's escapes
    assert b'"/app/caf\\351.txt"' in (trial / cmds[1].trace_file).read_bytes()
    assert traj.verifier is not None and traj.verifier.reward == 1.0


def test_run_resume_view_credit_graph_train_on_bytes(tmp_path, base_ref):
    replay = tmp_path / "bytes.txt"
    replay.write_text(COMMANDS)
    out = tmp_path / "run"
    termcredit("run", "--task", "tasks/hello-world", "--agent", f"replay:{replay}", "-k", "2",
               "--out", str(out))
    res = json.loads((out / "result.json").read_text())
    assert res["complete"] and res["n_errors"] == 0 and res["mean_reward"] == 1.0, res
    first, second = out / "hello-world" / "attempt-0", out / "hello-world" / "attempt-1"
    _check_trial(first)
    _check_trial(second)

    # resume: the second trial as if killed (no result.json) is moved aside and run again
    (second / "result.json").unlink()
    resumed = termcredit("run", "--resume", str(out))
    assert "1 finished trial(s) kept, 1 to run" in resumed.stderr
    res = json.loads((out / "result.json").read_text())
    assert res["complete"] and res["n_errors"] == 0 and res["n_trials"] == 2, res
    _check_trial(second)
    aside = out / "hello-world" / "attempt-1.killed-1"
    assert [s.command.stdout for s in load_steps(aside)][2] == "out \udcff\udcfe end\n"

    # credit: the step that wrote n\xff fed the one that read it
    proc = termcredit("credit", str(first), "--json")
    report = json.loads(proc.stdout)
    assert [r["command"] for r in report["steps"]][1] == r"touch $'/app/caf\xe9.txt'"
    assert termcredit("credit", str(first)).returncode == 0  # the table too
    from termcredit.depgpo.graph import from_json

    graph = from_json((first / "graph.json").read_text())
    assert graph.has_edge("cmd:4", f"file:{NAME}@1") and graph.has_edge(f"file:{NAME}@1",
                                                                         "cmd:5")
    dot = tmp_path / "g.dot"
    termcredit("graph", str(first), "--format", "dot", "-o", str(dot))
    assert "n\\xff" in dot.read_text(encoding="utf-8")
    if shutil.which("dot"):
        termcredit("graph", str(first), "--format", "svg", "-o", str(tmp_path / "g.svg"))

    # the viewer shows each byte as \xNN (the page is UTF-8)
    site = tmp_path / "site"
    termcredit("view", str(out), "-o", str(site))
    page = next(p for p in site.rglob("*.html") if "attempt-0" in p.name)
    html = page.read_bytes().decode("utf-8")
    assert "caf\\xe9.txt" in html and "out \\xff\\xfe end" in html

    # the trainer: the observation a policy would see tokenises (and names the bytes)
    from termcredit.trainer.actions import format_observation
    from termcredit.trainer.policy import load_policy

    layout = load_policy("micro", seed=0).chat()
    traj = load_trajectory(first)
    for step in traj.steps:
        assert step.command is not None
        obs = format_observation(step.command)
        assert layout.observation_ids(obs)
    obs = format_observation(traj.steps[2].command)
    assert obs == "exit code: 0\nstdout:\nout \\xff\\xfe end\nstderr:\nerr \\xe9"
