"""harness.runner.TrialRunner, the one trial runner, with a recording backend in place of
Docker or Ray: images built once per (task, instance that matters), each trial handed to
`run_trial` with the runner's settings, and the verbs that run trials all take a backend."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from termcredit.cli import build_parser
from termcredit.harness import runner as runner_mod
from termcredit.harness.backend import BackendSettings
from termcredit.harness.hooks import Hooks
from termcredit.harness.runner import RunnerSettings, TrialRunner
from termcredit.records import TrialResult


class RecordingBackend:
    def __init__(self, settings: BackendSettings, run_id: str, ahead: int) -> None:
        self.settings, self.run_id, self.ahead = settings, run_id, ahead
        self.builds: list[tuple[str, int, bool]] = []
        self.pool = SimpleNamespace(planned=[], plan=lambda specs: self.pool.planned.extend(specs))
        self.closed = False

    def gc(self) -> list[str]:
        return ["old"]

    def image(self, task, instance, *, image_map, force=False) -> str:
        self.builds.append((task.name, instance, force))
        return f"img/{task.name}:{instance}"

    def close(self) -> None:
        self.closed = True


def task(name: str, parametrized: bool = False) -> SimpleNamespace:
    return SimpleNamespace(name=name, parametrized=parametrized, cpus=1, memory_mb=512, env={},
                           workdir="/app", network_mode="none", allow_internet=False)


@pytest.fixture
def made(monkeypatch):
    made: list[RecordingBackend] = []

    def make_backend(settings, run_id, *, ahead, log):
        made.append(RecordingBackend(settings, run_id, ahead))
        return made[-1]

    monkeypatch.setattr(runner_mod, "make_backend", make_backend)
    monkeypatch.setattr(runner_mod, "task_spec",
                        lambda t, image, network=None: ("spec", t.name, image, network))
    return made


def test_images_are_built_once_per_task_and_instance_that_matters(made):
    with TrialRunner(RunnerSettings(BackendSettings("local"), concurrency=3, force_build=True),
                     "r-1") as r:
        plain, param = task("plain"), task("param", parametrized=True)
        assert r.image(plain, 5) == r.image(plain, 0) == "img/plain:0"  # same at every instance
        assert r.image(param, 1) == "img/param:1" and r.image(param, 0) == "img/param:0"
        r.image(param, 1)
        assert r.gc() == ["old"]
    backend = made[0]
    assert (backend.run_id, backend.ahead) == ("r-1", 3)
    assert backend.builds == [("plain", 0, True), ("param", 1, True), ("param", 0, True)]
    assert backend.closed


def test_a_trial_gets_the_runners_settings(made, monkeypatch, tmp_path):
    calls = []

    def run_trial(t, agent, pool, spec, trial_dir, **kw):
        calls.append((t.name, agent, spec, trial_dir, kw))
        return TrialResult(task=t.name, reward=1.0, trial_dir=str(trial_dir))

    monkeypatch.setattr(runner_mod, "run_trial", run_trial)
    hooks = Hooks(step=(("s", lambda traj: None),))
    settings = RunnerSettings(BackendSettings("local"), concurrency=1, command_timeout=7.0,
                              network="net", hooks=hooks)
    with TrialRunner(settings, "r-2") as r:
        r.plan([r.spec(task("a"))])
        fut = r.submit(task("a"), "AGENT", tmp_path / "t0", attempt=2, instance=4)
        assert fut.result().reward == 1.0
        assert made[0].pool.planned == [("spec", "a", "img/a:0", "net")]
    assert calls == [("a", "AGENT", ("spec", "a", "img/a:0", "net"), Path(tmp_path / "t0"),
                      {"attempt": 2, "command_timeout": 7.0, "instance": 4, "network": "net",
                       "hooks": hooks})]


@pytest.mark.parametrize("verb", [["refine", "runs/x"], ["credit-audit", "tasks/hello-world"]])
def test_refine_and_credit_audit_take_a_backend(verb):
    parser = build_parser()
    args = parser.parse_args([*verb, "--backend", "ray", "--ray-address", "h:1", "-n", "3"])
    assert (args.backend, args.ray_address, args.concurrency) == ("ray", "h:1", 3)
    assert parser.parse_args(verb).backend == "local"
    help_text = parser._subparsers._group_actions[0].choices[verb[0]].format_help()
    assert "--backend {local,ray}" in help_text and "--ray-address" in help_text
