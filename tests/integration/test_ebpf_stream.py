"""A session's lines stream from the real shared tracer while it runs (#33): each step's lines,
up to its end marker, come before the next step starts, as the shim needs them to cut steps.
Skipped where eBPF is not."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from termcredit.tracer.ebpf import available
from termcredit.tracer.ebpf_host import host_tracer, stop_host_tracer
from termcredit.tracer.session import summarize_segment

WHY = available()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"eBPF backend unavailable: {WHY}")


def _until(trace_lines, want: str, timeout: float = 30.0) -> list[str]:  # type: ignore[no-untyped-def]
    """Lines polled from the session until one holds ``want``."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while not any(want in line for line in got):
        assert time.monotonic() < deadline, f"no {want!r} in {got[-5:]}"
        got += trace_lines()
        time.sleep(0.05)
    return got


def test_each_step_streams_up_to_its_end_marker_while_the_shell_runs(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    for step in (1, 2):
        (marks / f"s{step}").mkdir(parents=True)
        (marks / f"e{step}").mkdir()
    shell = subprocess.Popen(["bash"], stdin=subprocess.PIPE)  # waits on its first command
    assert shell.stdin is not None
    try:
        tracer = host_tracer()
        trace = tracer.follow(shell.pid, "agent")
        assert host_tracer() is tracer  # started once: the next session's call reuses it
        pending: list[str] = []
        for step in (1, 2):
            shell.stdin.write(f"cd {marks}/s{step}; echo {step} > {tmp_path}/f{step}; "
                              f"cd {marks}/e{step}\n".encode())
            shell.stdin.flush()
            pending += _until(trace.lines, f'chdir("{marks}/e{step}")')
            end = next(i for i, line in enumerate(pending) if f"{marks}/e{step}" in line)
            start = next(i for i, line in enumerate(pending) if f"{marks}/s{step}" in line)
            step_text = "".join(line + "\n" for line in pending[start + 1 : end])
            pending = pending[end + 1 :]
            # the shell still runs: the step's write came before its end marker, not at close
            assert shell.poll() is None
            assert summarize_segment(step_text).written == {f"{tmp_path}/f{step}"}
        shell.stdin.close()
        assert shell.wait(timeout=30) == 0
        rest = trace.close(timeout=30)
    finally:
        stop_host_tracer()
    assert rest.lost == 0 and rest.stray == 0
    assert rest.lines[-1].endswith("+++ exited with 0 +++")
