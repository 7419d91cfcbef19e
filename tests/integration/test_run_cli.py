"""`termcredit run` end to end: real images, containers, strace and verifiers."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "tasks"


def termcredit(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"termcredit {args} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def containers(client, run_id: str | None = None) -> list:
    label = f"termcredit.run={run_id}" if run_id else "termcredit.run"
    return client.containers.list(all=True, filters={"label": label})


def test_oracle_gets_1_and_nop_gets_0(tmp_path, base_ref):
    termcredit("run", "--task", "tasks/hello-world", "--agent", "oracle", "--out",
               str(tmp_path / "oracle"))
    res = json.loads((tmp_path / "oracle" / "result.json").read_text())
    assert res["mean_reward"] == 1.0 and res["complete"] and res["trials"][0]["error"] is None
    trial = Path(res["trials"][0]["trial_dir"])
    traj = json.loads((trial / "trajectory.json").read_text())
    step = traj["steps"][0]["command"]
    assert step["command"].endswith("bash /solution/solve.sh") and step["exit_code"] == 0
    step_trace = (trial / step["trace_file"]).read_text()
    assert '"/app/hello.txt", 0x241' in step_trace  # the write, seen by strace
    assert '"/app/hello.txt", 0x80000' in (trial / "trace" / "verifier.strace").read_text()
    assert (trial / "verifier" / "reward.txt").read_text().strip() == "1"
    assert (tmp_path / "oracle" / "config.toml").read_text().startswith("[run]")

    termcredit("run", "--task", "tasks/hello-world", "--agent", "nop", "-k", "2", "-n", "2",
               "--out", str(tmp_path / "nop"))
    res = json.loads((tmp_path / "nop" / "result.json").read_text())
    assert res["mean_reward"] == 0.0 and res["n_trials"] == 2 and res["n_errors"] == 0


def test_replay_agent_steps_and_failure_reward(tmp_path, base_ref):
    replay = tmp_path / "cmds.txt"
    replay.write_text("cd /app\n\necho 'Hello, world!' > hello.txt\ncat hello.txt\n")
    termcredit("run", "--task", "tasks/hello-world", "--agent", f"replay:{replay}", "--out",
               str(tmp_path / "r"))
    res = json.loads((tmp_path / "r" / "result.json").read_text())
    assert res["mean_reward"] == 1.0
    traj = json.loads((Path(res["trials"][0]["trial_dir"]) / "trajectory.json").read_text())
    assert [s["command"]["command"] for s in traj["steps"]] == [
        "cd /app", "echo 'Hello, world!' > hello.txt", "cat hello.txt"]
    assert traj["steps"][2]["command"]["stdout"] == "Hello, world!\n"


def test_malformed_task_toml_names_the_field(tmp_path):
    task = tmp_path / "bad"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text("[environment]\nmemory_mb = 'lots'\n")
    (task / "instruction.md").write_text("x")
    (task / "environment" / "Dockerfile").write_text("FROM termcredit/base\n")
    (task / "tests" / "test.sh").write_text("true\n")
    proc = termcredit("run", "--task", str(task), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert f"{task / 'task.toml'}: field 'environment.memory_mb'" in proc.stderr
    assert not (tmp_path / "o").exists()  # nothing started for a task that does not load


def test_failing_dockerfile_gives_clear_error(tmp_path, base_ref):
    proc = termcredit("image", "task", str(FIXTURES / "broken-dockerfile"), check=False)
    assert proc.returncode == 2
    err = " ".join(proc.stderr.split())
    assert "broken-dockerfile/environment/Dockerfile: build failed at Step 3/" in err
    assert ": RUN exit 3: The command '/bin/sh -c exit 3'" in err
    assert "returned a non-zero code: 3" in err
    # in a run, the task's trials carry the error; the run itself completes
    termcredit("run", "--task", str(FIXTURES / "broken-dockerfile"), "--out", str(tmp_path / "o"))
    res = json.loads((tmp_path / "o" / "result.json").read_text())
    assert res["trials"][0]["error"].startswith("image build failed")


def test_tbench_from_image_builds_via_map_with_pip_behind_proxy(tmp_path, base_ref):
    termcredit("run", "--task", str(FIXTURES / "tbench-style"), "--agent", "oracle", "--out",
               str(tmp_path / "o"))
    res = json.loads((tmp_path / "o" / "result.json").read_text())
    assert res["mean_reward"] == 1.0, res


def test_sigkilled_run_leaves_nothing_after_next_start(tmp_path, client, base_ref):
    replay = tmp_path / "slow.txt"
    replay.write_text("sleep 120\n")
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "termcredit.cli", "run", "--task",
                             "tasks/hello-world", "--agent", f"replay:{replay}", "-k", "2",
                             "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (out / "config.toml").exists():
            time.sleep(0.2)
        run_id = (out / "config.toml").read_text().split('run_id = "')[1].split('"')[0]
        while time.time() < deadline and len(containers(client, run_id)) < 2:
            time.sleep(0.2)
        assert len(containers(client, run_id)) >= 2
        time.sleep(1.0)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert containers(client, run_id), "SIGKILL cannot clean up: the containers are still there"
    termcredit("run", "--task", "tasks/hello-world", "--agent", "nop", "--out",
               str(tmp_path / "next"))  # a new start collects what the dead run left
    assert containers(client, run_id) == []
    from termcredit.sandbox.owner import LABEL_OWNER, owner_alive

    # nothing of a dead owner is left (containers of live runs elsewhere may exist)
    assert all(owner_alive(c.labels.get(LABEL_OWNER, "")) for c in containers(client))


def test_sigint_cleans_up_and_keeps_finished_trials(tmp_path, client, base_ref):
    replay = tmp_path / "slow.txt"
    replay.write_text("sleep 120\n")
    out = tmp_path / "int"
    proc = subprocess.Popen([sys.executable, "-m", "termcredit.cli", "run", "--task",
                             "tasks/hello-world", "--agent", f"replay:{replay}", "--out", str(out)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not list(out.glob("hello-world/attempt-0/trace/shell-*")):
        time.sleep(0.2)
    run_id = (out / "config.toml").read_text().split('run_id = "')[1].split('"')[0]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert containers(client, run_id) == []
    res = json.loads((out / "result.json").read_text())
    assert res["complete"] is False
    traj = json.loads((out / "hello-world" / "attempt-0" / "trajectory.json").read_text())
    assert traj["task"] == "hello-world"
