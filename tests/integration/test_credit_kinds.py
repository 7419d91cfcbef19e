"""The dependencies every terminal has, through the real sandbox, tracer and verifier: on the
built-in tasks where leaving the step out makes the reward drop, the step gets credit (a `cd`,
a shell variable, a deletion the tests check, a mode the tests check); the same kind of step
that nothing used gets none."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def tc(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def credit_of(tmp_path: Path, task: str, commands: list[str]) -> list[dict]:
    """Replay ``commands`` (one per step) on tasks/<task>; reward must be 1; per-step credit."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / f"{task}.txt"
    script.write_text("\n".join(commands) + "\n")  # one step per line
    out = tmp_path / task
    tc("run", "--task", str(REPO / "tasks" / task), "--agent", f"replay:{script}",
       "--out", str(out))
    res = json.loads((out / "result.json").read_text())
    assert res["mean_reward"] == 1.0, res
    report = json.loads(tc("credit", res["trials"][0]["trial_dir"], "--json"))
    steps = report["steps"]
    assert [s["command"] for s in steps] == commands
    return steps


def test_cd_used_by_relative_paths_and_a_cd_followed_by_absolute_paths(tmp_path, base_ref):
    used = credit_of(tmp_path / "a", "sort-inbox", [
        "cd /app/inbox",
        'for f in *; do mkdir -p "/app/sorted/${f##*.}" && mv "$f" "/app/sorted/${f##*.}/"; done',
    ])
    assert used[0]["credit"] > 0 and "cwd" in used[0]["classes"]
    assert used[0]["deps"] == [{"kind": "cwd", "path": "/app/inbox", "to_step": 1}]
    unused = credit_of(tmp_path / "b", "sort-inbox", [
        "cd /app/inbox",
        'for f in /app/inbox/*; do b=${f##*/}; mkdir -p "/app/sorted/${b##*.}" && '
        'mv "$f" "/app/sorted/${b##*.}/"; done',
    ])
    assert unused[0]["credit"] == 0 and unused[1]["credit"] > 0


def test_dedupe_cd_and_the_deletion_the_tests_check(tmp_path, base_ref):
    steps = credit_of(tmp_path, "dedupe-files", [
        "cd /app/photos",
        "md5sum * | LC_ALL=C sort -k1,1 -k2,2 | awk 'seen[$1]++ { print $2 }' | LC_ALL=C sort"
        " > /app/removed.txt",
        "xargs -r rm -- < /app/removed.txt",
    ])
    assert [s["credit"] > 0 for s in steps] == [True, True, True]
    assert "cwd" in steps[0]["classes"] and "absence" in steps[2]["classes"]


def test_shell_variable_used_by_the_merge_and_one_nobody_uses(tmp_path, base_ref):
    steps = credit_of(tmp_path, "git-recover-lost-commit", [
        "cd /app/site",
        "lost=$(git reflog --format='%gs' | sed -n 's/^checkout: moving from "
        "\\([0-9a-f]\\{40\\}\\) to main$/\\1/p' | head -n 1)",
        "head=$(git rev-parse HEAD)",
        'git merge -q --no-edit "$lost"',
    ])
    assert steps[1]["credit"] > 0 and steps[1]["classes"] == ["shellvar"]
    assert steps[1]["deps"] == [{"kind": "shellvar", "path": "lost", "to_step": 3}]
    assert steps[2]["credit"] == 0  # set, never expanded
    assert steps[0]["credit"] == 0  # the shell already starts in /app/site
    assert steps[3]["credit"] > 0


def test_deletion_the_tests_probe_and_one_nobody_checks(tmp_path, base_ref):
    steps = credit_of(tmp_path, "disk-usage-report", [
        "find /app/data -type f -printf '%s %p\\n' | sort -k1,1nr | head -n 5"
        " > /app/largest.txt",
        "echo scratch > /tmp/scratch.txt",
        "find /app/data -type f -empty -delete",
        "rm /tmp/scratch.txt",
    ])
    assert steps[2]["credit"] > 0 and "absence" in steps[2]["classes"]
    assert steps[1]["credit"] == 0 and steps[3]["credit"] == 0


def test_mode_the_tests_stat_and_one_nobody_checks(tmp_path, base_ref):
    steps = credit_of(tmp_path, "fix-permissions", [
        "chmod 755 /app/site/bin/*.sh && chmod 640 /app/site/conf/* && "
        "chmod 600 /app/site/conf/*.key",
        "find /app/site/public -type d -exec chmod 755 {} + -o -type f -exec chmod 644 {} +",
        "chmod 1777 /app/site/uploads",
        "chmod 700 /opt",
    ])
    assert steps[2]["credit"] > 0 and "metadata" in steps[2]["classes"]
    assert {"kind": "metadata", "path": "/app/site/uploads", "to_step": None} in steps[2]["deps"]
    assert steps[3]["credit"] == 0
