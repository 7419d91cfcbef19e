"""The Ray backend against a real Ray cluster on this machine (one head, 2 CPUs, started once for
the module): `termcredit run` and `termcredit train` give what the local backend gives on the
same tasks and seeds, and a host actor killed mid-run costs exactly its episode (an
infrastructure failure, masked) while the run goes on and leaves no container behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from trial_compare import differences, trial_facts

from termcredit.sandbox.raylocal import local_cluster

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
SMALL = "[rollout]\nmax_turns = 2\nmax_new_tokens = 24\ncommand_timeout = 10.0\n"


@pytest.fixture(scope="module")
def ray_address(base_ref):
    with local_cluster(2, pythonpath=str(REPO / "src")) as address:
        yield address


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)}
    env.pop("RAY_ADDRESS", None)
    return env


def termcredit(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], cwd=REPO, env=_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"termcredit {args} failed:\n{proc.stderr[-4000:]}"
    return proc


def run_labels(client) -> set[str]:
    return {c.labels.get("termcredit.run", "")
            for c in client.containers.list(all=True, filters={"label": "termcredit.run"},
                                            ignore_removed=True)}  # others' runs come and go


def ray_replay_run(tmp_path: Path, commands: str, out: Path, ray_address: str, *,
                   attempts: int, concurrency: int) -> subprocess.Popen:
    """`termcredit run --backend ray` of a replay on hello-world, in the background (the
    caller interrupts or kills what it runs)."""
    replay = tmp_path / "cmds.txt"
    replay.write_text(commands)
    return subprocess.Popen(
        [sys.executable, "-m", "termcredit.cli", "run", "--task", "tasks/hello-world", "-k",
         str(attempts), "-n", str(concurrency), "--agent", f"replay:{replay}", "--backend", "ray",
         "--ray-address", ray_address, "--out", str(out)], cwd=REPO, env=_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_run_on_ray_gives_the_local_rewards_and_trajectories(ray_address, client, tmp_path):
    replay = tmp_path / "cmds.txt"
    # `ls -l`, not `ls -la`: `..` is the container's /, whose mtime is its creation time, so the
    # two backends' listings differed whenever their containers started in different minutes
    replay.write_text("cd /app\nls -l\necho 'Hello, world!' > hello.txt\ncat hello.txt\n"
                      "printf 'x\\n' >> notes.txt; wc -l notes.txt\n")
    runs = [("oracle", ["hello-world", "patch-port-config", "fix-python-bug"]),
            ("nop", ["hello-world"]),
            (f"replay:{replay}", ["hello-world", "patch-port-config"])]
    for agent, tasks in runs:
        name = agent.split(":")[0]
        task_args = [a for t in tasks for a in ("--task", f"tasks/{t}")]
        out = {b: tmp_path / f"{name}-{b}" for b in ("local", "ray")}
        termcredit("run", *task_args, "--agent", agent, "-n", "2", "--out", str(out["local"]))
        proc = termcredit("run", *task_args, "--agent", agent, "-n", "2", "--backend", "ray",
                          "--ray-address", ray_address, "--out", str(out["ray"]))
        res = {b: json.loads((out[b] / "result.json").read_text()) for b in out}
        assert res["ray"]["complete"] and res["ray"]["n_errors"] == 0
        rewards = {b: {(t["task"], t["attempt"]): t["reward"] for t in res[b]["trials"]}
                   for b in out}
        want = {"oracle": 1.0, "nop": 0.0}.get(name)
        assert rewards["ray"] == rewards["local"] and len(rewards["ray"]) == len(tasks)
        if want is not None:
            assert set(rewards["ray"].values()) == {want}
        for task in tasks:
            a = trial_facts(out["local"] / task / "attempt-0")
            b = trial_facts(out["ray"] / task / "attempt-0")
            assert differences(a, b) == [], (agent, task)
        assert res["ray"]["run_id"] not in run_labels(client)  # every container removed
    replayed = json.loads((tmp_path / "replay-ray" / "hello-world" / "attempt-0" /
                           "trajectory.json").read_text())
    assert [s["command"]["exit_code"] for s in replayed["steps"]] == [0, 0, 0, 0, 0]
    assert replayed["steps"][3]["command"]["stdout"] == "Hello, world!\n"
    assert replayed["verifier"]["reward"] == 1.0


def same_up_to_a_race(steps_a: list[dict], steps_b: list[dict]) -> int | None:
    """Equal steps (action, exit code, observation) up to the first whose observations differ
    only in line order, its index (None: all equal). The random policy writes pipelines of
    failing commands, whose stderr lines come in the order the processes ran (seen in CI:
    `/upmple | /localifcd`): the environment's race, not the backend's; the policies' texts
    part from there on."""
    for i, (sa, sb) in enumerate(zip(steps_a, steps_b)):
        oa, ob = sa.get("observation", ""), sb.get("observation", "")
        assert sa["action"] == sb["action"], i
        assert (sa["command"] and sa["command"]["exit_code"]) == \
            (sb["command"] and sb["command"]["exit_code"]), i
        if oa != ob:
            assert sorted(oa.splitlines()) == sorted(ob.splitlines()), i
            return i
    assert len(steps_a) == len(steps_b)
    return None


def test_train_on_ray_matches_the_local_run_on_the_same_seed(ray_address, client, tmp_path):
    """The tiny policy samples with a fixed seed, so with the same observations it makes the
    same tokens: equal token ids in every trajectory mean equal commands, equal observations
    (they are appended to the sequence) and equal rewards."""
    config = tmp_path / "small.toml"
    config.write_text(SMALL)
    common = ["train", "--model", "tiny", "--task", "tasks/hello-world", "--group-size", "2",
              "--steps", "2", "--seed", "3", "--config", str(config)]
    termcredit(*common, "--out", str(tmp_path / "local"))
    termcredit(*common, "--backend", "ray", "--ray-address", ray_address,
               "--out", str(tmp_path / "ray"))
    keys = ("step", "reward_mean", "success_rate", "tokens", "action_tokens",
            "steps_per_episode", "invalid_actions", "infra_episodes", "masked_episodes")
    rows = {b: [json.loads(ln) for ln in (tmp_path / b / "metrics.jsonl").read_text().splitlines()]
            for b in ("local", "ray")}
    assert [r["step"] for r in rows["ray"]] == [0, 1] and rows["ray"][0]["infra_episodes"] == 0
    trajs = {b: sorted((tmp_path / b / "rollouts").rglob("trajectory.json")) for b in rows}
    assert len(trajs["ray"]) == len(trajs["local"]) == 4  # 2 steps x 2 episodes
    # an update with an episode the environment raced in (see above) trains on other texts:
    # it and the updates after it are not compared
    raced = 2
    for a, b in zip(trajs["local"], trajs["ray"]):  # in update order
        ta, tb = json.loads(a.read_text()), json.loads(b.read_text())
        assert a.relative_to(tmp_path / "local") == b.relative_to(tmp_path / "ray")
        update = int(a.relative_to(tmp_path / "local").parts[1].split("-")[1])
        if update > raced:
            continue
        if same_up_to_a_race(ta["steps"], tb["steps"]) is not None:
            raced = update
            continue
        assert ta["tokens"]["token_ids"] == tb["tokens"]["token_ids"]  # same texts: same tokens
        assert ta["tokens"]["loss_mask"] == tb["tokens"]["loss_mask"]
        assert ta["verifier"]["reward"] == tb["verifier"]["reward"]
    assert raced > 0, "the first update raced: nothing left to compare"
    for i in range(raced):
        assert [rows["ray"][i][k] for k in keys] == [rows["local"][i][k] for k in keys]
        assert rows["ray"][i]["loss"] == pytest.approx(rows["local"][i]["loss"])
    assert not any(label.startswith("train-ray-") for label in run_labels(client))


def kill_host_during_trial_1(out: Path, ray_address: str, run: subprocess.Popen) -> str:
    """Once trial 0 has finished and trial 1 has run its first step, kill the run's host
    actor (ray.kill) during trial 1's `sleep`; its name. Bounded: 180 s."""
    import logging

    import ray

    ray.init(address=ray_address, log_to_driver=False, logging_level=logging.WARNING)
    try:
        deadline = time.monotonic() + 180
        first, second = out / "hello-world" / "attempt-0", out / "hello-world" / "attempt-1"
        while time.monotonic() < deadline and run.poll() is None:
            steps = second / "steps.jsonl"
            if (first / "result.json").is_file() and steps.is_file() and steps.read_text():
                names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                         if a["namespace"] == "termcredit" and out.name in a["name"]]
                time.sleep(0.5)  # into the `sleep 8`
                ray.kill(ray.get_actor(names[0], namespace="termcredit"), no_restart=True)
                return names[0]
            time.sleep(0.05)
        raise AssertionError("trial 1 never started its second step")
    finally:
        ray.shutdown()


def test_a_killed_host_actor_costs_its_episode_and_the_run_goes_on(ray_address, client,
                                                                    tmp_path):
    from termcredit.trainer.train import integrity_counts, select_group
    from termcredit.trialdir import load_trajectory

    out = tmp_path / "killed"
    run = ray_replay_run(tmp_path, "echo 'Hello, world!' > /app/hello.txt\nsleep 8\n", out,
                         ray_address, attempts=3, concurrency=1)
    try:
        kill_host_during_trial_1(out, ray_address, run)
        _, stderr = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, stderr[-4000:]
    res = json.loads((out / "result.json").read_text())
    by_attempt = {t["attempt"]: t for t in res["trials"]}
    assert res["complete"] and res["n_trials"] == 3 and res["n_errors"] == 1
    assert [by_attempt[k]["reward"] for k in (0, 1, 2)] == [1.0, 0.0, 1.0]  # the run went on
    assert "host actor" in by_attempt[1]["error"] and "gone" in by_attempt[1]["error"]
    assert "replaced" in stderr  # trial 2 ran on a new host actor
    trajs = [load_trajectory(out / "hello-world" / f"attempt-{k}") for k in (0, 1, 2)]
    lost = trajs[1]
    assert lost.termination == "infra_error" and "host actor" in lost.info["infra_error"]
    assert [s.command.command for s in lost.steps] == ["echo 'Hello, world!' > /app/hello.txt"]
    assert lost.verifier is None  # no verdict on a lost sandbox
    assert select_group(trajs) == [trajs[0], trajs[2]]  # masked: never trains
    assert integrity_counts(trajs)["infra_episodes"] == 1.0  # counted
    assert res["run_id"] not in run_labels(client)  # the dead actor's containers too


def test_ctrl_c_removes_every_container_of_the_run(ray_address, client, tmp_path):
    import signal

    out = tmp_path / "interrupted"
    run = ray_replay_run(tmp_path, "sleep 60\n", out, ray_address, attempts=2, concurrency=2)
    try:
        starts = [out / "hello-world" / f"attempt-{k}" / "trace" / "shell-start.strace"
                  for k in (0, 1)]
        deadline = time.monotonic() + 180
        while not all(p.is_file() for p in starts) and time.monotonic() < deadline:
            assert run.poll() is None, run.communicate()[1][-4000:]
            time.sleep(0.1)
        time.sleep(1.0)  # both `sleep 60` running in their containers
        run_id = tomllib.loads((out / "config.toml").read_text())["run"]["run_id"]
        assert len([c for c in client.containers.list(
            filters={"label": f"termcredit.run={run_id}"})]) == 2
        run.send_signal(signal.SIGINT)
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 130, stderr[-4000:]
    assert "interrupted: removing this run's containers" in stderr
    assert run_id not in run_labels(client)
    assert json.loads((out / "result.json").read_text())["complete"] is False
