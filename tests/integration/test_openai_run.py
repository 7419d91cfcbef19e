"""`termcredit run --agent openai:MODEL` end to end: a scripted OpenAI-compatible server (real
HTTP, in this process), real Docker, strace and the task's verifier; then credit, graph, audit
and view on the trial it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from chat_server import ScriptedChatServer, completion, error

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]


def termcredit(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, f"termcredit {args} failed ({proc.returncode}):\n{proc.stderr}"
    return proc


def test_scripted_model_solves_hello_world(tmp_path, base_ref):
    script = [error(503, "warming up", {"retry-after-ms": "50"}),
              completion("I will write the file.\n```bash\necho 'Hello, world!' > /app/hello.txt"
                         "\n```", 210, 19),
              completion("cat /app/hello.txt", 260, 6),
              completion("done", 300, 1)]
    out = tmp_path / "run"
    with ScriptedChatServer(script) as srv:
        termcredit("run", "--task", "tasks/hello-world", "--agent", "openai:scripted",
                   "--base-url", srv.base_url, "--max-turns", "5", "--max-tokens", "200",
                   "--temperature", "0", "--out", str(out))
    res = json.loads((out / "result.json").read_text())
    assert res["complete"] and res["mean_reward"] == 1.0 and res["agent"] == "openai:scripted"
    assert res["trials"][0]["error"] is None
    config = tomllib.loads((out / "config.toml").read_text())["run"]
    assert config["agent_options"] == {"base_url": srv.base_url, "max_turns": 5,
                                       "max_tokens": 200, "temperature": 0.0}
    assert len(srv.requests) == 4  # one retry, three replies
    assert all(r["json"]["max_tokens"] == 200 and r["json"]["temperature"] == 0
               for r in srv.requests)
    trial = Path(res["trials"][0]["trial_dir"])
    traj = json.loads((trial / "trajectory.json").read_text())
    assert traj["termination"] == "done" and traj["agent"] == "openai:scripted"
    steps = traj["steps"]
    assert [s["command"]["command"] if s["command"] else None for s in steps] == [
        "echo 'Hello, world!' > /app/hello.txt", "cat /app/hello.txt", None]
    assert steps[1]["command"]["stdout"] == "Hello, world!\n"
    assert steps[1]["observation"] == "exit code: 0\nstdout:\nHello, world!"
    assert "/app/hello.txt" in steps[0]["command"]["accesses"]["written"]
    for s in steps[:2]:  # traced: the raw strace lines on disk
        assert "execve" in (trial / s["command"]["trace_file"]).read_text() or \
            "openat" in (trial / s["command"]["trace_file"]).read_text()
    assert steps[0]["info"]["retries"] == [{"error": "HTTP 503: warming up", "wait_s": 0.05}]
    assert [s["info"]["usage"] for s in steps] == [
        {"prompt_tokens": 210, "completion_tokens": 19, "total_tokens": 229},
        {"prompt_tokens": 260, "completion_tokens": 6, "total_tokens": 266},
        {"prompt_tokens": 300, "completion_tokens": 1, "total_tokens": 301}]
    assert traj["info"]["usage"] == {"requests": 3, "retries": 1, "prompt_tokens": 770,
                                     "completion_tokens": 26, "total_tokens": 796}
    assert len((trial / "steps.jsonl").read_text().splitlines()) == 3
    assert (trial / "graph.json").is_file()

    # the other verbs work on it
    credit = json.loads(termcredit("credit", str(trial), "--json").stdout)
    by_step = {r["step"]: r for r in credit["steps"]}
    assert by_step[0]["credit"] > 0  # the write the verifier read
    assert "/app/hello.txt" in credit["verifier_resources"]
    assert Path(termcredit("graph", str(trial), "--format", "dot").stdout.strip()).is_file()
    termcredit("audit", str(out))
    termcredit("view", str(out), "--no-graphs")
    assert (out / "view" / "index.html").is_file()
