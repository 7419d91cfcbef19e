"""The pool pre-starts only `ahead` sandboxes, hands out fresh ones, and cleans up."""

import time

import pytest

from termcredit.sandbox import SandboxPool, SandboxSpec

pytestmark = pytest.mark.docker


def count(client, run_id):
    return len(client.containers.list(all=True, filters={"label": f"termcredit.run={run_id}"}))


def test_pool_prestarts_ahead_and_cleans_up(client, base_ref, run_id):
    spec_a = SandboxSpec(image=base_ref)
    spec_b = SandboxSpec(image=base_ref, memory_mb=256)
    pool = SandboxPool(client, run_id, ahead=2)
    try:
        pool.plan([spec_a, spec_b, spec_a, spec_b, spec_a])
        deadline = time.time() + 60
        while time.time() < deadline and not (pool.warm(spec_a) and pool.warm(spec_b)):
            time.sleep(0.1)
        assert pool.warm(spec_a) and pool.warm(spec_b)
        assert count(client, run_id) == 2  # not 5: only the head of the plan is started

        first = pool.acquire(spec_a)
        first.run("echo dirty > /tmp/state")
        pool.release(first)
        second = pool.acquire(spec_a)
        assert second.id != first.id
        assert second.run("cat /tmp/state").exit_code != 0  # a fresh container, not reused
        assert second.container.attrs["HostConfig"]["Memory"] == 2048 * 1024 * 1024
        b = pool.acquire(spec_b)
        assert b.container.attrs["HostConfig"]["Memory"] == 256 * 1024 * 1024
        pool.release(second)
        pool.release(b)
    finally:
        pool.close()
    assert count(client, run_id) == 0
