"""host_pid against real PID namespaces (#33): two namespaces each have a pid 1 and a pid 2;
the namespace's inode says which is which. Needs root (unshare --pid)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from termcredit.sandbox.hostpid import host_pid, pidns_of

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="unshare --pid needs root")


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def _namespace() -> tuple[subprocess.Popen[bytes], int, int]:
    """unshare, its child (pid 1 inside: a shell) and that shell's child (pid 2: a sleep)."""
    proc = subprocess.Popen(["unshare", "--pid", "--fork", "sh", "-c", "sleep 60; true"])
    deadline = time.monotonic() + 10
    while True:
        kids = _children(proc.pid)
        grandkids = _children(kids[0]) if kids else []
        if grandkids:
            return proc, kids[0], grandkids[0]
        assert time.monotonic() < deadline, "the namespace's processes did not start"
        time.sleep(0.02)


def test_each_namespace_maps_its_own_pids_to_the_host() -> None:
    (a, a1, a2), (b, b1, b2) = _namespace(), _namespace()
    try:
        ns_a, ns_b = pidns_of(a1), pidns_of(b1)
        assert ns_a != ns_b and pidns_of(a2) == ns_a
        assert (host_pid(ns_a, 1), host_pid(ns_a, 2)) == (a1, a2)
        assert (host_pid(ns_b, 1), host_pid(ns_b, 2)) == (b1, b2)
        assert host_pid(ns_a, 3) is None  # no pid 3 there
        # this process, in the host's namespace, is found by its own pid
        assert host_pid(pidns_of(os.getpid()), os.getpid()) == os.getpid()
    finally:
        for p in (a, b):
            p.kill()
            p.wait()
        for pid in (a1, a2, b1, b2):  # unshare's children die with it (pid 1 killed: all)
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
