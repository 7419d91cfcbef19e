"""A persistent bash in a sandbox's container, traced from the host by the eBPF backend.

For ``tracer_overhead.py --backends ...,ebpf``: the product's shell runs under strace inside
the container; this one is a plain ``docker exec -i`` bash whose host pid the eBPF tracer
follows (it and every descendant), so one container times both backends and untraced runs.
The bash is found by a token in its argv[0] (``exec -a``): the docker CLI's pid is not it.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time

from termcredit.tracer.ebpf import EbpfResult, EbpfTracer

DONE = "__tc_bench_done__"


def _find_pid(token: str, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[0] == token.encode():
                        return int(name)
            except OSError:
                continue
        time.sleep(0.05)
    raise RuntimeError(f"no process named {token} appeared")


class EbpfShell:
    """``run(script)`` feeds one line of script to the traced bash and returns its stdout."""

    def __init__(self, container_id: str) -> None:
        token = f"tcbench-{secrets.token_hex(6)}"
        self.proc = subprocess.Popen(
            ["docker", "exec", "-i", container_id, "bash", "-c", f"exec -a {token} bash --norc"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.pid = _find_pid(token)
        self.tracer = EbpfTracer(self.pid)
        self.tracer.start()

    def run(self, script: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{script}\necho {DONE}\n".encode())
        self.proc.stdin.flush()
        out = []
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace")
            if line.strip() == DONE:
                return "".join(out)
            out.append(line)
        raise RuntimeError("the traced bash ended")

    def close(self) -> EbpfResult:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.tracer.stop()
