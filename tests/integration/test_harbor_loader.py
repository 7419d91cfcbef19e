"""Harbor's own loader as the judge of "Harbor format": ``harbor.models.task.task.Task`` (PyPI
harbor 0.26.0, Python >= 3.12) loads every built-in task, every task `tasks import` makes of
the Terminal-Bench-1 fixtures and what `tasks new` writes, reads the values termcredit reads,
and loads a task.toml that carries termcredit's own keys (it ignores them).

Harbor runs in its own image, FROM the trixie base (Python 3.13) with harbor installed from
PyPI at pinned versions (tests/fixtures/harbor-loader/image/), built once and cached by a hash
of its folder like a task image (cold: the trixie base if missing, then about a minute of
pip; warm: seconds). The task folders are mounted read-only; the container has no network.
"""

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from termcredit.tasks import load_task
from termcredit.tasks.harbor_keys import EXTENSIONS
from termcredit.tasks.model import known_keys
from termcredit.tasktools.tb_dataset import import_dataset, is_dataset

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
LOADER = REPO / "tests" / "fixtures" / "harbor-loader"
TB1 = REPO / "tests" / "fixtures" / "tb1"
# Harbor's own older spellings that its validators fold into other fields (memory ->
# memory_mb, version -> schema_version): known to termcredit, absent from Harbor's schema
HARBOR_LEGACY = {("", "version"), ("environment", "memory"), ("environment", "storage")}
# TB1 fixtures that are broken on purpose (import refuses them, naming the field)
NOT_IMPORTABLE = {"evoeval/7"}


@pytest.fixture(scope="module")
def harbor_image(client, base_ref) -> str:
    from termcredit.sandbox import build_task_image

    return build_task_image(client, LOADER / "image", "harbor-loader", base_ref=base_ref)


def harbor_load(client: Any, image: str, mounts: dict[str, Path], *args: str) -> dict:
    """Run load.py in the harbor image with each host folder mounted read-only at
    /t/<key>; ``args`` name the folders to load, as the container sees them."""
    volumes = {str(LOADER / "load.py"): {"bind": "/harbor/load.py", "mode": "ro"}}
    volumes |= {str(p): {"bind": f"/t/{key}", "mode": "ro"} for key, p in mounts.items()}
    out = client.containers.run(image, ["python3", "/harbor/load.py", *args], remove=True,
                                network_mode="none", volumes=volumes)
    return json.loads(out)


def assert_loads_as_termcredit_reads_it(result: dict, host: Path) -> None:
    assert result["ok"], f"{host}: Harbor refused it: {result['error']}"
    ours = load_task(host, lenient=True)
    assert result["name"] == ours.name, host
    for dotted, harbor_value in result["values"].items():
        if harbor_value is None:  # unset in Harbor; termcredit has its own default
            continue
        attr = {"agent.timeout_sec": "agent_timeout_sec",
                "verifier.timeout_sec": "verifier_timeout_sec",
                "environment.build_timeout_sec": "build_timeout_sec"}.get(
                    dotted, dotted.split(".")[1])
        assert getattr(ours, attr) == harbor_value, f"{host}: {dotted}"
    extras = {tuple(k.split(".", 1)) if "." in k else ("", k) for k in result["dropped"]}
    # what Harbor drops is termcredit's own keys, or Harbor's deprecated allow_internet
    # (folded into network_mode with a warning) and older spellings
    assert extras <= set(EXTENSIONS) | HARBOR_LEGACY | {("environment", "allow_internet")}, host


def test_harbor_loads_every_builtin_task(client, harbor_image):
    names = sorted(d.name for d in (REPO / "tasks").iterdir() if (d / "task.toml").is_file())
    assert len(names) >= 30
    results = harbor_load(client, harbor_image, {"builtin": REPO / "tasks"},
                          *(f"/t/builtin/{n}" for n in names))
    assert sorted(results) == [f"/t/builtin/{n}" for n in names]
    for n in names:
        assert_loads_as_termcredit_reads_it(results[f"/t/builtin/{n}"], REPO / "tasks" / n)


def test_harbor_loads_every_imported_tb1_fixture(client, harbor_image, tmp_path):
    out = tmp_path / "imported"
    rows = import_dataset(TB1, out / "tb1")  # the single tasks; the datasets next
    for d in sorted(TB1.iterdir()):
        if is_dataset(d):
            rows += import_dataset(d, out / d.name)
    skipped = {f"{r.source.parent.name}/{r.source.name}" for r in rows
               if r.status == "skipped" and r.why != "no task.yaml"}
    assert skipped == NOT_IMPORTABLE, [r.why for r in rows if r.status == "skipped"]
    made = sorted(str(r.out.relative_to(out)) for r in rows if r.status == "imported")
    fixtures = [y.parent for y in TB1.rglob("task.yaml")]
    assert len(made) == len(fixtures) - len(NOT_IMPORTABLE) and len(made) >= 8, made

    results = harbor_load(client, harbor_image, {"imported": out},
                          *(f"/t/imported/{m}" for m in made))
    assert sorted(results) == [f"/t/imported/{m}" for m in made]
    for m in made:
        assert_loads_as_termcredit_reads_it(results[f"/t/imported/{m}"], out / m)


def test_harbor_loads_what_tasks_new_writes(client, harbor_image, tmp_path):
    from termcredit.tasktools.scaffold import new_task

    made = [new_task("plain", tmp_path / "new"), new_task("seeded", tmp_path / "new",
                                                           parametrized=True)]
    results = harbor_load(client, harbor_image, {"new": tmp_path / "new"},
                          "/t/new/plain", "/t/new/seeded")
    for task in made:
        assert_loads_as_termcredit_reads_it(results[f"/t/new/{task.name}"], task)


def test_termcredit_keys_are_ones_harbor_ignores(client, harbor_image, tmp_path):
    """A task.toml with every termcredit-only key at a value other than its default loads in
    Harbor, which drops exactly those keys; termcredit reads each."""
    task = tmp_path / "ext" / "hello-world"
    shutil.copytree(REPO / "tasks" / "hello-world", task)
    (task / "task.toml").write_text(
        '[task]\nname = "termcredit/hello-world"\n\n[verifier]\ntimeout_sec = 60\n'
        'agent_processes = "kill"\non_suspect = "flag"\n'
        'agent_may_modify = ["/usr/local/lib/python3*/dist-packages/**"]\nlogs_max_mb = 8\n\n'
        '[environment]\nmemory = "1G"\n')
    ours = load_task(task)
    assert (ours.agent_processes, ours.on_suspect, ours.logs_max_mb, ours.memory_mb) == (
        "kill", "flag", 8, 1024)
    assert ours.agent_may_modify == ["/usr/local/lib/python3*/dist-packages/**"]

    result = harbor_load(client, harbor_image, {"ext": task.parent}, "/t/ext/hello-world")
    result = result["/t/ext/hello-world"]
    assert result["ok"], result["error"]
    assert result["dropped"] == ["environment.memory", "verifier.agent_may_modify",
                                 "verifier.agent_processes", "verifier.logs_max_mb",
                                 "verifier.on_suspect"]
    assert result["values"]["environment.memory_mb"] == 1024  # folded, not lost
    assert result["values"]["verifier.timeout_sec"] == 60.0


def test_termcredit_knows_harbors_schema_and_what_it_adds(client, harbor_image):
    """Every key of Harbor's schema is one termcredit's loader knows; what termcredit knows
    beyond it is Harbor's older spellings and its extensions (docs/tasks.md lists them: a unit test
    checks that)."""
    answer = harbor_load(client, harbor_image, {}, "--schema")
    assert answer["harbor"] == "0.26.0"
    harbor = {(s, k) for s, keys in answer["schema"].items() for k in keys}
    ours = known_keys()
    assert harbor - ours == set()
    assert ours - harbor == set(EXTENSIONS) | HARBOR_LEGACY
