"""The Harbor task loader: valid tasks load; malformed ones name the file and the field."""

from pathlib import Path

import pytest

from termcredit.tasks import TaskError, find_tasks, load_task

REPO = Path(__file__).resolve().parents[2]


def make_task(root: Path, toml: str, *, instruction: str = "Do it.", dockerfile: bool = True,
              test_sh: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(toml)
    if instruction is not None:
        (root / "instruction.md").write_text(instruction)
    if dockerfile:
        (root / "environment").mkdir(exist_ok=True)
        (root / "environment" / "Dockerfile").write_text("FROM termcredit/base\n")
    if test_sh:
        (root / "tests").mkdir(exist_ok=True)
        (root / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    return root


def test_builtin_hello_world_loads():
    task = load_task(REPO / "tasks" / "hello-world")
    assert task.name == "hello-world"
    assert task.agent_timeout_sec == 120.0 and task.verifier_timeout_sec == 60.0
    assert task.memory_mb == 512 and task.cpus == 1.0
    assert task.has_solution
    assert "/app/hello.txt" in task.instruction


def test_defaults_follow_harbor(tmp_path):
    task = load_task(make_task(tmp_path / "t", ""))
    assert (task.agent_timeout_sec, task.verifier_timeout_sec) == (600.0, 600.0)
    assert (task.cpus, task.memory_mb) == (1.0, 2048)
    assert task.name == "t"


def test_org_prefixed_name_uses_last_part(tmp_path):
    task = load_task(make_task(tmp_path / "x", '[task]\nname = "org/my-task"\n'))
    assert task.name == "my-task"


@pytest.mark.parametrize(
    ("toml", "field", "words"),
    [
        ('[agent]\ntimeout_sec = "ten"\n', "agent.timeout_sec", "must be"),
        ("[agent]\ntimeout_sec = -1\n", "agent.timeout_sec", "greater than 0"),
        ("[verifier]\ntimeout_sec = 0\n", "verifier.timeout_sec", "greater than 0"),
        ("[environment]\nmemory_mb = 1.5\n", "environment.memory_mb", "integer"),
        ('[environment]\ncpus = "two"\n', "environment.cpus", "number"),
        ('[environment]\nallow_internet = "no"\n', "environment.allow_internet", "true or false"),
        ("[environment]\nmemory_mb = true\n", "environment.memory_mb", "integer"),
        ("[verifier]\nenv = { A = [1] }\n", "verifier.env.A", "string"),
        ('[task]\nname = ""\n', "task.name", "non-empty"),
        ("agent = 3\n", "agent", "table"),
    ],
)
def test_bad_field_is_named(tmp_path, toml, field, words):
    root = make_task(tmp_path / "bad", toml)
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert err.value.field == field
    assert str(root / "task.toml") in str(err.value)
    assert f"'{field}'" in str(err.value) and words in str(err.value)


def test_invalid_toml_names_file(tmp_path):
    root = make_task(tmp_path / "bad", "[agent\ntimeout_sec = 1\n")
    with pytest.raises(TaskError, match=r"task\.toml: not valid TOML"):
        load_task(root)


@pytest.mark.parametrize(
    ("kwargs", "missing"),
    [
        ({"instruction": None}, "instruction.md"),
        ({"instruction": "  \n"}, "instruction.md"),
        ({"dockerfile": False}, "environment/Dockerfile"),
        ({"test_sh": False}, "tests/test.sh"),
    ],
)
def test_missing_files_are_named(tmp_path, kwargs, missing):
    root = make_task(tmp_path / "t", "", **kwargs)
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert str(err.value).startswith(str(root / missing))


def test_docker_image_replaces_dockerfile(tmp_path):
    root = make_task(tmp_path / "t", '[environment]\ndocker_image = "x/y:1"\n', dockerfile=False)
    assert load_task(root).docker_image == "x/y:1"


def test_find_tasks_folder_of_tasks(tmp_path):
    make_task(tmp_path / "a", "")
    make_task(tmp_path / "b", "")
    (tmp_path / "notes").mkdir()
    assert [t.name for t in find_tasks([tmp_path])] == ["a", "b"]
    with pytest.raises(TaskError, match="no task.toml"):
        find_tasks([tmp_path / "notes"])
