"""Concurrent runs on one engine never interfere: two `termcredit run` processes and a stream of
`termcredit gc` against the same engine, while dead runs' containers are there to collect and
each run removes its used containers in the background."""

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from termcredit.sandbox.owner import LABEL_OWNER, LABEL_RUN

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "tasks" / "hello-world"
N_DEAD = 12  # containers of a dead run: every start-up gc and `termcredit gc` races for them


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "termcredit.cli", *args], cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=err)


def _run_id(out: Path) -> str:
    return (out / "config.toml").read_text().split('run_id = "')[1].split('"')[0]


def test_two_runs_and_gc_on_one_engine(tmp_path, client, base_ref):
    child = subprocess.Popen(["true"])
    child.wait()  # its pid is a dead owner (start time "0" never matches a live process)
    dead_run = f"pytest-dead-{child.pid}-{int(time.time())}"
    for _ in range(N_DEAD):
        client.containers.run(base_ref, ["sleep", "infinity"], detach=True, init=True,
                              network_mode="none",
                              labels={LABEL_RUN: dead_run,
                                      LABEL_OWNER: f"{socket.gethostname()}:{child.pid}:0"})

    runs = {"oracle": (tmp_path / "a", 1.0), "nop": (tmp_path / "b", 0.0)}
    procs = {agent: _spawn(["run", "--task", str(HELLO), "--agent", agent, "-k", "4", "-n", "2",
                            "--out", str(out)], tmp_path / f"{agent}.stderr")
             for agent, (out, _) in runs.items()}
    gcs: list[tuple[subprocess.Popen, Path]] = []
    deadline = time.time() + 240
    # two gc at a time, over and over, while the runs start, work and remove their used
    # containers (bounded)
    while time.time() < deadline and len(gcs) < 40:
        pair = [tmp_path / f"gc-{len(gcs) + i}.stderr" for i in range(2)]
        gcs += [(_spawn(["gc"], log), log) for log in pair]
        for proc, _ in gcs[-2:]:
            proc.wait(timeout=120)
        if all(p.poll() is not None for p in procs.values()):
            break
    for p in procs.values():
        p.wait(timeout=max(1.0, deadline - time.time()))

    for agent, (out, reward) in runs.items():
        err = (tmp_path / f"{agent}.stderr").read_text()
        assert procs[agent].returncode == 0, err
        assert "Traceback" not in err, err
        res = json.loads((out / "result.json").read_text())
        assert res["complete"] and res["n_trials"] == 4 and res["n_errors"] == 0, res
        assert [t["reward"] for t in res["trials"]] == [reward] * 4, res
        assert client.containers.list(
            all=True, filters={"label": f"{LABEL_RUN}={_run_id(out)}"}) == []
    assert len(gcs) >= 2
    for proc, log in gcs:
        assert proc.returncode == 0 and "Traceback" not in log.read_text(), log.read_text()
    assert client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={dead_run}"}) == []
