"""The built-in task suite and `termcredit tasks`: every task passes `check` (oracle 1, nop 0,
verifier resources non-empty; parametrised tasks on instances 0 and 1), a scaffolded task passes
as generated, and a converted Terminal-Bench-1 task passes too. Real Docker, real strace."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from termcredit.tasks import find_tasks
from termcredit.tasktools.check import oracle_steps

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tasks"
TB1 = REPO / "tests" / "fixtures" / "tb1" / "count-http-errors"
TASK_DIRS = sorted(d for d in SUITE.iterdir() if (d / "task.toml").is_file())


def tasks_cli(*args: str, timeout: float = 540) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "termcredit.cli", "tasks", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def assert_check_passes(proc: subprocess.CompletedProcess, n: int) -> None:
    report = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-6000:]}"
    assert proc.returncode == 0, report
    assert f"{n}/{n} task(s) passed" in proc.stdout, report


# ---------------------------------------------------------------- the suite, statically


def test_suite_size_and_coverage():
    tasks = find_tasks([SUITE])
    assert len(tasks) >= 24 and "hello-world" in {t.name for t in tasks}
    assert sum(t.parametrized for t in tasks) >= 6
    categories = {t.metadata["category"] for t in tasks}
    assert {"file-operations", "text-processing", "data-processing", "config", "archives",
            "permissions", "git", "python", "build", "log-analysis"} <= categories


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda d: d.name)
def test_task_follows_the_house_style(task_dir):
    meta = tomllib.loads((task_dir / "task.toml").read_text())
    assert meta["task"]["name"].split("/")[-1] == task_dir.name
    assert meta["metadata"]["difficulty"] in ("easy", "medium")
    assert meta["metadata"]["category"] and meta["metadata"]["tags"]
    assert meta["environment"]["memory_mb"] <= 512
    assert meta["agent"]["timeout_sec"] > 0 and meta["verifier"]["timeout_sec"] > 0
    dockerfile = (task_dir / "environment" / "Dockerfile").read_text()
    assert re.search(r"^FROM termcredit/base\s*$", dockerfile, re.M)
    # short oracles, except the horizon tier's: built long on purpose (credit needs a horizon)
    longest = 8 if "horizon" in meta["metadata"]["tags"] else 6
    assert 1 <= oracle_steps(task_dir) <= longest
    test_sh = (task_dir / "tests" / "test.sh").read_text()
    # pytest, or (the credit tasks: pytest's start-up was most of a traced verifier's cost) the
    # stdlib runner of every test_ function of /tests/test_*.py, isolated from /app and PYTHON*
    assert ("python3 -m pytest -q -p no:cacheprovider /tests/test_" in test_sh
            or ("python3 -I -S -c " in test_sh and 'f.startswith("test_")' in test_sh))
    assert "echo 1 > /logs/verifier/reward.txt" in test_sh
    assert "echo 0 > /logs/verifier/reward.txt" in test_sh
    assert not re.search(r"^\s*fi\s*>", test_sh, re.M)  # the whole if-block redirected
    parametrized = meta["metadata"].get("parametrized", False)
    assert ("ARG TC_INSTANCE=0" in dockerfile) == parametrized
    assert "TC_INSTANCE" not in (task_dir / "solution" / "solve.sh").read_text()
    if parametrized:  # the build and the verifier must generate the same data
        env_gen = task_dir / "environment" / "gen.py"
        assert env_gen.read_bytes() == (task_dir / "tests" / "gen.py").read_bytes()
        assert 'os.environ.get("TC_INSTANCE"' in (task_dir / "tests" / "test_outputs.py").read_text()


def test_tasks_list():
    proc = tasks_cli("list", timeout=60)
    assert proc.returncode == 0, proc.stderr
    for d in TASK_DIRS:
        assert d.name in proc.stdout
    assert f"{len(TASK_DIRS)} task(s)" in proc.stderr


# ---------------------------------------------------------------- `check`, with Docker


def test_whole_suite_passes_check(tmp_path, base_ref):
    """What CI runs: `termcredit tasks check tasks/` (images are cached between runs)."""
    proc = tasks_cli("check", "tasks", "--concurrency", "2", "--out", str(tmp_path / "check"))
    assert_check_passes(proc, len(TASK_DIRS))
    # the run folders stay for inspection: oracle and nop, instances 0 and 1
    assert {p.name for p in (tmp_path / "check").iterdir()} == {
        "oracle-0", "nop-0", "oracle-1", "nop-1"}


def test_new_tasks_pass_check_unmodified(tmp_path, base_ref):
    proc = tasks_cli("new", "foo", "--dir", str(tmp_path / "tasks"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = tasks_cli("new", "foo-param", "--parametrized", "--dir", str(tmp_path / "tasks"),
                     timeout=60)
    assert proc.returncode == 0, proc.stderr
    foo = tmp_path / "tasks" / "foo"
    for rel in ("instruction.md", "task.toml", "environment/Dockerfile", "solution/solve.sh",
                "tests/test.sh", "tests/test_outputs.py", "README.md"):
        assert (foo / rel).is_file(), rel
    assert os.access(foo / "solution" / "solve.sh", os.X_OK)
    proc = tasks_cli("check", str(tmp_path / "tasks"), "--out", str(tmp_path / "check"))
    assert_check_passes(proc, 2)
    again = tasks_cli("new", "foo", "--dir", str(tmp_path / "tasks"), timeout=60)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_tb1_import_passes_check(tmp_path, base_ref):
    out = tmp_path / "imported" / "count-http-errors"
    proc = tasks_cli("import", str(TB1), "--out", str(out), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "uv pip install pytest==8.4.1" in proc.stderr  # the notes say what was rewritten
    proc = tasks_cli("check", str(out), "--out", str(tmp_path / "check"))
    assert_check_passes(proc, 1)


def test_tb1_datasets_import_and_pass_check(tmp_path, base_ref):
    """aider-python (its pip3 fallback chain made a Dockerfile RUN line that failed the build)
    and EvoEval (numbered folders) fixtures, imported a dataset at a time: each builds, its
    oracle scores 1 and nop 0; the encrypted solution in leap's image is a warning."""
    tasks = tmp_path / "tasks"
    for ds, want in (("aider-python", 0), ("evoeval", 1)):  # evoeval/7 has no instruction
        proc = tasks_cli("import", str(TB1.parent / ds), "--out", str(tasks), timeout=60)
        assert proc.returncode == want, proc.stderr
    assert sorted(p.name for p in tasks.iterdir()) == ["evoeval-26", "evoeval-51", "leap"]
    proc = tasks_cli("check", str(tasks), "--out", str(tmp_path / "check"))
    assert_check_passes(proc, 3)
    assert "3/3 task(s) passed" in proc.stdout and "with 1 warning(s)" in proc.stdout
    assert "⚠ leap: environment/Dockerfile line 7 copies .solution.zip" in proc.stdout


def test_check_reports_each_broken_task(tmp_path, base_ref):
    """A task the nop agent solves, one whose oracle fails, one that does not load, one whose
    image does not build: all named, the good one still checked, exit status 1."""
    from termcredit.tasktools.scaffold import new_task

    root = tmp_path / "tasks"
    good = new_task("good", root)
    trivial = new_task("trivial", root)
    (trivial / "tests" / "test.sh").write_text(
        "mkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n")
    wrong = new_task("wrong-oracle", root)
    (wrong / "solution" / "solve.sh").write_text("echo 4 > /app/answer.txt\n")
    broken = new_task("broken", root)
    (broken / "task.toml").write_text("[environment]\nmemory_mb = 'lots'\n")
    shutil.copytree(REPO / "tests" / "fixtures" / "tasks" / "broken-dockerfile",
                    root / "broken-dockerfile")
    # the output folder's name is the user's text: printed as is, never read as markup
    proc = tasks_cli("check", str(root), "--out", str(tmp_path / "[bold]check"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"→{tmp_path}/[bold]check/nop-0" in "".join((proc.stdout + proc.stderr).split())
    text = " ".join(proc.stdout.split())
    assert "1/5 task(s) passed" in text
    assert "broken-dockerfile: image build failed" in text and "RUN exit 3" in text
    assert "trivial: nop (instance 0" in text and "expected 0" in text
    assert "the verifier inspected no file" in text  # `echo 1` reads nothing
    assert "wrong-oracle: oracle (instance 0" in text and "reward 0, expected 1" in text
    assert f"broken: {broken / 'task.toml'}: field 'environment.memory_mb'" in text
    assert good.name in text
