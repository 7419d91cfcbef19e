"""A session's lines stream from the real shared tracer while it runs (#33): each step's lines,
up to its end marker (cut by StepCutter), come before the next step starts.
Skipped where eBPF is not."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from termcredit.tracer.ebpf import available
from termcredit.tracer.ebpf_host import host_tracer, stop_host_tracer
from termcredit.tracer.ebpf_steps import StepCutter
from termcredit.tracer.session import summarize_segment

WHY = available()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"eBPF backend unavailable: {WHY}")


def test_each_step_streams_up_to_its_end_marker_while_the_shell_runs(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    for step in (1, 2):
        (marks / f"s{step}").mkdir(parents=True)
        (marks / f"e{step}.0.a{step}").mkdir()  # the sandbox's cds fail: only the path counts
    shell = subprocess.Popen(["bash"], stdin=subprocess.PIPE)  # waits on its first command
    assert shell.stdin is not None
    try:
        tracer = host_tracer()
        trace = tracer.follow(shell.pid, "agent")
        assert host_tracer() is tracer  # started once: the next session's call reuses it
        cutter = StepCutter(str(marks))
        for step in (1, 2):
            shell.stdin.write(f"cd {marks}/s{step}; echo {step} > {tmp_path}/f{step}; "
                              f"cd {marks}/e{step}.0.a{step}\n".encode())
            shell.stdin.flush()
            got = cutter.wait(trace.lines, step, f"a{step}", timeout=30)
            assert got is not None, f"no end marker of step {step}: {cutter.lines[-5:]}"
            lines, code = got
            assert code == 0 and any(f'chdir("{marks}/s{step}")' in x for x in lines)
            # the shell still runs: the step's write came before its end marker, not at close
            assert shell.poll() is None
            assert summarize_segment("".join(x + "\n" for x in lines)).written == {
                f"{tmp_path}/f{step}"}
        assert cutter.flags == []
        shell.stdin.close()
        assert shell.wait(timeout=30) == 0
        rest = trace.close(timeout=30)
    finally:
        stop_host_tracer()
    assert rest.lost == 0 and rest.stray == 0
    assert rest.lines[-1].endswith("+++ exited with 0 +++")
