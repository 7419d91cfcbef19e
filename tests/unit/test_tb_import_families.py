"""Terminal-Bench-1 import of the task families that broke it (issue #36), each from a fixture
in the authors' format under tests/fixtures/tb1/: aider-python (a pip fallback chain with
redirects), aider-cpp (a script that fails through `set -e`), environment activation, a COPY
of a missing folder, EvoEval's numbered folders and a whole dataset folder at once. The
converted tests/test.sh runs here with bash, /app and /logs/verifier moved into tmp_path."""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from termcredit.tasks import load_task
from termcredit.tasktools.tb_dataset import import_dataset
from termcredit.tasktools.tb_import import import_tb1
from termcredit.tasktools.tb_run_tests import ImportReport, convert_run_tests

REPO = Path(__file__).resolve().parents[2]
TB1 = REPO / "tests" / "fixtures" / "tb1"


def _run(tmp: Path, task: Path, app_files: list[str], src: Path, solve: bool) -> str:
    """Copy ``app_files`` of the TB1 folder ``src`` to tmp/app, run the oracle when ``solve``,
    then the imported task's tests/test.sh; the reward it wrote."""
    app, logs, shim = tmp / "app", tmp / "logs", tmp / "bin"
    for d in (app, logs, shim):
        d.mkdir(parents=True)
    for name in app_files:
        shutil.copy2(src / name, app / name)
    (shim / "python3").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}",
           "TEST_DIR": str(task / "tests"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

    def run(script: Path) -> None:
        text = script.read_text().replace("/logs/verifier", str(logs)).replace("/app", str(app))
        (tmp / script.name).write_text(text)
        subprocess.run(["bash", str(tmp / script.name)], cwd=app, env=env, check=False,
                       capture_output=True, timeout=120)

    if solve:
        run(task / "solution" / "solve.sh")
    run(task / "tests" / "test.sh")
    return (logs / "reward.txt").read_text().strip()


def test_pip_fallback_chain_is_no_package(tmp_path):
    """aider-python: `pip3 install pytest 2>/dev/null || ... || true` installs pytest only;
    the redirect is no requirement (it became `RUN pip install 2>/dev/null`, a failing build)."""
    src = TB1 / "aider-python" / "leap"
    report = import_tb1(src, tmp_path / "leap")
    out = tmp_path / "leap"
    assert (out / "environment/Dockerfile").read_text() == (src / "Dockerfile").read_text()
    assert report.pip_packages == [] and report.apt_packages == [] and report.warnings == []
    test_sh = (out / "tests/test.sh").read_text()
    assert "pip3" not in "\n".join(ln for ln in test_sh.splitlines() if not ln.startswith("#"))
    subprocess.run(["bash", "-n", str(out / "tests/test.sh")], check=True)
    assert _run(tmp_path / "nop", out, ["leap.py"], src, solve=False) == "0"
    assert _run(tmp_path / "oracle", out, ["leap.py", ".solution.zip"], src, solve=True) == "1"


def test_set_e_script_that_fails_scores_0(tmp_path):
    """aider-cpp: the test binary fails and `set -e` stops the script there; a later `echo`
    must not make the exit status 0 (bash ignores set -e inside `if (...)`)."""
    src = TB1 / "aider-cpp" / "leap"
    import_tb1(src, tmp_path / "leap")
    out = tmp_path / "leap"
    files = ["leap.h", "leap.cpp"]
    assert _run(tmp_path / "nop", out, files, src, solve=False) == "0"
    assert _run(tmp_path / "oracle", out, files, src, solve=True) == "1"  # the honest twin


@pytest.mark.parametrize("script, want", [
    ("set -e\nfalse\necho after\n", "0"),
    ("set -e\ntrue\necho after\n", "1"),
    ("false\necho after\n", "1"),  # without set -e the last command decides, as in bash
    ("set -e\nexit 3\n", "0"),
])
def test_script_without_pytest_keeps_set_e(tmp_path, script, want):
    text = convert_run_tests("#!/bin/bash\n" + script, ImportReport(tmp_path))
    logs = tmp_path / "logs"
    logs.mkdir()
    (tmp_path / "t.sh").write_text(text.replace("/logs/verifier", str(logs)))
    subprocess.run(["bash", str(tmp_path / "t.sh")], check=False, capture_output=True)
    assert (logs / "reward.txt").read_text().strip() == want


def test_environment_rewrites_are_warnings(tmp_path):
    """Activations kept, the editable project install moved to build time, `uv run
    parser.py` run by python3: each a warning at import and in task.toml for `tasks check`."""
    report = import_tb1(TB1 / "envs-activate", tmp_path / "e")
    w = report.warnings
    assert len(w) == 4, w
    assert w[0].startswith("run-tests.sh line 3: kept 'source /opt/venv/bin/activate'")
    assert w[1].startswith("run-tests.sh line 4: kept 'conda activate base'")
    assert w[2].startswith("run-tests.sh line 6: 'pip install -e .[test]' installs -e .[test] "
                           "at build time now")
    assert w[3].startswith("run-tests.sh line 7: 'uv run parser.py' runs as 'python3 parser.py'")
    active = [ln for ln in (tmp_path / "e/tests/test.sh").read_text().splitlines()
              if ln and not ln.startswith("#")]
    assert "source /opt/venv/bin/activate" in active and "python3 parser.py" in active
    assert "source /opt/conda/etc/profile.d/conda.sh && conda activate base" in active
    docker = (tmp_path / "e/environment/Dockerfile").read_text()
    assert docker.rstrip().endswith("RUN cd /app && python3 -m pip install --no-cache-dir "
                                    "--break-system-packages -e .[test]")
    meta = tomllib.loads((tmp_path / "e/task.toml").read_text())["metadata"]
    assert meta["import_warnings"] == w
    assert load_task(tmp_path / "e").metadata["import_warnings"] == w


def test_uv_run_of_a_script_keeps_its_interpreter(tmp_path):
    report = ImportReport(tmp_path)
    out = convert_run_tests("uv run --with requests check.py --strict > log.txt\n"
                            "uv run python -c 'print(1)'\n", report)
    lines = out.splitlines()
    assert "python3 check.py --strict > log.txt" in lines
    assert "python3 -c 'print(1)'" in lines
    assert report.pip_packages == ["requests"] and len(report.warnings) == 2


def test_removed_install_counts_as_success(tmp_path):
    """`pip install x || exit 1` must not become `exit 1`; `a && pip install x && b` keeps
    `a && b`."""
    out = convert_run_tests("pip install numpy || exit 1\nmkdir -p /x && pip install y && "
                            "touch /x/ok\n", ImportReport(tmp_path)).splitlines()
    active = [ln for ln in out if not ln.startswith("#")]
    assert not any("exit 1" in ln for ln in active)
    assert "# [termcredit import] removed: pip install numpy || exit 1" in out
    assert "mkdir -p /x && touch /x/ok" in out


def test_copy_of_a_missing_folder_is_said_at_import(tmp_path):
    report = import_tb1(TB1 / "copy-missing", tmp_path / "c")
    assert report.warnings == [
        "environment/Dockerfile line 4: COPY src/: environment/src/ does not exist, so the "
        "image build fails",
        "environment/Dockerfile line 5: COPY solution.sh: the importer put solution.sh in "
        "solution/solve.sh, outside the image, so the image build fails"]


def test_numbered_folders_get_the_dataset_name(tmp_path):
    report = import_tb1(TB1 / "evoeval" / "51", tasks_dir=tmp_path)
    assert report.path == tmp_path / "evoeval-51"
    assert load_task(report.path).name == "evoeval-51"
    assert import_tb1(TB1 / "count-http-errors", tasks_dir=tmp_path).path.name == \
        "count-http-errors"


def test_dataset_folder_imports_each_task(tmp_path):
    rows = import_dataset(TB1 / "evoeval", tmp_path)
    got = [(r.source.name, r.name, r.status) for r in rows]
    assert got == [("26", "evoeval-26", "imported"), ("51", "evoeval-51", "imported"),
                   ("7", "evoeval-7", "skipped")]
    assert "task.yaml: field 'instruction'" in rows[2].why
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evoeval-26", "evoeval-51"]
    assert load_task(tmp_path / "evoeval-26").name == "evoeval-26"


def test_dataset_names_stay_unique(tmp_path):
    ds = tmp_path / "ds"
    for folder in ("Leap", "leap_"):  # both become "leap"
        shutil.copytree(TB1 / "aider-python" / "leap", ds / folder)
    rows = import_dataset(ds, tmp_path / "out")
    assert [(r.name, r.status) for r in rows] == [("leap", "imported"), ("leap", "skipped")]
    assert rows[1].why == f"name 'leap' already taken by {ds / 'Leap'}"


def test_cli_dataset_summary(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", "tasks", "import",
                           str(TB1 / "evoeval"), "--out", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
                          timeout=120)
    assert proc.returncode == 1  # one skipped
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("│")]
    assert [r.split("│")[1:5] for r in rows][:2] == [
        [" 26     ", " evoeval-26 ", " imported ", "        0 "],
        [" 51     ", " evoeval-51 ", " imported ", "        0 "]]
    assert "7" in rows[2] and "skipped" in rows[2] and "field 'instruction'" in rows[2]
    assert "2 imported, 1 skipped, 0 warning(s)" in proc.stderr
