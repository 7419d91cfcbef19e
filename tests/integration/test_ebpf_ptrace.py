"""A task solved by tracing a program (must-have 4 of #33): under the eBPF tracer the agent may
ptrace its own processes, and the fixture's oracle (`strace -f -e trace=openat <prog>`)
scores 1, the traced program's open in the step's reads; under strace the task's trials are
skipped with the reason before any container starts. Real Docker, real bpftrace; the eBPF
half is skipped with the reason where eBPF is unavailable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from termcredit.harness.run import RunConfig, run
from termcredit.tasks import load_task
from termcredit.tracer.choice import NO_PTRACE
from termcredit.tracer.ebpf import available
from termcredit.trialdir import load_trajectory

WHY = available()
pytestmark = pytest.mark.docker
TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "trace-a-program"
OPENED = "/var/lib/mystery/f31"  # by hand: sha256(b"termcredit-mystery") % 40 + 1 = 31


@pytest.mark.skipif(WHY is not None, reason=f"eBPF backend unavailable: {WHY}")
def test_the_oracle_that_traces_a_program_scores_1_under_ebpf(tmp_path):
    res = run(RunConfig(tasks=[load_task(TASK)], agent="oracle", tracer="ebpf",
                        out=tmp_path / "out"))
    (trial,) = res["trials"]
    traj = load_trajectory(trial["trial_dir"])
    assert traj.verifier is not None and traj.verifier.reward == 1.0
    assert traj.integrity == []
    (step,) = [s for s in traj.steps if s.command is not None]
    assert OPENED in step.command.accesses.read  # the agent's tracee is the host's too


def test_under_strace_the_task_is_skipped_with_the_reason(tmp_path):
    res = run(RunConfig(tasks=[load_task(TASK)], agent="oracle", tracer="strace",
                        out=tmp_path / "out"))
    assert res["trials"] == []
    assert [s["reason"] for s in res["skipped"]] == [NO_PTRACE]
