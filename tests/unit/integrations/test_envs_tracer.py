"""An engine's environments are traced by the backend its config names, resolved as
`termcredit run` resolves `--tracer` (#33): auto, ebpf or strace; anything else is an error
that names the setting."""

from __future__ import annotations

import pytest

from termcredit.integrations import base
from termcredit.tracer.choice import AUTO_ENV


@pytest.fixture
def made(monkeypatch):
    """The HarnessEnvs envs_for would make, as the keywords it was given (no Docker)."""
    got: list[dict] = []
    monkeypatch.setattr(base, "HarnessEnvs", lambda **kw: got.append(kw) or kw)
    monkeypatch.setattr(base, "_POOLS", {})
    return got


def test_the_configs_tracer_reaches_the_sandboxes(made) -> None:
    envs = base.envs_for({"run_id": "r1", "tracer": "strace"}, "trl")
    assert envs["tracer"] == "strace" and envs["run_id"] == "r1"


def test_auto_is_resolved_not_passed_on(made, monkeypatch) -> None:
    monkeypatch.setenv(AUTO_ENV, "strace")  # auto as strace, whatever this host can do
    assert base.envs_for({"run_id": "r2"}, "verl")["tracer"] == "strace"


def test_an_unknown_tracer_is_an_error_naming_it(made) -> None:
    with pytest.raises(ValueError, match="tracer: must be one of 'auto', 'ebpf', 'strace'"):
        base.envs_for({"run_id": "r3", "tracer": "ptrace"}, "skyrl")
    assert made == []
