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


# ------------------------------------------------------------------ strict keys and ranges


def load_error(tmp_path: Path, toml: str) -> TaskError:
    root = make_task(tmp_path / "bad", toml)
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert str(err.value).startswith(f"{root / 'task.toml'}: field '{err.value.field}': ")
    return err.value


@pytest.mark.parametrize(
    ("toml", "field", "message"),
    [
        ("[agent]\ntimout_sec = 5\n", "agent.timout_sec",
         "unknown key 'timout_sec' in [agent]; did you mean 'timeout_sec'?"),
        ("[environmnet]\ncpus = 1\n", "environmnet",
         "unknown section [environmnet]; did you mean [environment]?"),
        ('[task]\nnmae = "x"\n', "task.nmae", "unknown key 'nmae' in [task]; did you mean 'name'?"),
        ("[verifier]\ntimeout = 5\n", "verifier.timeout",
         "unknown key 'timeout' in [verifier]; did you mean 'timeout_sec'?"),
        ("[environment]\nmemroy_mb = 512\n", "environment.memroy_mb",
         "unknown key 'memroy_mb' in [environment]; did you mean 'memory_mb'?"),
        ("[environment]\nmemory = 512\n", "environment.memory",
         'must be a size such as "512M" or "2G" (or environment.memory_mb = a number of MiB), '
         "got int 512"),
        ("[environment]\nallow_internt = true\n", "environment.allow_internt",
         "unknown key 'allow_internt' in [environment]; did you mean 'allow_internet'?"),
        ("[environment]\nmcp_server = []\n", "environment.mcp_server",
         "unknown key 'mcp_server' in [environment]; did you mean 'mcp_servers'?"),
        ('[solution]\nenvs = { A = "1" }\n', "solution.envs",
         "unknown key 'envs' in [solution]; did you mean 'env'?"),
        ("[agent]\nmemory_mb = 512\n", "agent.memory_mb",
         "unknown key 'memory_mb' in [agent]; it belongs in [environment]"),
        ("[verifier]\nfoo = 1\n", "verifier.foo",
         "unknown key 'foo' in [verifier]; valid keys: timeout_sec, env, agent_processes, "
         "on_suspect, agent_may_modify, logs_max_mb, network_mode, allowed_hosts, user, "
         "environment_mode, environment, collect"),
        ("[environment.limits]\ncpus = 1\n", "environment.limits",
         "unknown key 'limits' in [environment]; valid keys: build_timeout_sec, cpus, memory_mb, "
         "storage_mb, memory, storage, docker_image, workdir, env, network_mode, allowed_hosts, "
         "allow_internet, os, gpus, gpu_types, tpu, mcp_servers, skills_dir, healthcheck"),
        ('schema_verison = "1.1"\n', "schema_verison",
         "unknown top-level key 'schema_verison'; did you mean 'schema_version'?"),
        ("timeout_sec = 5\n", "timeout_sec",
         "unknown top-level key 'timeout_sec'; it belongs in [agent] or [verifier]"),
        ("[extras]\nx = 1\n", "extras",
         "unknown section [extras]; valid sections: [task], [agent], [verifier], [environment], "
         "[solution], [metadata]; top-level keys: schema_version, version, source, "
         "multi_step_reward_strategy, steps, artifacts"),
        ('[task]\nkeywords = "a, b"\n', "task.keywords", "must be a list, got str 'a, b'"),
        ("[task]\nkeywords = [1]\n", "task.keywords", "must be a list of strings"),
    ],
)
def test_unknown_key_names_file_key_and_nearest(tmp_path, toml, field, message):
    err = load_error(tmp_path, toml)
    assert err.field == field
    assert str(err).endswith(f": field '{field}': {message}")


def test_free_form_and_harbor_keys_load(tmp_path):
    task = load_task(make_task(tmp_path / "t", (
        'schema_version = "1.1"\nversion = "2"\n'
        '[task]\nname = "org/t"\ndescription = "d"\nauthors = [{ name = "A", email = "a@b" }]\n'
        'keywords = ["x"]\n'
        '[metadata]\nanything = { nested = [1, 2] }\nexpert_time_estimate_min = 3\n'
        '[environment]\ngpus = 0\nenv = { ANY_NAME = "v" }\n[solution]\nenv = { K = "v" }\n')))
    assert task.name == "t" and task.metadata["anything"] == {"nested": [1, 2]}
    assert task.env == {"ANY_NAME": "v"} and task.solution_env == {"K": "v"}


@pytest.mark.parametrize(
    ("toml", "field", "message"),
    [
        ("[verifier]\ntimeout_sec = 1e30\n", "verifier.timeout_sec",
         "must be greater than 0 and at most 86400 (seconds), got 1e+30"),
        ("[agent]\ntimeout_sec = 86401\n", "agent.timeout_sec",
         "must be greater than 0 and at most 86400 (seconds), got 86401"),
        ("[agent]\ntimeout_sec = inf\n", "agent.timeout_sec", "must be a finite number, got inf"),
        ("[verifier]\ntimeout_sec = nan\n", "verifier.timeout_sec",
         "must be a finite number, got nan"),
        ("[environment]\nbuild_timeout_sec = -inf\n", "environment.build_timeout_sec",
         "must be a finite number, got -inf"),
        ("[environment]\nbuild_timeout_sec = 0.0\n", "environment.build_timeout_sec",
         "must be greater than 0 and at most 86400 (seconds), got 0.0"),
        ("[environment]\ncpus = 65\n", "environment.cpus",
         "must be greater than 0 and at most 64 (CPUs), got 65"),
        ("[environment]\ncpus = 0\n", "environment.cpus",
         "must be greater than 0 and at most 64 (CPUs), got 0"),
        ("[environment]\ncpus = nan\n", "environment.cpus", "must be a finite number, got nan"),
        ("[environment]\nmemory_mb = 15\n", "environment.memory_mb",
         "must be at least 16 and at most 1048576 (MiB), got 15"),
        ("[environment]\nmemory_mb = 1048577\n", "environment.memory_mb",
         "must be at least 16 and at most 1048576 (MiB), got 1048577"),
        ("[environment]\nstorage_mb = 10485761\n", "environment.storage_mb",
         "must be at least 16 and at most 10485760 (MiB), got 10485761"),
        ("[environment]\nstorage_mb = 1e3\n", "environment.storage_mb",
         "must be an integer, got float 1000.0"),
        ('[environment]\nmemory = "1G"\nmemory_mb = 512\n', "environment.memory",
         "says 1024 MiB and memory_mb says 512: keep one of them"),
        ('[environment]\nmemory = "8K"\n', "environment.memory",
         "must be at least 16 and at most 1048576 (MiB), got 0"),
        ('[environment]\nstorage = "lots"\n', "environment.storage",
         'must be a size such as "512M" or "2G", got \'lots\''),
        ('[environment]\nworkdir = "app"\n', "environment.workdir",
         "must be an absolute path, got 'app'"),
    ],
)
def test_numbers_are_range_checked_at_load(tmp_path, toml, field, message):
    err = load_error(tmp_path, toml)
    assert err.field == field
    assert str(err).endswith(f": field '{field}': {message}")


def test_range_edges_load(tmp_path):
    task = load_task(make_task(tmp_path / "t", (
        "[agent]\ntimeout_sec = 86400\n[verifier]\ntimeout_sec = 0.5\n"
        "[environment]\nbuild_timeout_sec = 86400.0\ncpus = 64\nmemory_mb = 16\n"
        "storage_mb = 10485760\nallow_internet = false\n")))
    assert (task.agent_timeout_sec, task.verifier_timeout_sec, task.build_timeout_sec) == (
        86400.0, 0.5, 86400.0)
    assert (task.cpus, task.memory_mb, task.storage_mb, task.allow_internet) == (
        64.0, 16, 10485760, False)
    task = load_task(make_task(tmp_path / "u", "[environment]\ncpus = 0.25\nmemory_mb = 1048576\n"))
    assert (task.cpus, task.memory_mb) == (0.25, 1048576)


def test_every_shipped_task_and_fixture_loads():
    folders = [d for base in (REPO / "tasks", REPO / "tests" / "fixtures" / "tasks")
               for d in sorted(base.iterdir()) if (d / "task.toml").is_file()]
    assert len(folders) > 25
    for folder in folders:
        load_task(folder)
