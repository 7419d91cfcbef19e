"""`termcredit credit-audit` and `termcredit refine` with `--backend ray`, on a Ray cluster of
this machine (one head, 2 CPUs; tests/integration/test_ray_backend.py starts it the same way):
both run their trials through the one trial runner (harness/runner.py), so on Ray they find
what they find locally (test_credit_audit.py, test_refine.py: the same tasks, the same
expected values) and leave no container of theirs behind. Bounded: each command 900 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from termcredit.sandbox.raylocal import local_cluster

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
AUDIT_TASK = REPO / "tests/fixtures/tasks/audit-chain"
CHAIN_TASK = REPO / "tests/fixtures/tasks/chain-answer"
# chain-answer with distractors (test_refine.py): steps 0, 4, 5, 6 do nothing the answer needs
COMMANDS = [
    "find /app -maxdepth 2 -type f",
    "mkdir -p /app/work",
    "cd /app/work",
    "sort -t, -k2 -n /app/data.csv > sorted.csv",
    "echo checking > /tmp/debug.log",
    "note=unused",
    "cat /app/notes.txt",
    "tail -n 1 sorted.csv | cut -d, -f1 > /app/answer.txt",
]


@pytest.fixture(scope="module")
def ray_address(base_ref):
    with local_cluster(2, pythonpath=str(REPO / "src")) as address:
        yield address


def termcredit(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"termcredit {args} failed:\n{proc.stderr[-4000:]}"
    return proc


def labels(client, prefix: str) -> set[str]:
    """The run labels of containers whose run id starts with ``prefix``."""
    found = {c.labels.get("termcredit.run", "") for c in client.containers.list(
        all=True, filters={"label": "termcredit.run"}, ignore_removed=True)}
    return {x for x in found if x.startswith(prefix)}


def test_credit_audit_on_ray(ray_address, client, tmp_path):
    before = labels(client, "audit-")
    proc = termcredit("credit-audit", str(AUDIT_TASK), "--backend", "ray", "--ray-address",
                      ray_address, "-n", "2", "--out", str(tmp_path / "audit"))
    data = json.loads((tmp_path / "audit" / "audit.json").read_text())
    [oracle] = data["trajectories"]
    assert oracle["label"] == "audit-chain/oracle" and oracle["reward"] == 1.0
    # by construction: step 0 writes /app/a, which step 2 copies into the answer; step 1
    # writes /tmp/x, which nobody reads; leaving 0 or 2 out fails the verifier
    assert [s["necessary"] for s in oracle["steps"]] == [True, False, True]
    assert [s["reward_without"] for s in oracle["steps"]] == [0.0, 1.0, 0.0]
    assert {s["step"] for s in oracle["steps"] if s["credit"] > 0} == {0, 2}
    for name in ("full", "without-0", "without-1", "without-2"):
        result = json.loads((tmp_path / "audit" / "audit-chain" / "oracle" / name /
                             "result.json").read_text())
        assert result["error"] is None, (name, result["error"])
    assert "RESULT recall=1.000 precision=1.000 steps=3 necessary=2 credited=2" in proc.stdout
    assert labels(client, "audit-") <= before  # every container of the audit removed


def test_refine_on_ray(ray_address, client, tmp_path):
    script = tmp_path / "cmds.txt"
    script.write_text("\n".join(COMMANDS) + "\n")
    termcredit("run", "--task", str(CHAIN_TASK), "--agent", f"replay:{script}", "--out",
               str(tmp_path / "run"))
    before = labels(client, "refine-")
    out = tmp_path / "refined" / "data.jsonl"
    proc = termcredit("refine", str(tmp_path / "run"), "--out", str(out), "--backend", "ray",
                      "--ray-address", ray_address, "-n", "2")
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert [d["step"] for d in row["steps_dropped"]] == [0, 4, 5, 6]
    assert [d["step"] for d in row["steps_kept"]] == [1, 2, 3, 7]
    assert row["replay_reward"] == 1.0
    replayed = json.loads((Path(row["replay"]) / "trajectory.json").read_text())
    assert replayed["agent"] == "refine-replay"
    assert [s["command"]["command"] for s in replayed["steps"]] == [COMMANDS[i]
                                                                    for i in (1, 2, 3, 7)]
    assert [s["command"]["exit_code"] for s in replayed["steps"]] == [0, 0, 0, 0]
    assert "RESULT refine trials_seen=1 successful=1 kept=1 rejected=0 steps_dropped=4" \
        in proc.stdout
    assert labels(client, "refine-") <= before
