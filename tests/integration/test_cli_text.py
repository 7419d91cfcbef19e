"""Text is text (issue #12): commands, paths and names an agent or a user chose are printed by
the CLI exactly as they are, never read as Rich markup. One `termcredit run` of a replay agent
whose commands are full of brackets; then `credit`, `trace` and `view` must show them verbatim
and none may crash (`[/draft]` used to raise MarkupError; `[a-z]`, `[bold]` and list
comprehensions used to vanish)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "COLUMNS": "400"}  # tables wide enough that no cell folds

# one step per line; each would be mangled by Rich markup
COMMANDS = [
    "cd /app",
    'echo "[/draft] pricing" > notes.txt',
    "echo '[bold]not bold[/bold] [ and [x]' >> notes.txt",
    "grep -oE '^[a-z]+:' /etc/passwd | head -n 2",
    'python3 -c "print([x * 2 for x in range(3)])"',
    r"echo '\[not markup]' '[link=http://x]y[/link]' >> notes.txt",
    "echo 'Hello, world!' > hello.txt",
    "cat notes.txt",
]
NUL_COMMAND = "printf 'nul\x00here'"  # an invalid action: recorded, the replay goes on
STDOUT = ("[/draft] pricing\n[bold]not bold[/bold] [ and [x]\n"
          "\\[not markup] [link=http://x]y[/link]\n")


def termcredit(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO, env=ENV)
    if check and proc.returncode != 0:
        raise AssertionError(f"termcredit {args} failed ({proc.returncode}):\n{proc.stderr}")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def bracket_run(tmp_path_factory: pytest.TempPathFactory, base_ref: str):
    """(run dir, trial dir, the run's stderr, the agent name): the module's one run."""
    tmp = tmp_path_factory.mktemp("text")
    folder = tmp / "[bold]replays"
    folder.mkdir()
    replay = folder / "cmds.txt"
    replay.write_text("\n".join(COMMANDS[:-1] + [NUL_COMMAND, COMMANDS[-1]]) + "\n")
    out = tmp / "run"
    proc = termcredit("run", "--task", "tasks/hello-world", "--agent", f"replay:{replay}",
                      "--out", str(out))
    res = json.loads((out / "result.json").read_text())
    assert res["n_errors"] == 0, res
    return out, Path(res["trials"][0]["trial_dir"]), proc.stderr, f"replay:{replay}"


def test_run_records_every_command_and_the_nul_line_as_invalid(bracket_run):
    _, trial, _, _ = bracket_run
    traj = json.loads((trial / "trajectory.json").read_text())
    steps = traj["steps"]
    assert [s["action"] for s in steps] == COMMANDS[:-1] + [NUL_COMMAND, COMMANDS[-1]]
    bad = steps[-2]
    assert bad["invalid"] and bad["command"] is None
    assert bad["observation"] == "error: the command contains a NUL byte"
    assert steps[-1]["command"]["stdout"] == STDOUT  # the trial went on after it
    assert steps[3]["command"]["stdout"] == "root:\ndaemon:\n"
    assert steps[4]["command"]["stdout"] == "[0, 2, 4]\n"


def test_run_prints_the_agent_verbatim(bracket_run):
    _, _, stderr, agent = bracket_run
    assert f"run {agent}" in stderr


def test_credit_shows_commands_verbatim(bracket_run):
    _, trial, _, _ = bracket_run
    out = termcredit("credit", str(trial)).stdout
    for cmd in COMMANDS:
        assert cmd in out, (cmd, out)
    assert r"printf 'nul\x00here'" in out  # the NUL made visible, the rest kept
    assert "DepGPO credit: hello-world (reward 1.0" in out


def test_trace_shows_commands_and_paths_verbatim(base_ref):
    steps = ["echo \"[/draft] pricing\" > '/root/[bold]b[/bold].txt'",
             "grep -oE '^[a-z]+:' '/root/[bold]b[/bold].txt' || true",
             'python3 -c "print([x for x in range(3)])" > "/root/[/x]"',
             "cat '/root/[/x]'; echo ["]
    args = ["trace", "--workdir", "/root"]
    for s in steps:
        args += ["--step", s]
    out = termcredit(*args).stdout
    for s in steps:
        assert s in out, (s, out)
    assert "/root/[bold]b[/bold].txt" in out and "/root/[/x]" in out


def test_view_shows_commands_and_output_verbatim(bracket_run):
    run_dir, _, _, agent = bracket_run
    index = Path(termcredit("view", str(run_dir), "--no-graphs").stdout.strip())
    (link,) = re.findall(r"href='(trials/[^']+\.html)'", index.read_text())
    page = html.unescape((index.parent / link).read_text())
    for cmd in COMMANDS:
        assert cmd in page, cmd
    assert "[bold]not bold[/bold] [ and [x]" in page and "[0, 2, 4]" in page


def test_markup_in_paths_gives_a_clean_error(tmp_path):
    missing = tmp_path / "[" / "x]" / "[bold]cmds.txt"  # the path holds `[/x]`
    proc = termcredit("run", "--task", "tasks/hello-world", "--agent", f"replay:{missing}",
                      "--out", str(tmp_path / "never"), check=False)
    assert proc.returncode == 2
    assert f"error: {missing}: replay file not found" in " ".join(proc.stderr.split())
    assert not (tmp_path / "never").exists()

    task = tmp_path / "[" / "x][bold]task"  # a path holding `[/x]`, a name holding `[bold]`
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text("[environmnet]\ncpus = 1\n")
    (task / "instruction.md").write_text("x")
    (task / "environment" / "Dockerfile").write_text("FROM termcredit/base\n")
    (task / "tests" / "test.sh").write_text("true\n")
    proc = termcredit("credit", str(tmp_path / "[/x]"), check=False)
    assert proc.returncode == 2 and f"{tmp_path / '[/x]'}" in proc.stderr
    proc = termcredit("tasks", "list", str(task), check=False)
    assert proc.returncode == 1
    assert (f"error: {task / 'task.toml'}: field 'environmnet': unknown section [environmnet]; "
            "did you mean [environment]?") in " ".join(proc.stderr.split())
    assert "x][bold]task" in proc.stdout  # the table's row for the task that does not load
