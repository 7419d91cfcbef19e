"""Nothing lost: a SIGKILLed `termcredit run` keeps the finished steps of the trial in flight
(steps.jsonl), and `termcredit run --resume DIR` finishes it without redoing finished trials."""

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from termcredit.harness.run import RunConfig, _lock_run_dir, resume_config
from termcredit.harness.steplog import StepLog, StepLogError, load_steps
from termcredit.trialdir import TrialPaths
from termcredit.records import CommandRecord, Step
from termcredit.tasks import load_task

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "tasks" / "hello-world"
SLOW_STEPS = 5  # `sleep 1` lines after the first command


def termcredit(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"termcredit {args} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def containers(client, run_id: str) -> list:
    return client.containers.list(all=True, filters={"label": f"termcredit.run={run_id}"})


def _step(i: int) -> Step:
    rec = CommandRecord(command=f"echo {i}", stdout=f"{i}\n", stderr="", exit_code=0,
                        duration_s=0.1, seq=i + 1, trace="raw strace, never in the log")
    return Step(index=i, action=f"echo {i}", command=rec, info={"n": i})


# ------------------------------------------------------------------ no engine needed

def test_steplog_appends_and_reads_back_tolerating_a_torn_last_line(tmp_path):
    log = StepLog(tmp_path)
    assert load_steps(tmp_path) == []  # started empty
    for i in range(3):
        log.append(_step(i))
    steps = load_steps(tmp_path)
    assert [s.index for s in steps] == [0, 1, 2]
    assert steps[1].command.stdout == "1\n" and steps[1].info == {"n": 1}
    assert steps[1].command.trace == ""  # raw traces live in trace/, not in the log
    path = TrialPaths(tmp_path).steps
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines(keepends=True)[0][:25])  # killed mid-write
    assert [s.index for s in load_steps(tmp_path)] == [0, 1, 2]
    lines = whole.splitlines(keepends=True)
    path.write_bytes(lines[0] + b'{"index": 1, "act\n' + lines[2])
    with pytest.raises(StepLogError, match=":2: corrupt"):
        load_steps(tmp_path)
    assert load_steps(tmp_path / "nowhere") == []
    StepLog(tmp_path)  # a new episode in the same folder starts a new log
    assert load_steps(tmp_path) == []


def _fake_run(out: Path, **settings) -> None:
    out.mkdir(parents=True)
    from termcredit.harness.run import write_config

    write_config(RunConfig(tasks=[load_task(HELLO)], **settings), out, "fake-1")


def test_resume_config_takes_the_runs_settings_and_refuses_others(tmp_path):
    out = tmp_path / "run"
    _fake_run(out, agent="nop", attempts=3, concurrency=1, command_timeout=30.0)
    cfg = resume_config(out, RunConfig(tasks=[]))
    assert (cfg.agent, cfg.attempts, cfg.concurrency, cfg.command_timeout) == ("nop", 3, 1, 30.0)
    assert [t.name for t in cfg.tasks] == ["hello-world"] and cfg.resume and cfg.out == out
    assert resume_config(out, RunConfig(tasks=[], concurrency=4)).concurrency == 4
    assert resume_config(out, RunConfig(tasks=[load_task(HELLO)], agent="nop")).agent == "nop"
    with pytest.raises(ValueError, match="agent is 'nop', not 'replay:x'"):
        resume_config(out, RunConfig(tasks=[], agent="replay:x"))
    with pytest.raises(ValueError, match="attempts is 3, not 5"):
        resume_config(out, RunConfig(tasks=[], attempts=5))
    other = load_task(REPO / "tasks" / "word-frequency")
    with pytest.raises(ValueError, match="--task names others"):
        resume_config(out, RunConfig(tasks=[other]))
    with pytest.raises(ValueError, match="different folders"):
        resume_config(out, RunConfig(tasks=[], out=tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError, match="not a termcredit run folder"):
        resume_config(tmp_path / "nothing-here")
    # the command line says the same
    proc = termcredit("run", "--resume", str(out), "--agent", "replay:x", check=False)
    assert proc.returncode == 2 and "agent is 'nop', not 'replay:x'" in proc.stderr
    proc = termcredit("run", "--resume", str(out), "-k", "2", check=False)
    assert proc.returncode == 2 and "attempts is 3, not 2" in proc.stderr
    proc = termcredit("run", check=False)
    assert proc.returncode == 2 and "--task" in proc.stderr


def test_one_process_per_run_folder(tmp_path):
    fd = _lock_run_dir(tmp_path)
    try:
        with pytest.raises(ValueError, match="another termcredit run is writing"):
            _lock_run_dir(tmp_path)
    finally:
        os.close(fd)
    os.close(_lock_run_dir(tmp_path))  # free again once the holder is gone


# ------------------------------------------------------------------ real engine

@pytest.mark.docker
def test_sigkilled_run_keeps_steps_and_resumes_without_redoing(tmp_path, client, base_ref):
    replay = tmp_path / "slow.txt"
    replay.write_text("cd /app\n" + "sleep 1\n" * SLOW_STEPS
                      + "echo 'Hello, world!' > hello.txt\n")
    out = tmp_path / "run"
    first, second = out / "hello-world" / "attempt-0", out / "hello-world" / "attempt-1"
    log = tmp_path / "killed.stderr"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "termcredit.cli", "run", "--task",
                                 str(HELLO), "--agent", f"replay:{replay}", "-k", "3", "-n", "1",
                                 "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True)
    try:
        deadline = time.time() + 120
        # kill once the first trial finished and the second ran some of its steps, not all
        while time.time() < deadline and proc.poll() is None:
            if (first / "result.json").exists() and len(load_steps(second)) >= 2:
                break
            time.sleep(0.1)
        assert proc.poll() is None, log.read_text()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole process group, as a hard kill would
        proc.wait()
    run_id = (out / "config.toml").read_text().split('run_id = "')[1].split('"')[0]

    killed = load_steps(second)
    assert 2 <= len(killed) < SLOW_STEPS + 2, "the second trial was killed mid-way"
    assert [s.index for s in killed] == list(range(len(killed)))
    assert [s.command.command for s in killed] == ["cd /app"] + ["sleep 1"] * (len(killed) - 1)
    assert all(s.command.exit_code == 0 and s.command.trace_file for s in killed)
    assert not (second / "trajectory.json").exists()  # only the step log had them
    assert not (second / "result.json").exists()
    res = json.loads((out / "result.json").read_text())
    assert res["complete"] is False and res["n_trials"] == 1
    kept = {p.name: p.stat().st_mtime_ns for p in first.rglob("*")}
    assert containers(client, run_id), "a SIGKILLed run leaves its containers (until gc)"

    resumed = termcredit("run", "--resume", str(out))
    assert "1 finished trial(s) kept, 2 to run" in resumed.stderr
    res = json.loads((out / "result.json").read_text())
    assert res["complete"] is True and res["n_trials"] == res["n_planned"] == 3
    assert res["n_errors"] == 0 and res["mean_reward"] == 1.0
    assert sorted(Path(t["trial_dir"]).name for t in res["trials"]) == [
        "attempt-0", "attempt-1", "attempt-2"]
    assert len(res["resumed"]) == 1
    assert {p.name: p.stat().st_mtime_ns for p in first.rglob("*")} == kept  # not rerun
    # the killed attempt is kept aside, its steps with it; the rerun has every step
    aside = out / "hello-world" / "attempt-1.killed-1"
    assert [s.command.command for s in load_steps(aside)] == [
        s.command.command for s in killed]
    assert len(load_steps(second)) == SLOW_STEPS + 2
    traj = json.loads((second / "trajectory.json").read_text())
    assert len(traj["steps"]) == SLOW_STEPS + 2
    config = (out / "config.toml").read_text()
    assert tomllib.loads(config)["run"]["earlier_run_ids"] == [run_id]
    assert 'agent = "replay:' in config

    termcredit("gc")
    assert containers(client, run_id) == []
    new_id = config.split('run_id = "')[1].split('"')[0]
    assert containers(client, new_id) == []
