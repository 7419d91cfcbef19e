"""credit-audit end to end on a task whose necessary steps are known by construction:
`echo a > /app/a` (needed), `echo unused > /tmp/x` (not), `cat /app/a > /app/out.txt; echo b
>> /app/out.txt` (needed); the verifier wants /app/out.txt == "a\\nb"."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tests/fixtures/tasks/audit-chain"
STEPS = ["echo a > /app/a", "echo unused > /tmp/x",
         "cat /app/a > /app/out.txt; echo b >> /app/out.txt"]


def tc(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_audit_of_a_replayed_run_by_hand(tmp_path, base_ref):
    script = tmp_path / "steps.txt"
    script.write_text("\n".join(STEPS) + "\n")
    tc("run", "--task", str(TASK), "--agent", f"replay:{script}", "--out", str(tmp_path / "run"))
    proc = tc("credit-audit", str(tmp_path / "run"), "--out", str(tmp_path / "audit"))
    data = json.loads((tmp_path / "audit" / "audit.json").read_text())
    [traj] = data["trajectories"]
    assert traj["label"] == "audit-chain/attempt-0" and traj["reward"] == 1.0
    assert traj["trial_dir"] == str(tmp_path / "run" / "audit-chain" / "attempt-0")  # reused
    assert [s["command"] for s in traj["steps"]] == STEPS
    assert [s["necessary"] for s in traj["steps"]] == [True, False, True]
    assert [s["reward_without"] for s in traj["steps"]] == [0.0, 1.0, 0.0]
    credited = {s["step"] for s in traj["steps"] if s["credit"] > 0}
    necessary = {0, 2}
    # by hand: recall = |necessary ∩ credited| / |necessary|, precision = ... / |credited|
    assert traj["recall"] == len(necessary & credited) / len(necessary)
    assert traj["precision"] == len(necessary & credited) / len(credited)
    assert credited == {0, 2} and traj["recall"] == traj["precision"] == 1.0  # DepGPO: exact
    assert data["overall"]["recall"] == 1.0 and data["misses"] == [] and data["skipped"] == []
    for i in range(3):
        assert (tmp_path / "audit" / "audit-chain" / "attempt-0" / f"without-{i}"
                / "result.json").is_file()
    assert "RESULT recall=1.000 precision=1.000 steps=3 necessary=2 credited=2" in proc.stdout
    assert "credit audit" in proc.stdout and "audit-chain" in proc.stdout  # the table


def test_audit_of_an_oracle_split_and_a_miss_listed(tmp_path, base_ref):
    from termcredit.bench.credit_audit import AuditJob, audit, jobs_for
    from termcredit.tasks import load_task

    task = load_task(TASK)
    # a step that reads /app/a but whose output nobody uses: DepGPO may credit it or not; the
    # audit must call it unnecessary and list it as a miss exactly when it has credit
    jobs = jobs_for([TASK]) + [AuditJob(task, [STEPS[0], "cat /app/a > /tmp/copy", STEPS[2]],
                                        label="with-copy")]
    data = audit(jobs, tmp_path / "audit", concurrency=2)
    oracle, copy = data["trajectories"]
    assert oracle["label"] == "audit-chain/oracle"
    assert [s["necessary"] for s in oracle["steps"]] == [True, False, True]
    assert [s["necessary"] for s in copy["steps"]] == [True, False, True]
    expected = [{"label": "with-copy", "step": 1, "miss": "unnecessary"}] \
        if copy["steps"][1]["credit"] > 0 else []
    assert [{k: m[k] for k in ("label", "step", "miss")} for m in data["misses"]] == expected
    assert data["overall"]["n_steps"] == 6 and data["overall"]["n_necessary"] == 4
