"""A task's declared demonstration commands ([metadata.demos]), read once for the bench and
the oracle estimator: by hand on a task written here, and the bad entries named."""

from __future__ import annotations

import pytest

from termcredit.tasks import load_task
from termcredit.tasks.demos import Insert, declared, has_decoys, inserts, reference_commands

TOML = """schema_version = "1.1"
[task]
name = "t/demo"
[metadata]
{demos}
[verifier]
timeout_sec = 10
[agent]
timeout_sec = 10
"""


def _task(tmp_path, demos: str):
    (tmp_path / "solution").mkdir()
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM termcredit/base\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test.sh").write_text("#!/bin/bash\n")
    (tmp_path / "instruction.md").write_text("do it\n")
    (tmp_path / "solution" / "solve.sh").write_text("#!/bin/bash\ncd /app\nP=$(cat p)\necho $P > q\n")
    (tmp_path / "task.toml").write_text(TOML.format(demos=demos))
    return load_task(tmp_path)


def test_declared_commands_and_references_by_hand(tmp_path) -> None:
    task = _task(tmp_path, '[metadata.demos]\nharmless = [{before = 1, command = "ls"}]\n'
                           'breaking = [{before = 3, command = "unset P"}]')
    assert has_decoys(task)
    assert inserts(task, "breaking") == [Insert(3, "unset P")]
    assert declared(task) == {"harmless": ["ls"], "breaking": ["unset P"]}
    assert reference_commands(task) == ["cd /app", "P=$(cat p)", "echo $P > q", "ls", "unset P"]


def test_a_task_without_demos_has_its_solution_as_references(tmp_path) -> None:
    task = _task(tmp_path, "")
    assert not has_decoys(task)
    assert reference_commands(task) == ["cd /app", "P=$(cat p)", "echo $P > q"]


@pytest.mark.parametrize("entry, said", [
    ('{before = 4, command = "ls"}', "before = 4 is outside 0..3"),
    ('{command = "ls"}', "each entry is {before = N"),
    ('"ls"', "each entry is {before = N"),
])
def test_a_bad_entry_is_named(tmp_path, entry: str, said: str) -> None:
    task = _task(tmp_path, f"[metadata.demos]\nharmless = [{entry}]")
    with pytest.raises(ValueError, match="task.toml: \\[metadata.demos\\] harmless") as exc:
        reference_commands(task)
    assert said in str(exc.value)
