"""Container owner tokens: ``host:pid:start``, where start tells a recycled pid from the owner."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from termcredit.sandbox.owner import owner_alive, owner_token


def proc_stat_start(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return stat[stat.rindex(b")") + 2 :].split()[19].decode()


def test_a_live_owner_is_alive_and_a_recycled_pid_is_not():
    token = owner_token()
    host, pid, start = token.rsplit(":", 2)
    assert (host, int(pid)) == (socket.gethostname(), os.getpid())
    assert owner_alive(token)
    assert not owner_alive(f"{host}:{pid}:{int(start) + 1}")  # same pid, another process


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_the_start_is_the_kernels_tick_count():
    # tokens written before (by a hand-parsed /proc/<pid>/stat) must still match
    assert owner_token().rsplit(":", 1)[1] == proc_stat_start(os.getpid())
    assert owner_token(1).rsplit(":", 1)[1] == proc_stat_start(1)


def test_a_dead_owner_is_not_alive_and_other_hosts_are_not_ours_to_judge():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    token = owner_token(child.pid)
    child.wait()
    assert not owner_alive(token)
    assert owner_alive("some-other-host:1:1")
    assert not owner_alive("no-colons")
    assert not owner_alive(f"{socket.gethostname()}:-1:1")
