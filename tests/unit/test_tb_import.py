"""Terminal-Bench-1 -> Harbor conversion (no Docker: the converted task's `check` is in
tests/integration/test_tasks_suite.py)."""

import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from termcredit.tasks import TaskError, load_task
from termcredit.tasktools.tb_import import ImportReport, convert_run_tests, import_tb1, load_yaml

REPO = Path(__file__).resolve().parents[2]
TB1 = REPO / "tests" / "fixtures" / "tb1" / "count-http-errors"


@pytest.fixture
def imported(tmp_path):
    report = import_tb1(TB1, tmp_path / "count-http-errors")
    return report, tmp_path / "count-http-errors"


def test_layout_and_files(imported):
    report, out = imported
    assert report.path == out
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["environment/Dockerfile", "environment/access.log", "instruction.md",
                     "solution/solve.sh", "task.toml", "tests/test.sh",
                     "tests/test_outputs.py"]
    assert (out / "environment/access.log").read_bytes() == (TB1 / "access.log").read_bytes()
    assert (out / "tests/test_outputs.py").read_text() == (TB1 / "tests/test_outputs.py").read_text()
    assert (out / "solution/solve.sh").read_text() == (TB1 / "solution.sh").read_text()
    for rel in ("solution/solve.sh", "tests/test.sh"):
        assert os.stat(out / rel).st_mode & stat.S_IXUSR, rel


def test_dockerfile_from_kept(imported):
    _, out = imported
    text = (out / "environment/Dockerfile").read_text()
    assert text == (TB1 / "Dockerfile").read_text()  # nothing to move to build time here
    assert text.startswith("FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624")


def test_task_toml_and_instruction(imported):
    _, out = imported
    data = tomllib.loads((out / "task.toml").read_text())
    # Harbor's [task] name is "org/name" (its loader refuses a bare name); termcredit's is
    # the part after the slash
    assert data["task"]["name"] == "terminal-bench-1/count-http-errors"
    assert data["task"]["authors"] == [{"name": "Jane Doe", "email": "jane.doe@example.com"}]
    assert data["metadata"] == {"source": "terminal-bench-1", "difficulty": "easy",
                                "category": "data-processing", "tags": ["logs", "text-processing"],
                                "expert_time_estimate_min": 3, "junior_time_estimate_min": 10}
    assert data["agent"]["timeout_sec"] == 360 and data["verifier"]["timeout_sec"] == 60
    assert data["verifier"]["env"] == {"TEST_DIR": "/tests"}
    assert data["environment"]["allow_internet"] is False
    assert (out / "task.toml").read_text().startswith("# BENCHMARK DATA SHOULD NEVER APPEAR")
    assert (out / "instruction.md").read_text() == (
        "The web server log /app/access.log is in the common log format.\n"
        "Count how many requests got a 404 response and write the number to /app/404-count.txt.\n"
        "Then write the three most requested paths, most requested first, one per line,\n"
        "to /app/top-paths.txt.\n")
    task = load_task(out)
    assert task.name == "count-http-errors" and task.agent_timeout_sec == 360.0
    assert task.verifier_env == {"TEST_DIR": "/tests"} and task.has_solution


def test_test_sh_has_no_downloads_and_writes_the_reward(imported):
    report, out = imported
    text = (out / "tests/test.sh").read_text()
    active = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    joined = "\n".join(active)
    for gone in ("curl", "astral.sh", "uv ", "pip install", "activate", "apt-get"):
        assert gone not in joined, gone
    assert ("if python3 -m pytest -p no:cacheprovider $TEST_DIR/test_outputs.py -rA && "
            '[ -z "${tc_failed:-}" ]; then echo 1 > /logs/verifier/reward.txt; '
            "else tc_failed=1; echo 0 > /logs/verifier/reward.txt; fi") in active
    assert 'if [ "$PWD" = "/" ]; then' in active  # ordinary lines are kept as they were
    assert text.startswith("#!/bin/bash\n") and 'export TEST_DIR="${TEST_DIR:-/tests}"' in active
    assert any("uv pip install pytest==8.4.1" in n for n in report.notes)
    subprocess.run(["bash", "-n", str(out / "tests/test.sh")], check=True)


def _run_test_sh(tmp_path: Path, script: str, tests: dict[str, str]) -> str:
    """Run a converted test.sh on this machine: /logs/verifier -> tmp, python3 -> this Python."""
    logs, tdir, shim = tmp_path / "logs", tmp_path / "tests", tmp_path / "bin"
    for d in (logs, tdir, shim):
        d.mkdir(exist_ok=True)
    for name, body in tests.items():
        (tdir / name).write_text(body)
    (shim / "python3").symlink_to(sys.executable)
    sh = tmp_path / "test.sh"
    sh.write_text(script.replace("/logs/verifier", str(logs)))
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "TEST_DIR": str(tdir),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # start fast: no third-party plugins
    subprocess.run(["bash", str(sh)], cwd=tmp_path, env=env, capture_output=True, check=False)
    return (logs / "reward.txt").read_text().strip()


def test_reward_follows_pytest(tmp_path):
    script = convert_run_tests((TB1 / "run-tests.sh").read_text(), ImportReport(tmp_path))
    for name, body, want in (("pass", "def test_ok():\n    assert True\n", "1"),
                             ("fail", "def test_bad():\n    assert False\n", "0")):
        (tmp_path / name).mkdir()
        assert _run_test_sh(tmp_path / name, script, {"test_outputs.py": body}) == want, name


def test_two_pytest_calls_need_both(tmp_path):
    report = ImportReport(tmp_path)
    script = convert_run_tests('pytest $TEST_DIR/test_a.py\npython -m pytest $TEST_DIR/test_b.py\n',
                               report)
    ok = "def test_ok():\n    assert True\n"
    bad = "def test_bad():\n    assert False\n"
    for name, a, b, want in (("x", bad, ok, "0"), ("y", ok, bad, "0"), ("z", ok, ok, "1")):
        (tmp_path / name).mkdir()
        got = _run_test_sh(tmp_path / name, script, {"test_a.py": a, "test_b.py": b})
        assert got == want, name


def test_script_without_pytest_uses_its_exit_status(tmp_path):
    report = ImportReport(tmp_path)
    script = convert_run_tests('#!/bin/bash\n[ -f "$TEST_DIR/flag" ] || exit 1\necho fine\n',
                               report)
    assert any("no pytest call" in n for n in report.notes)
    (tmp_path / "p").mkdir()
    assert _run_test_sh(tmp_path / "p", script, {"flag": ""}) == "1"
    (tmp_path / "q").mkdir()
    assert _run_test_sh(tmp_path / "q", script, {}) == "0"


def test_rewrites_of_other_download_styles(tmp_path):
    report = ImportReport(tmp_path)
    text = "\n".join([
        "#!/bin/bash",
        "apt-get update && apt-get install -y curl jq",
        "pip install pytest==8.4.1 requests==2.31.0",
        "uv add pytest numpy",
        "python3 -m venv /tmp/venv && . /tmp/venv/bin/activate",
        "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh",
        "uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --ctrf "
        "/logs/verifier/ctrf.json /tests/test_outputs.py -rA",
        "uv run python $TEST_DIR/extra_check.py",
        "cd /app && uv run pytest \\",
        "    $TEST_DIR/test_more.py -rA || true",
    ])
    out = convert_run_tests(text, report)
    active = [ln for ln in out.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert report.apt_packages == ["jq"]
    assert report.pip_packages == ["requests==2.31.0", "numpy"]
    assert not any(w in ln for ln in active for w in ("curl", "uvx", "uv ", "pip install", "venv"))
    assert any(ln.startswith("if python3 -m pytest -p no:cacheprovider /tests/test_outputs.py -rA &&")
               for ln in active)
    assert "--ctrf" not in out
    assert "python3 $TEST_DIR/extra_check.py" in active
    # the cd stays in pytest's condition: the tests run only where the authors ran them
    assert any(ln.startswith("if cd /app && python3 -m pytest -p no:cacheprovider "
                             "$TEST_DIR/test_more.py -rA && ") for ln in active)
    assert any("'uv run python $TEST_DIR/extra_check.py' runs as" in w for w in report.warnings)
    assert "|| true" not in "\n".join(active)
    assert any("dropped '|| true'" in n for n in report.notes)
    script = tmp_path / "t.sh"
    script.write_text(out)
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_test_time_packages_move_to_the_dockerfile(tmp_path):
    src = tmp_path / "needs-requests"
    (src / "tests").mkdir(parents=True)
    (src / "task.yaml").write_text("instruction: Do it.\ndifficulty: medium\n")
    (src / "Dockerfile").write_text("FROM python:3.13-slim-bookworm\nWORKDIR /app\n")
    (src / "run-tests.sh").write_text("#!/bin/bash\nsource $HOME/.local/bin/env\n"
                                      "uv pip install pytest requests\n"
                                      "uv run pytest $TEST_DIR/test_outputs.py -rA\n")
    (src / "tests/test_outputs.py").write_text("def test_x():\n    pass\n")
    report = import_tb1(src, tmp_path / "out")
    docker = (tmp_path / "out/environment/Dockerfile").read_text()
    assert docker.startswith("FROM python:3.13-slim-bookworm\nWORKDIR /app\n")
    assert docker.rstrip().endswith(
        "RUN python3 -m pip install --no-cache-dir --break-system-packages requests")
    assert any("no solution.sh" in n for n in report.notes)
    data = tomllib.loads((tmp_path / "out/task.toml").read_text())
    assert data["agent"]["timeout_sec"] == 360 and data["verifier"]["timeout_sec"] == 60
    assert data["metadata"]["category"] == "software_engineering"  # the TB1 default


def test_solution_yaml_becomes_a_replay(tmp_path):
    """TB1 sent each command of solution.yaml to the terminal on its own: they stay a replay,
    one step per command (solution/commands.txt, which the oracle replays)."""
    src = tmp_path / "yaml-solution"
    (src / "tests").mkdir(parents=True)
    (src / "task.yaml").write_text("instruction: |\n  Make a file.\ndifficulty: easy\n")
    (src / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    (src / "solution.yaml").write_text("- command: mkdir -p /app\n  min_timeout_sec: 1\n"
                                       "- command: touch /app/done\n  block: true\n")
    report = import_tb1(src, tmp_path / "out")
    sol = tmp_path / "out/solution"
    assert (sol / "commands.txt").read_text() == "mkdir -p /app\ntouch /app/done\n"
    assert not (sol / "solve.sh").exists()
    assert any("solution/commands.txt" in n for n in report.notes)
    task = load_task(tmp_path / "out")
    assert task.solution_commands == sol / "commands.txt" and not task.has_solution
    assert task.name == "yaml-solution"  # was "commands.txt", the replay's file name
    assert tomllib.loads((tmp_path / "out/task.toml").read_text())["task"]["name"] == (
        "terminal-bench-1/yaml-solution")


def test_solution_yaml_with_a_multi_line_command_becomes_solve_sh(tmp_path):
    """A command of several lines (a heredoc) cannot be one line of a replay."""
    src = tmp_path / "heredoc"
    (src / "tests").mkdir(parents=True)
    (src / "task.yaml").write_text("instruction: x\n")
    (src / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    (src / "solution.yaml").write_text("- command: |-\n    cat > /app/a <<EOF\n    hi\n    EOF\n"
                                       "- command: touch /app/done\n")
    report = import_tb1(src, tmp_path / "out")
    solve = (tmp_path / "out/solution/solve.sh").read_text().splitlines()
    assert solve[0] == "#!/bin/bash" and solve[-4:] == ["cat > /app/a <<EOF", "hi", "EOF",
                                                         "touch /app/done"]
    assert not (tmp_path / "out/solution/commands.txt").exists()
    assert any("command 1 spans 3 lines" in n for n in report.notes)


def test_errors_name_the_file_and_field(tmp_path):
    with pytest.raises(TaskError, match="task.yaml: missing"):
        import_tb1(tmp_path, tmp_path / "out")
    (tmp_path / "task.yaml").write_text("difficulty: easy\n")
    with pytest.raises(TaskError, match="field 'instruction'"):
        import_tb1(tmp_path, tmp_path / "out")
    (tmp_path / "task.yaml").write_text("instruction: x\nmax_agent_timeout_sec: -5\n")
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    with pytest.raises(TaskError, match="field 'max_agent_timeout_sec'"):
        import_tb1(tmp_path, tmp_path / "out")
    (tmp_path / "out").mkdir()
    (tmp_path / "task.yaml").write_text("instruction: x\n")
    with pytest.raises(ValueError, match="already exists"):
        import_tb1(tmp_path, tmp_path / "out")
    assert import_tb1(tmp_path, tmp_path / "out", force=True).path == tmp_path / "out"


def test_task_yaml_is_read_with_pyyaml():
    path = TB1 / "task.yaml"
    data = load_yaml(path, path.read_text())
    assert data["instruction"].startswith("The web server log /app/access.log")
    assert data["instruction"].endswith("to /app/top-paths.txt.")  # |- : no final newline
    assert data["tags"] == ["logs", "text-processing"]
    assert data["max_agent_timeout_sec"] == 360.0 and data["run_tests_in_same_shell"] is False


def test_yaml_errors_name_the_file_and_line(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    (tmp_path / "task.yaml").write_text("instruction: x\ntags: [a, b\n")
    with pytest.raises(TaskError, match=r"task\.yaml: not readable YAML: .*line 3"):
        import_tb1(tmp_path, tmp_path / "out")
    (tmp_path / "task.yaml").write_text("- just\n- a list\n")
    with pytest.raises(TaskError, match="task.yaml: must be a mapping"):
        import_tb1(tmp_path, tmp_path / "out")
    (tmp_path / "task.yaml").write_text("instruction: x\n")
    (tmp_path / "solution.yaml").write_text("- command: [not, a, string]\n")
    with pytest.raises(TaskError, match=r"solution\.yaml.*\[0\]\.command"):
        import_tb1(tmp_path, tmp_path / "out")
