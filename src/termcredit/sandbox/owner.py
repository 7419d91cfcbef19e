"""Container ownership labels and garbage collection of what dead runs left behind.

Every container carries ``termcredit.run=<run id>`` and ``termcredit.owner=<host>:<pid>:<start>``
(start = the owner's start time in clock ticks, so a recycled pid is not mistaken for the owner).
"""

from __future__ import annotations

import os
import socket
from typing import Any

import psutil

LABEL_RUN = "termcredit.run"
LABEL_OWNER = "termcredit.owner"


def _start_time(pid: int) -> str | None:
    """When ``pid`` started, in clock ticks since boot (the kernel's own count, so a step of
    the wall clock does not change it); None: no such process."""
    try:
        since_boot = psutil.Process(pid).create_time() - psutil.boot_time()
    except (psutil.Error, ValueError):  # gone, not ours to see, or not a valid pid
        return None
    return str(round(since_boot * os.sysconf("SC_CLK_TCK")))


def owner_token(pid: int | None = None) -> str:
    pid = pid or os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def owner_alive(token: str) -> bool:
    """True unless the token names a process of this host that is gone (or was recycled)."""
    try:
        host, pid, start = token.rsplit(":", 2)
    except ValueError:
        return False  # a malformed label cannot belong to a live run of ours
    if host != socket.gethostname():
        return True  # another host shares the engine: not ours to judge
    return _start_time(int(pid)) == start


def gc(client: Any, *, run_id: str | None = None, everything: bool = False) -> list[str]:
    """Remove termcredit containers whose owner is dead (or those of ``run_id``, or all)."""
    flt = {"label": f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN}
    removed = []
    # ignore_removed: another run may remove a container between the listing and its inspect
    for c in client.containers.list(all=True, filters=flt, ignore_removed=True):
        token = c.labels.get(LABEL_OWNER, "")
        if everything or run_id or not owner_alive(token):
            try:
                c.remove(force=True)
                removed.append(c.name)
            except Exception:  # raced with another gc or the owner's own cleanup
                pass
    return removed
