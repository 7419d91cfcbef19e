"""DepGPO end to end: a replayed episode through real Docker and strace, then `termcredit
credit` and `termcredit graph` on the trial directory it wrote."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tests/fixtures/tasks/chain-answer"


def tc(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def replay(tmp_path: Path, name: str, commands: list[str]) -> Path:
    script = tmp_path / f"{name}.txt"
    script.write_text("\n".join(commands) + "\n")
    tc("run", "--task", str(TASK), "--agent", f"replay:{script}", "--out", str(tmp_path / name))
    res = json.loads((tmp_path / name / "result.json").read_text())
    assert res["mean_reward"] == 1.0, res
    return Path(res["trials"][0]["trial_dir"])


def test_distractors_get_zero_and_the_chain_gets_credit(tmp_path, base_ref):
    trial = replay(tmp_path, "mixed", [
        "ls -la /app",                                              # exploration
        "cat /app/notes.txt",                                       # unrelated read
        "sort -t, -k2 -n /app/data.csv > /tmp/stage.csv",           # stage (indirect write)
        "echo checking > /tmp/debug.log",                           # unrelated write
        "tail -n 1 /tmp/stage.csv | cut -d, -f1 > /app/answer.txt",  # answer (direct write)
    ])
    report = json.loads(tc("credit", str(trial), "--json"))
    assert report["fallback"] is None
    assert report["verifier_resources"] == ["/app/answer.txt"]
    credit = [s["credit"] for s in report["steps"]]
    weight = [s["weight"] for s in report["steps"]]
    assert credit[0] == credit[1] == credit[3] == 0.0
    assert weight[0] == weight[1] == weight[3] == 0.0
    assert credit[2] > 0 and credit[4] > 0
    assert "indirect-write" in report["steps"][2]["classes"]
    assert "direct-write" in report["steps"][4]["classes"]
    assert sum(weight) / len(weight) == pytest.approx(1.0)  # one token per step: mean kept
    graph = json.loads((trial / "graph.json").read_text())  # written by the run itself
    kinds = {e["kind"] for e in graph["edges"]}
    assert {"read", "write", "stdout"} <= kinds
    svg = Path(tc("graph", str(trial), "--format", "svg").strip())
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "legend" in text and "answer.txt" in text


def test_stdout_reuse_gives_the_reader_supporting_credit(tmp_path, base_ref):
    trial = replay(tmp_path, "reuse", [
        "cat /app/data.csv",              # prints gamma,42: read-only, its value is reused
        "echo gamma > /app/answer.txt",   # writes the answer with the value it saw
    ])
    report = json.loads(tc("credit", str(trial), "--json"))
    credit = [s["credit"] for s in report["steps"]]
    assert credit == pytest.approx([0.5, 1.0])  # β^1 · c_w, β = 0.5
    assert "supporting-read" in report["steps"][0]["classes"]
