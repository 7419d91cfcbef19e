"""Harbor's task.toml as Harbor writes it: every key of its schema is known; defaults load
silently; a feature termcredit lacks is one line naming the file, the key and what to do
(an error, or with ``lenient`` a task whose trials a run skips); network keys are permissions.

The fixtures in tests/fixtures/harbor/ are Harbor's own text (the header of each says which
release and how it was made)."""

from pathlib import Path

import pytest

from termcredit.tasks import TaskError, load_task

from test_task_loader import make_task

HARBOR = Path(__file__).resolve().parents[1] / "fixtures" / "harbor"


def harbor_task(tmp_path: Path, fixture: str) -> Path:
    return make_task(tmp_path / "t", (HARBOR / fixture).read_text())


def test_harbor_template_loads(tmp_path):
    task = load_task(harbor_task(tmp_path, "template-0.26.0.toml"))
    assert (task.agent_timeout_sec, task.verifier_timeout_sec, task.build_timeout_sec) == (
        900.0, 900.0, 600.0)
    assert not task.allow_internet and task.unsupported == []


def test_old_harbor_defaults_load_and_permit_network(tmp_path):
    # allow_internet = true, mcp_servers = [], gpus = 0: refused before issue #38
    task = load_task(harbor_task(tmp_path, "defaults-0.1.45.toml"))
    assert (task.cpus, task.memory_mb, task.storage_mb) == (1.0, 2048, 10240)
    assert task.allow_internet and not task.verifier_network
    assert task.unsupported == [] and task.allowed_hosts == []


def test_current_harbor_defaults_load(tmp_path):
    task = load_task(harbor_task(tmp_path, "defaults-0.26.0.toml"))
    assert task.allow_internet  # network_mode = "public", written out
    assert not task.verifier_network and task.unsupported == []
    assert task.verifier_timeout_sec == 600.0 and task.agent_timeout_sec == 600.0


def test_harbor_init_asks_for_a_separate_verifier(tmp_path):
    root = harbor_task(tmp_path, "init-0.26.0.toml")
    line = (f"{root / 'task.toml'}: field 'verifier.environment_mode': not supported by "
            "termcredit: the verifier runs in the agent's container (got 'separate'); remove "
            'the key or set environment_mode = "shared"')
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert str(err.value) == line and err.value.field == "verifier.environment_mode"
    task = load_task(root, lenient=True)
    assert task.unsupported == [line] and task.name == "my-task"


EVERY_KEY_AT_DEFAULT = """\
schema_version = "1.4"
source = "generated"
multi_step_reward_strategy = "mean"
artifacts = []
steps = []
[task]
name = "org/t"
version = "1.0.0"
description = ""
authors = [{ name = "A", email = "a@b.c" }]
keywords = []
[metadata]
[agent]
timeout_sec = 60.0
network_mode = "no-network"
[verifier]
timeout_sec = 60.0
env = {}
environment_mode = "shared"
collect = []
network_mode = "no-network"
[environment]
build_timeout_sec = 60.0
os = "Linux"
cpus = 2
memory = "1G"
storage = "2G"
gpus = 0
gpu_types = []
mcp_servers = []
skills_dir = ""
env = {}
workdir = "/app"
network_mode = "no-network"
allow_internet = true
[solution]
env = {}
"""


def test_every_harbor_key_at_its_default_loads_silently(tmp_path):
    task = load_task(make_task(tmp_path / "t", EVERY_KEY_AT_DEFAULT))
    assert task.unsupported == []
    assert (task.memory_mb, task.storage_mb, task.cpus, task.workdir) == (1024, 2048, 2.0, "/app")
    # network_mode is explicit, so allow_internet is ignored (Harbor's rule)
    assert not task.allow_internet and not task.verifier_network


@pytest.mark.parametrize(("toml", "field", "message"), [
    ("[environment]\ngpus = 1\n", "environment.gpus",
     "the sandbox has no GPUs (got 1); remove the key or set gpus = 0"),
    ('[environment]\ngpu_types = ["H100"]\n', "environment.gpu_types",
     "the sandbox has no GPUs (got ['H100']); remove the key or set gpu_types = []"),
    ('[[environment.mcp_servers]]\nname = "m"\nurl = "http://m/sse"\n',
     "environment.mcp_servers", "MCP servers are not started (got [{'name': 'm', 'url': "
     "'http://m/sse'}]); remove the key or set mcp_servers = []"),
    ('[environment.tpu]\ntype = "v6e"\ntopology = "2x4"\n', "environment.tpu",
     "the sandbox has no TPUs (got {'type': 'v6e', 'topology': '2x4'}); remove the key"),
    ('[environment]\nos = "windows"\n', "environment.os",
     "sandboxes are Linux containers (got 'windows'); remove the key or set os = \"linux\""),
    ('[environment]\nskills_dir = "/skills"\n', "environment.skills_dir",
     "skills are not installed (got '/skills'); remove the key or set skills_dir = \"\""),
    ('[environment.healthcheck]\ncommand = "true"\n', "environment.healthcheck",
     "no healthcheck runs (the image's services are not started) (got {'command': 'true'}); "
     "remove the key"),
    ('[agent]\nuser = "agent"\n', "agent.user",
     "the agent runs as the image's user (got 'agent'); remove the key"),
    ("[verifier]\nuser = 0\n", "verifier.user",
     "the verifier runs as the image's user (got 0); remove the key"),
    ('[verifier.environment]\ndocker_image = "x"\n', "verifier.environment",
     "the verifier runs in the agent's container, not one of its own (got {'docker_image': "
     "'x'}); remove the key"),
    ('[[verifier.collect]]\ncommand = "dump"\n', "verifier.collect",
     "there are no compose services to collect from (got [{'command': 'dump'}]); remove the "
     "key or set collect = []"),
    ("[[steps]]\nname = 'a'\n", "steps",
     "multi-step tasks are not supported (got [{'name': 'a'}]); remove the key or set "
     "steps = []"),
    ('artifacts = ["/app/out.txt"]\n', "artifacts",
     "artifacts are not collected (got ['/app/out.txt']); remove the key or set "
     "artifacts = []"),
])
def test_feature_termcredit_lacks_is_one_line(tmp_path, toml, field, message):
    root = make_task(tmp_path / "t", toml)
    line = f"{root / 'task.toml'}: field '{field}': not supported by termcredit: {message}"
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert str(err.value) == line and err.value.field == field
    assert load_task(root, lenient=True).unsupported == [line]


def test_lenient_load_keeps_every_unsupported_line_and_still_refuses_typos(tmp_path):
    root = make_task(tmp_path / "t", "[environment]\ngpus = 2\nmcp_servers = [{name = 'x'}]\n")
    task = load_task(root, lenient=True)
    assert [line.split("field ")[1].split(":")[0] for line in task.unsupported] == [
        "'environment.gpus'", "'environment.mcp_servers'"]
    typo = make_task(tmp_path / "u", "[environment]\ngpus = 2\ngpu = 1\n")
    with pytest.raises(TaskError, match="unknown key 'gpu' in \\[environment\\]; did you mean "
                       "'gpus'"):
        load_task(typo, lenient=True)


@pytest.mark.parametrize(("toml", "agent", "verifier", "hosts"), [
    ("", False, False, []),  # unstated: nothing permitted (Harbor would say public)
    ("[environment]\nallow_internet = false\n", False, False, []),
    ("[environment]\nallow_internet = true\n", True, False, []),
    ('[environment]\nnetwork_mode = "public"\n', True, False, []),
    ('[environment]\nnetwork_mode = "no-network"\nallow_internet = true\n', False, False, []),
    ('[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n', True, False,
     ["pypi.org"]),
    ('[environment]\nallow_internet = true\n[agent]\nnetwork_mode = "no-network"\n',
     False, False, []),
    ('[agent]\nnetwork_mode = "public"\n', True, False, []),
    # the environment's policy does not reach the verifier; its own section must ask
    ('[environment]\nnetwork_mode = "public"\n[verifier]\nnetwork_mode = "public"\n',
     True, True, []),
    ('[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["x.org"]\n', False, True, []),
])
def test_network_keys_are_permissions(tmp_path, toml, agent, verifier, hosts):
    task = load_task(make_task(tmp_path / "t", toml))
    assert (task.allow_internet, task.verifier_network, task.allowed_hosts) == (
        agent, verifier, hosts)


@pytest.mark.parametrize(("toml", "field", "message"), [
    ('[environment]\nnetwork_mode = "open"\n', "environment.network_mode",
     "must be \"no-network\" or \"public\" or \"allowlist\", got 'open'"),
    ('[agent]\nallowed_hosts = ["a.org"]\n', "agent.allowed_hosts",
     'only valid with network_mode = "allowlist"'),
    ('[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = "a.org"\n',
     "verifier.allowed_hosts", "must be a list of host names, got 'a.org'"),
    ('[environment]\nallow_internet = "yes"\n', "environment.allow_internet",
     "must be true or false, got str 'yes'"),
])
def test_bad_network_key_is_named(tmp_path, toml, field, message):
    root = make_task(tmp_path / "t", toml)
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert str(err.value) == f"{root / 'task.toml'}: field '{field}': {message}"


def test_sandbox_spec_takes_workdir_and_only_a_permitted_grant(tmp_path):
    from termcredit.harness.episode import task_spec
    from termcredit.harness.network import network_info, offline_warning

    open_task = load_task(make_task(tmp_path / "o", '[environment]\nworkdir = "/srv/w"\n'
                                    "allow_internet = true\n"))
    closed = load_task(make_task(tmp_path / "c", "[environment]\nallow_internet = false\n"))
    assert task_spec(open_task, "img", "net1").workdir == "/srv/w"
    assert task_spec(open_task, "img", "net1").network == "net1"
    assert task_spec(open_task, "img").network is None
    assert task_spec(closed, "img", "net1").network is None
    assert task_spec(closed, "img").workdir is None
    assert network_info(open_task, None) == {"network": "permitted, not granted",
                                             "verifier_network": "not permitted"}
    assert network_info(open_task, "net1")["network"] == "granted: net1"
    assert network_info(closed, "net1") == {"network": "not permitted",
                                            "verifier_network": "not permitted"}
    assert offline_warning([open_task, closed, open_task], "net1") is None
    assert offline_warning([closed], None) is None
    assert offline_warning([open_task, closed], None) == (
        "warning: 1 task(s) permit network access (o); this run grants none, so they run "
        "offline (--network NAME grants one)")


def test_termcredit_extensions_are_known_and_honoured(tmp_path):
    """The keys docs/tasks.md calls termcredit's own (harbor_keys.EXTENSIONS) are the ones the loader
    reads beyond Harbor's schema; each, set, changes the task (Harbor ignores them: the
    integration test test_harbor_loader.py loads such a task.toml with Harbor itself)."""
    from termcredit.tasks.harbor_keys import EXTENSIONS
    from termcredit.tasks.model import known_keys

    assert set(EXTENSIONS) == {("verifier", "agent_processes"), ("verifier", "on_suspect"),
                               ("verifier", "agent_may_modify"), ("verifier", "logs_max_mb")}
    assert set(EXTENSIONS) <= known_keys()
    default = load_task(make_task(tmp_path / "d", ""))
    task = load_task(make_task(tmp_path / "e", '[verifier]\nagent_processes = "kill"\n'
                               'on_suspect = "zero"\nagent_may_modify = ["/opt/**"]\n'
                               "logs_max_mb = 2\n"))
    assert (default.agent_processes, default.on_suspect, default.agent_may_modify,
            default.logs_max_mb) == ("keep", None, [], 16)
    assert (task.agent_processes, task.on_suspect, task.agent_may_modify,
            task.logs_max_mb) == ("kill", "zero", ["/opt/**"], 2)
    readme = (Path(__file__).resolve().parents[2] / "docs" / "tasks.md").read_text()
    section = readme[readme.index("termcredit's own keys, extensions Harbor ignores"):]
    section = section[:section.index("\n- **")]
    for _, key in EXTENSIONS:
        assert f"`{key}`" in section, key
