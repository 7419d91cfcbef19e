"""A process's pid on the host from its pid inside a container's PID namespace (#33).

The shared eBPF tracer registers a session by its *host* pid (``HostTracer.follow``), but the
shim, inside the container, only knows the pid its own namespace gives the process. The
kernel lists every pid of a process, outermost namespace first, on the ``NSpid`` line of
``/proc/<pid>/status``; the namespace is named by the inode of ``/proc/<pid>/ns/pid`` (several
containers each have a pid 7: the inode says whose). Runs on the host, in its PID namespace.
"""

from __future__ import annotations

import os


def pidns_of(pid: int, proc: str = "/proc") -> int:
    """The inode that names ``pid``'s PID namespace (``pid`` as this process sees it)."""
    return os.stat(f"{proc}/{pid}/ns/pid").st_ino


def host_pid(pidns: int, inner: int, proc: str = "/proc") -> int | None:
    """The pid (in this process's namespace) of the process that is ``inner`` in PID namespace
    ``pidns`` (an inode, see ``pidns_of``); None when there is none (it exited, or never was)."""
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"{proc}/{name}/ns/pid").st_ino != pidns:
                continue
            with open(f"{proc}/{name}/status", "rb") as f:
                nspid = next((line for line in f if line.startswith(b"NSpid:")), b"")
        except OSError:  # exited meanwhile, or not ours to read
            continue
        pids = nspid.split()[1:]
        if pids and int(pids[-1]) == inner:  # the last: its pid in its own namespace
            return int(name)
    return None
