"""`termcredit run --tracer ebpf` scores the built-in oracles as `--tracer strace` does, with the
same per-step accesses (#33): real Docker, real bpftrace, the verifier's session traced too.

hello-world runs its oracle (solve.sh, one step); three multi-step tasks replay their oracle
split into one step per command (bench/demos.py) after a step that pins git's clock (a
commit's object name hashes its time), so each backend cuts several steps. For
every step, the task-level reads, writes and deletions must be the same from both backends,
and every trial scores 1 with no integrity reason. Skipped with the reason where eBPF is
unavailable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from termcredit.bench.demos import _commands
from termcredit.harness.run import RunConfig, run
from termcredit.tasks import load_task
from termcredit.tracer.ebpf import available
from termcredit.trialdir import load_trajectory

WHY = available()
pytestmark = [pytest.mark.docker, pytest.mark.slow,
              pytest.mark.skipif(WHY is not None, reason=f"eBPF backend unavailable: {WHY}")]
TASKS = Path(__file__).resolve().parents[2] / "tasks"
MULTI = ("git-commit-changes", "merge-user-lists", "close-ledger-period")
SETS = ("read", "written", "deleted")
PIN_TIME = "export GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z"


def _trial(tmp: Path, name: str, agent: str, tracer: str) -> dict:
    out = tmp / f"{name}-{tracer}"
    res = run(RunConfig(tasks=[load_task(TASKS / name)], agent=agent, tracer=tracer, out=out,
                        concurrency=1))
    (trial,) = res["trials"]
    traj = load_trajectory(trial["trial_dir"])
    steps = [{k: sorted(getattr(s.command.accesses, k)) for k in SETS}
             for s in traj.steps if s.command is not None]
    return {"reward": traj.verifier.reward if traj.verifier else None,
            "integrity": traj.integrity, "exit": [s.command.exit_code for s in traj.steps
                                                  if s.command is not None],
            "steps": steps}


@pytest.mark.parametrize("name", ["hello-world", *MULTI])
def test_oracle_scores_and_steps_agree_across_backends(name, tmp_path):
    if name == "hello-world":
        agent = "oracle"
    else:
        commands = _commands(load_task(TASKS / name))
        assert len(commands) >= 3 and not any("\n" in c for c in commands)
        replay = tmp_path / "oracle.txt"
        # a commit's object name hashes its time: fixed, so both backends write the same one
        replay.write_text("".join(c + "\n" for c in [PIN_TIME, *commands]))
        agent = f"replay:{replay}"
    got = {tracer: _trial(tmp_path, name, agent, tracer) for tracer in ("strace", "ebpf")}
    assert got["strace"]["reward"] == 1.0 and got["strace"]["integrity"] == []
    assert got["ebpf"] == got["strace"]
    if name == "hello-world":  # by hand: the oracle's one step writes the greeting
        assert got["ebpf"]["steps"][0]["written"] == ["/app/hello.txt"]
