"""Shared fixtures. Integration tests use the real Docker engine; a missing engine is a test
failure, never a skip (CI has one: `make test` bootstraps it)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Tests that name no tracer run under strace, as before eBPF was wired (each process would
# otherwise pay the host tracer's 15-60 s start): the eBPF path has its own tests, which name
# it (tests/integration/test_ebpf_sandbox.py, test_ebpf_oracles.py). Subprocesses inherit it.
os.environ.setdefault("TERMCREDIT_AUTO_TRACER", "strace")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def client():
    from termcredit.sandbox import docker_client

    return docker_client()


@pytest.fixture(scope="session")
def base_ref(client) -> str:
    from termcredit.sandbox import ensure_base_image

    return ensure_base_image(client)


@pytest.fixture(scope="session")
def hello_image(client, base_ref) -> str:
    from termcredit.sandbox import build_task_image
    from termcredit.tasks import load_task

    task = load_task(REPO / "tasks" / "hello-world")
    return build_task_image(client, task.environment_dir, task.name, base_ref=base_ref)


@pytest.fixture
def run_id() -> str:
    return f"pytest-{secrets.token_hex(4)}"


@pytest.fixture
def sandbox(client, base_ref, run_id):
    """A fresh sandbox on the base image, removed afterwards."""
    from termcredit.sandbox import Sandbox, SandboxSpec, gc

    made = []

    def make(image: str | None = None, **kw):
        sb = Sandbox(client, SandboxSpec(image=image or base_ref, **kw), run_id)
        made.append(sb)
        return sb

    yield make
    for sb in made:
        sb.remove()
    gc(client, run_id=run_id)
