"""`termcredit serve` as a real server process on a free localhost port, with `termcredit run
--agent openai:` against it on two tasks (real Docker, strace, verifiers)."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
TASKS = ["hello-world", "word-frequency"]


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The server's first stdout line (its address), or fail after ``timeout`` seconds."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"termcredit serve printed no address within {timeout:g}s") from None


def test_serve_a_checkpoint_and_run_two_tasks_against_it(tmp_path, base_ref):
    torch = pytest.importorskip("torch", reason="serve needs the `train` extra")
    torch.set_num_threads(2)
    from termcredit.trainer.policy import load_policy

    ckpt = load_policy("tiny").save(tmp_path / "ckpt")
    log, err = tmp_path / "serve.log", tmp_path / "serve.stderr"
    with open(err, "w") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-m", "termcredit.cli", "serve", "--model", str(ckpt), "--port", "0",
             "--device", "cpu", "--served-model-name", "tiny", "--max-tokens", "64", "--log",
             str(log)], stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=REPO)
    try:
        line = _first_line(server, 180)
        m = re.fullmatch(r"serving tiny on (http://127\.0\.0\.1:(\d+)/v1)\n", line)
        assert m and int(m.group(2)) > 0, line
        out = tmp_path / "run"
        proc = subprocess.run(
            [sys.executable, "-m", "termcredit.cli", "run", *sum((["--task", f"tasks/{t}"]
                                                                 for t in TASKS), []),
             "--agent", "openai:tiny", "--base-url", m.group(1), "--max-turns", "2",
             "--max-tokens", "16", "--temperature", "0", "--out", str(out)],
            capture_output=True, text=True, cwd=REPO, timeout=900)
        assert proc.returncode == 0, proc.stderr
    finally:
        server.terminate()  # SIGTERM: a clean stop
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
            raise
        server.stdout.close()
    assert code == 0 and "termcredit serve: stopped" in err.read_text()

    res = json.loads((out / "result.json").read_text())
    assert res["complete"] and res["n_errors"] == 0
    assert sorted(t["task"] for t in res["trials"]) == TASKS
    requests = 0
    for t in res["trials"]:
        trial = Path(t["trial_dir"])
        traj = json.loads((trial / "trajectory.json").read_text())
        steps = traj["steps"]
        assert traj["agent"] == "openai:tiny" and 1 <= len(steps) <= 2
        if len(steps) == 2:  # an untrained tiny model never says `done`
            assert traj["termination"] == "max_turns"
        for s in steps:
            usage = s["info"]["usage"]
            assert usage["prompt_tokens"] > 0 and 1 <= usage["completion_tokens"] <= 16
            assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
            assert s["info"]["finish_reason"] in ("stop", "length")
            if s["command"] is not None:  # a traced command with its raw trace on disk
                assert s["command"]["command"] and (trial / s["command"]["trace_file"]).is_file()
        assert any(s["command"] is not None for s in steps), steps
        # the second prompt holds the first: it is longer
        if len(steps) == 2:
            assert steps[1]["info"]["usage"]["prompt_tokens"] > \
                steps[0]["info"]["usage"]["prompt_tokens"]
        assert traj["info"]["usage"]["requests"] == len(steps)
        assert traj["info"]["usage"]["completion_tokens"] == sum(
            s["info"]["usage"]["completion_tokens"] for s in steps)
        requests += len(steps)
        assert (trial / "graph.json").is_file()
    # the server's log: one line per chat request, with its tokens
    chats = [ln for ln in log.read_text().splitlines()
             if " POST /v1/chat/completions 200 prompt_tokens=" in ln]
    assert len(chats) == requests
    assert log.read_text() in err.read_text()  # the same lines went to stderr
