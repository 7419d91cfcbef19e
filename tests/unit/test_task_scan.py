"""`tasks check`'s warnings without Docker (tasktools/task_scan.py), on Terminal-Bench-1
fixtures imported as `tasks import` does: answer material the agent can reach, verifiers that
run a fraction of their cases, the importer's own warnings, and a COPY of a missing folder
said before any build."""

import io
from pathlib import Path

from rich.console import Console

from termcredit.tasks import load_task
from termcredit.tasktools.check import TaskCheck, render
from termcredit.tasktools.task_scan import (answer_material, dockerfile_copies, missing_copies,
                                            partial_cases, task_warnings)
from termcredit.tasktools.tb_import import import_tb1

TB1 = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tb1"


def _imported(tmp_path: Path, rel: str):
    out = tmp_path / rel.replace("/", "-")
    import_tb1(TB1 / rel, out)
    return load_task(out)


def test_encrypted_solution_in_the_image(tmp_path):
    task = _imported(tmp_path, "aider-python/leap")
    assert answer_material(task) == [
        "environment/Dockerfile line 7 copies .solution.zip into the image: a password-protected "
        "zip, readable by the agent; the oracle (solution/) decrypts it, so its key is public "
        "with the task (answer material within the agent's reach)"]
    assert partial_cases(task) == []


def test_solution_copied_by_the_dockerfile(tmp_path):
    """copy-missing's Dockerfile copies solution.sh (which import moved): once the author
    puts it back in environment/, it is the answer inside the image."""
    task = _imported(tmp_path, "copy-missing")
    (task.environment_dir / "src").mkdir()
    (task.environment_dir / "solution.sh").write_bytes((task.solution_dir / "solve.sh")
                                                       .read_bytes())
    assert missing_copies(task.environment_dir) == []
    assert answer_material(task) == [
        "environment/Dockerfile line 5 copies solution.sh into the image: the same bytes as a "
        "file of solution/ (the answer, readable by the agent)"]


def test_honest_task_has_no_warnings(tmp_path):
    for rel in ("count-http-errors", "evoeval/51"):
        assert task_warnings(_imported(tmp_path, rel)) == [], rel


def test_only_the_first_case_runs(tmp_path):
    task = _imported(tmp_path, "aider-cpp/leap")
    assert partial_cases(task) == [
        "tests/leap_test.cpp: runs 1 of 4 cases (the others are inside #if "
        "EXERCISM_RUN_ALL_TESTS, which nothing in tests/ or environment/ defines)"]
    # the twin: a build that defines it runs them all
    sh = task.tests_dir / "test.sh"
    sh.write_text(sh.read_text().replace("g++ -std=c++17", "g++ -DEXERCISM_RUN_ALL_TESTS "
                                                          "-std=c++17"))
    assert partial_cases(task) == []


def test_skipped_pytest_cases(tmp_path):
    task = _imported(tmp_path, "evoeval/26")
    t = task.tests_dir / "test_outputs.py"
    t.write_text(t.read_text() + "\n\n@pytest.mark.skip\ndef test_more():\n    pass\n"
                 "\n\n@pytest.mark.skipif(True, reason='x')\ndef test_other():\n    pass\n")
    assert partial_cases(task) == ["tests/test_outputs.py: 1 of 3 test functions are marked skip"]


def test_import_warnings_come_back_in_check(tmp_path):
    task = _imported(tmp_path, "envs-activate")
    w = task_warnings(task)
    assert len(w) == 4 and all(x.startswith("import: run-tests.sh line ") for x in w)


def test_dockerfile_copies_parsing(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        "FROM x AS b\nCOPY --chown=1:1 a.txt \\\n   b/ /app/\nCOPY --from=b /x /y\n"
        'ADD ["c d.txt", "/app/"]\nADD https://e.org/f.tgz /tmp/\ncopy *.py /app/\n')
    got = [(c.line, c.sources) for c in dockerfile_copies(tmp_path / "Dockerfile")]
    assert got == [(2, ["a.txt", "b/"]), (5, ["c d.txt"]), (7, ["*.py"])]
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "k.py").write_text("")
    assert missing_copies(tmp_path) == [
        "environment/Dockerfile line 2: COPY b/: environment/b/ does not exist, so the image "
        "build fails",
        "environment/Dockerfile line 5: COPY c d.txt: environment/c d.txt does not exist, so "
        "the image build fails"]


def test_warnings_are_printed_and_do_not_fail(tmp_path):
    out = io.StringIO()
    check = TaskCheck(path=tmp_path, name="t", warnings=["tests/x.cpp: runs 1 of 4 cases"])
    render([check], Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "⚠ t: tests/x.cpp: runs 1 of 4 cases" in text
    assert "1/1 task(s) passed with 1 warning(s)" in text
