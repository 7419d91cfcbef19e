"""Issue #38 end to end through `termcredit run`: Harbor's network and feature keys.

* A task that permits a network (allow_internet = true, mcp_servers = [], gpus = 0) runs
  offline: oracle 1, nop 0, one warning line, ``network: "permitted, not granted"``.
* A task asking for a feature termcredit lacks (gpus = 1) is skipped with its reason; the run
  goes on.
* ``--network NAME`` joins the agent's container to NAME (an internal bridge made here, where a
  peer container serves a token); the verifier runs without it unless [verifier] asks.
"""

import json
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "tasks"
TOKEN = "peer-token-5f3a9c"  # served by the peer only; tests/test.sh of net-peer expects it


def termcredit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO)


def run_ok(*args: str) -> tuple[dict, str]:
    proc = termcredit("run", *args)
    assert proc.returncode == 0, proc.stderr
    out = Path(args[args.index("--out") + 1])
    return json.loads((out / "result.json").read_text()), proc.stderr


def trajectory(result: dict, i: int = 0) -> dict:
    return json.loads((Path(result["trials"][i]["trial_dir"]) / "trajectory.json").read_text())


def copy_task(src: str, dest: Path, old: str, new: str) -> Path:
    shutil.copytree(FIXTURES / src, dest)
    toml = (dest / "task.toml").read_text()
    assert old in toml
    (dest / "task.toml").write_text(toml.replace(old, new))
    return dest


def test_permitted_network_runs_offline_and_unsupported_feature_is_skipped(tmp_path, base_ref):
    gpu = copy_task("net-permitted", tmp_path / "gpu-task", "gpus = 0", "gpus = 1")
    res, err = run_ok("--task", str(FIXTURES / "net-permitted"), "--task", str(gpu),
                      "--agent", "oracle", "--out", str(tmp_path / "oracle"))
    line = (f"{gpu / 'task.toml'}: field 'environment.gpus': not supported by termcredit: the "
            "sandbox has no GPUs (got 1); remove the key or set gpus = 0")
    assert res["skipped"] == [{"task": "gpu-task", "attempt": 0, "reason": line}]
    assert (res["n_trials"], res["n_skipped"], res["mean_reward"]) == (1, 1, 1.0)
    assert res["complete"] and res["trials"][0]["error"] is None
    assert err.count("warning: 1 task(s) permit network access (net-permitted); this run "
                     "grants none, so they run offline (--network NAME grants one)") == 1
    info = trajectory(res)["info"]
    assert (info["network"], info["verifier_network"]) == ("permitted, not granted",
                                                          "not permitted")
    res, _ = run_ok("--task", str(FIXTURES / "net-permitted"), "--agent", "nop", "--out",
                    str(tmp_path / "nop"))
    assert (res["n_trials"], res["mean_reward"], res["n_errors"]) == (1, 0.0, 0)

    check = subprocess.run([sys.executable, "-m", "termcredit.cli", "tasks", "check", str(gpu),
                            "--out", str(tmp_path / "check")], capture_output=True, text=True,
                           cwd=REPO)
    assert check.returncode != 0 and line in " ".join((check.stdout + check.stderr).split())


@pytest.fixture
def peer_network(client, base_ref):
    """An internal bridge (it reaches nothing outside) with a peer serving TOKEN as tcpeer."""
    name = f"tc-test-{secrets.token_hex(4)}"
    net = client.networks.create(name, driver="bridge", internal=True)
    peer = client.containers.create(
        base_ref, ["sh", "-c", f"mkdir -p /srv && printf {TOKEN} > /srv/token && exec python3 "
                   "-m http.server 8000 --directory /srv"], network=name,
        labels={"termcredit.test": "network-peer"})
    try:
        net.disconnect(peer)
        net.connect(peer, aliases=["tcpeer"])
        peer.start()
        yield name
    finally:
        peer.remove(force=True)
        net.remove()


def test_network_grant_reaches_peer_and_verifier_stays_offline(tmp_path, peer_network):
    res, _ = run_ok("--task", str(FIXTURES / "net-peer"), "--network", peer_network,
                    "--out", str(tmp_path / "granted"))
    traj = trajectory(res)
    assert res["mean_reward"] == 1.0, traj["verifier"]  # the token came over the network
    assert traj["verifier"]["rewards"]["verifier_net"] == 0.0  # left before verification
    assert (traj["info"]["network"], traj["info"]["verifier_network"]) == (
        f"granted: {peer_network}", "not permitted")

    # not granted: the same oracle cannot reach the peer
    res, _ = run_ok("--task", str(FIXTURES / "net-peer"), "--out", str(tmp_path / "offline"))
    assert res["mean_reward"] == 0.0 and res["trials"][0]["error"] is None
    assert trajectory(res)["info"]["network"] == "permitted, not granted"


def test_verifier_gets_network_only_when_its_section_asks(tmp_path, peer_network):
    task = copy_task("net-peer", tmp_path / "net-peer-v", "[verifier]\n",
                     '[verifier]\nnetwork_mode = "public"\n')
    res, _ = run_ok("--task", str(task), "--network", peer_network, "--out", str(tmp_path / "v"))
    traj = trajectory(res)
    assert res["mean_reward"] == 1.0 and traj["verifier"]["rewards"]["verifier_net"] == 1.0
    assert traj["info"]["verifier_network"] == f"granted: {peer_network}"

    # the agent may not, the verifier may: the container joins the network only to verify
    task = copy_task("net-peer", tmp_path / "net-peer-vo", 'network_mode = "public"\n',
                     'network_mode = "no-network"\n[verifier]\nnetwork_mode = "public"\n')
    (task / "task.toml").write_text((task / "task.toml").read_text().replace(
        "[verifier]\ntimeout_sec = 60.0\n", "", 1))
    res, _ = run_ok("--task", str(task), "--network", peer_network, "--out", str(tmp_path / "o"))
    traj = trajectory(res)
    assert res["mean_reward"] == 0.0 and traj["verifier"]["rewards"]["verifier_net"] == 1.0
    assert (traj["info"]["network"], traj["info"]["verifier_network"]) == (
        "not permitted", f"granted: {peer_network}")


def test_network_that_does_not_exist_is_refused_before_anything_starts(tmp_path):
    name = f"tc-no-such-{secrets.token_hex(4)}"
    proc = termcredit("run", "--task", str(FIXTURES / "net-peer"), "--network", name,
                      "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert f"--network {name}: no Docker network of that name" in proc.stderr
    assert not (tmp_path / "o").exists()
    proc = termcredit("run", "--task", str(FIXTURES / "net-peer"), "--network", "host",
                      "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "not a network a sandbox can join and leave" in proc.stderr
