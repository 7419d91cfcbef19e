"""Where the sandboxes run is one setting: checked when it is read, carried from the command
line and configs to the backend, and never mistaken for a rollout setting."""

from __future__ import annotations

import pytest

from termcredit.bench.protocol import _train_config, bench_config
from termcredit.cli import build_parser
from termcredit.harness.backend import BackendSettings
from termcredit.harness.run import RunConfig, resume_config, write_config
from termcredit.trainer.config import ConfigError, load_config


def test_a_train_config_names_its_backend_in_the_rollout_table(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[rollout]\nmax_turns = 3\nbackend = "ray"\nray_address = "10.0.0.1:6379"\n'
                    'registry = "reg:5000/tc"\n')
    cfg = load_config(path, {})
    assert cfg.rollout_config().max_turns == 3  # the backend keys are not RolloutConfig's
    assert cfg.backend_settings() == BackendSettings("ray", "10.0.0.1:6379", "reg:5000/tc")
    assert load_config(None, {}).backend_settings() == BackendSettings()
    path.write_text('[rollout]\nbackend = "kubernetes"\n')
    with pytest.raises(ConfigError, match=r"c.toml: field 'rollout.backend': must be one of "
                                          r"'local', 'ray', not 'kubernetes'"):
        load_config(path, {})
    path.write_text('[rollout]\nray_address = 6379\n')
    with pytest.raises(ConfigError, match=r"field 'rollout.ray_address': a string, not 6379"):
        load_config(path, {})


def test_backend_flags_on_run_train_and_bench():
    parser = build_parser()
    run = parser.parse_args(["run", "--task", "t", "--backend", "ray", "--ray-address", "h:1",
                             "--registry", "reg/tc"])
    assert (run.backend, run.ray_address, run.registry) == ("ray", "h:1", "reg/tc")
    assert parser.parse_args(["run", "--task", "t"]).backend == "local"
    assert parser.parse_args(["train"]).backend is None  # the config decides
    assert parser.parse_args(["bench", "--backend", "ray"]).backend == "ray"
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--task", "t", "--backend", "k8s"])


def test_bench_runs_carry_the_backend_into_each_train_config():
    cfg = bench_config("micro", backend="ray", ray_address="h:1")
    tcfg = _train_config(cfg, "grpo", 0, "start", None)
    assert tcfg.backend_settings() == BackendSettings("ray", "h:1")
    assert tcfg.rollout_config().max_turns == 2  # the tier's rollout settings kept
    local = _train_config(bench_config("micro"), "grpo", 0, "start", None)
    assert "backend" not in local.rollout  # configs of local runs as they were


def test_a_resumed_run_keeps_its_backend_unless_told_otherwise(tmp_path):
    from pathlib import Path

    from termcredit.tasks import load_task

    hello = load_task(Path(__file__).resolve().parents[2] / "tasks" / "hello-world")
    write_config(RunConfig(tasks=[hello], backend="ray", registry="reg/tc"), tmp_path, "r-1")
    text = (tmp_path / "config.toml").read_text()
    assert 'backend = "ray"' in text and 'registry = "reg/tc"' in text
    again = resume_config(tmp_path, RunConfig(tasks=[], ray_address="h:1"))
    assert (again.backend, again.ray_address, again.registry) == ("ray", "h:1", "reg/tc")
    assert "backend" not in again.extra
    write_config(RunConfig(tasks=[hello]), tmp_path, "r-2")
    assert "backend" not in (tmp_path / "config.toml").read_text()  # local: as before
    assert resume_config(tmp_path).backend == "local"


def test_an_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="backend must be one of local, ray, not 'k8s'"):
        BackendSettings("k8s")
