"""A sandbox driven through a host (the Ray backend's two halves, in one process, real Docker,
no Ray): the same trial as a local sandbox's, and nothing left behind when the host closes."""

from __future__ import annotations

from pathlib import Path

import pytest
from trial_compare import differences, trial_facts

from termcredit.depgpo.trial_hook import default_hooks  # graph.json, as `termcredit run` passes it
from termcredit.harness.agents import OracleAgent, ReplayAgent
from termcredit.harness.trial import run_trial, task_spec
from termcredit.sandbox import SandboxPool
from termcredit.sandbox.host_actor import HostActor
from termcredit.sandbox.remote import RemoteSandbox, local_call
from termcredit.tasks import load_task
from termcredit.tasks.build import build_image

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]


class HostPool:
    """The smallest pool over one in-process host (raypool.RayPool does this over actors)."""

    def __init__(self, host: HostActor):
        self.call = local_call(host)

    def acquire(self, spec, timeout=None):
        return RemoteSandbox(self.call, spec, self.call("acquire", spec, timeout))

    def release(self, box):
        self.call("release", box.id)


def containers(client, run_id):
    return client.containers.list(all=True, filters={"label": f"termcredit.run={run_id}"})


@pytest.mark.parametrize("task_name,agent", [
    ("hello-world", "oracle"),  # put_dir of the solution, one step, the verifier
    ("tests/fixtures/tasks/chain-answer", "replay"),  # several steps, files hashed after each
])
def test_a_trial_through_a_host_equals_the_local_one(client, base_ref, run_id, tmp_path,
                                                     task_name, agent):
    task = load_task(REPO / task_name if "/" in task_name else REPO / "tasks" / task_name)
    image = build_image(client, task, base_ref=base_ref)
    replay = tmp_path / "cmds.txt"
    replay.write_text("cd /app\nsort -t, -k2 -n data.csv | tail -n 1 > best.txt\n"
                      "cut -d, -f1 best.txt > answer.txt\ncat answer.txt\n")

    def make_agent():
        return OracleAgent() if agent == "oracle" else ReplayAgent(replay)

    local = SandboxPool(client, run_id, ahead=1)
    try:
        mine = run_trial(task, make_agent(), local, task_spec(task, image), tmp_path / "local",
                         hooks=default_hooks())
    finally:
        local.close()
    host = HostActor(run_id, ahead=1)
    try:
        theirs = run_trial(task, make_agent(), HostPool(host), task_spec(task, image),
                           tmp_path / "host", hooks=default_hooks())
        assert containers(client, run_id)  # the used one is removed in the background
    finally:
        assert host.close() == {"ok": None}
    assert not containers(client, run_id)
    assert mine.error is None and theirs.error is None
    assert mine.reward == theirs.reward == 1.0 and mine.n_steps == theirs.n_steps >= 1
    assert differences(trial_facts(tmp_path / "local"), trial_facts(tmp_path / "host")) == []


def test_a_host_answers_for_a_sandbox_until_it_is_removed(client, base_ref, run_id, tmp_path):
    from termcredit.sandbox import SandboxSpec

    host = HostActor(run_id, ahead=0)
    call = local_call(host)
    try:
        box = RemoteSandbox(call, SandboxSpec(image=base_ref), call("acquire",
                            SandboxSpec(image=base_ref), 60))
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "f.txt").write_text("x" * 5000)
        box.put_dir(tmp_path / "d", "/data")
        rec = box.run("cat /data/f.txt | wc -c; mkdir /made && echo hi > /made/new")
        assert rec.stdout == "5000\n" and rec.exit_code == 0
        assert {"/made", "/made/new", "/data/f.txt"} <= box.added_paths()
        assert box.api_diff()["/made/new"] == 1 and box.writable_bytes() >= 5000
        [state] = box.shell.snapshot(["/made/new"])
        assert state.content == "hi\n" and state.kind == "file"
        box.remove()
        with pytest.raises(Exception, match="closed"):
            box.run("true")
        from termcredit.sandbox import EngineError

        with pytest.raises(EngineError, match="no sandbox"):
            call("diff", box.id)
    finally:
        host.close()
    assert not containers(client, run_id)
