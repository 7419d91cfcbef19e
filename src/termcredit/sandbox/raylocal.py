"""A throwaway one-node Ray cluster on this machine (tests, benchmarks/ray_overhead.py).

``ray start --head --block`` runs in its own session with its own temp dir and free ports, so it
never joins or disturbs another cluster here; stopping it ends exactly the processes it started
(never ``ray stop``, which ends every Ray process of the machine). Every wait is bounded.

It listens on 127.0.0.1 only, without Ray's token authentication: while it runs,
``RAY_AUTH_MODE=disabled`` is set in this process's environment (so this process and the
drivers it starts agree with the head whatever ``~/.ray/auth_token`` holds).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import psutil


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_cli() -> str:
    here = Path(sys.executable).parent / "ray"
    found = str(here) if here.is_file() else shutil.which("ray")
    if not found:
        raise FileNotFoundError("the `ray` command is missing: pip install 'termcredit[ray]'")
    return found


@contextmanager
def local_cluster(num_cpus: int = 2, *, start_s: float = 120.0,
                  pythonpath: str | None = None) -> Iterator[str]:
    """Yield the address of a fresh head node; stop it (all its processes) on exit."""
    tmp = Path(tempfile.mkdtemp(prefix="tcray-", dir="/tmp"))  # short: Ray's socket paths
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    if pythonpath:  # workers import termcredit from here (a source checkout)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    log = open(tmp / "head.log", "wb")
    proc = subprocess.Popen(
        [_ray_cli(), "start", "--head", "--block", f"--num-cpus={num_cpus}",
         "--include-dashboard=false", "--disable-usage-stats", f"--port={port}",
         "--node-ip-address=127.0.0.1",
         "--object-store-memory=500000000",  # not a share of RAM: small /dev/shm in CI
         f"--ray-client-server-port={free_port()}",
         f"--dashboard-agent-listen-port={free_port()}", f"--temp-dir={tmp}"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    old_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    try:
        deadline = time.monotonic() + start_s
        while b"Ray runtime started" not in (tmp / "head.log").read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ray start failed:\n" + (tmp / "head.log").read_text()[-3000:])
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        if old_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = old_mode
        _stop(proc)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _stop(proc: subprocess.Popen) -> None:
    """End the head and everything it started: SIGTERM to ``ray start --block``, which stops
    its processes in order (a SIGTERM to each at once left gcs_server waiting), a bounded wait,
    then SIGKILL for whatever is left (workers are the raylet's children, in other groups)."""
    try:
        head = psutil.Process(proc.pid)
        procs = [head, *head.children(recursive=True)]
        head.send_signal(signal.SIGTERM)
    except psutil.NoSuchProcess:
        procs = []
    _, alive = psutil.wait_procs(procs, timeout=30)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
