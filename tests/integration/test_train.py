"""Real training steps: micro policies, real sandboxes, every estimator; resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from termcredit.tasks import load_task
from termcredit.trainer.config import TrainConfig
from termcredit.trainer.policy import load_policy
from termcredit.trainer.sft import Demo, sft
from termcredit.trainer.train import Trainer

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
HELLO = str(REPO / "tasks" / "hello-world")
ROLLOUT = {"max_turns": 2, "max_new_tokens": 24, "command_timeout": 10.0}


def warm(tmp: Path, name: str, steps: int) -> str:
    """The micro model after `steps` of SFT on hello-world (right answer twice, a near miss
    once), so sampling at temperature 1 gives a mix of successes and failures."""
    torch.manual_seed(0)
    task = load_task(HELLO)
    good = Demo(task.instruction, [("echo 'Hello, world!' > /app/hello.txt", "exit code: 0"),
                                   ("done", "")])
    near = Demo(task.instruction, [("echo 'Hello world' > /app/hello.txt", "exit code: 0"),
                                   ("done", "")])
    policy = load_policy("micro", seed=0)
    sft(policy, [good, good, near], steps=steps, lr=3e-3, batch_size=8, seed=0)
    return str(policy.save(tmp / name))


@pytest.fixture(scope="module")
def policies(tmp_path_factory, base_ref):
    tmp = tmp_path_factory.mktemp("policies")
    return {"student": warm(tmp, "student", 60), "teacher": warm(tmp, "teacher", 120)}


def params(model_dir: str) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in load_policy(model_dir).model.state_dict().items()}


def latest_model(run_dir: Path) -> str:
    return str(sorted((run_dir / "checkpoints").glob("step-*"))[-1] / "model")


@pytest.mark.parametrize("algo", ["grpo", "gigpo", "adastep", "depgpo", "opd", "depgpo+opd",
                                  "depgpo[negative=errors,inside=true]"])
def test_two_real_steps_change_the_weights(algo, policies, tmp_path):
    cfg = TrainConfig(algo=algo, model=policies["student"], tasks=[HELLO], group_size=4,
                      steps=2, lr=1e-3, seed=1, rollout=dict(ROLLOUT),
                      teacher=policies["teacher"] if "opd" in algo else None)
    run_dir = Trainer(cfg, tmp_path / "run").run()
    rows = [json.loads(ln) for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1]
    for key in ("reward_mean", "success_rate", "loss", "kl", "loss/clip_frac", "adv_abs_mean",
                "zero_advantage_group", "tokens", "time/rollout_s", "time/credit_s",
                "time/update_s"):
        assert key in rows[0], key
    assert any(r["adv_abs_mean"] > 0 for r in rows), rows  # a learning signal existed
    before, after = params(policies["student"]), params(latest_model(run_dir))
    assert any(not torch.equal(before[k], after[k]) for k in before)
    first = sorted((run_dir / "rollouts" / "step-000000").rglob("trajectory.json"))[0]
    traj = json.loads(first.read_text())
    tok = traj["tokens"]
    assert len(tok["token_ids"]) == len(tok["loss_mask"]) == len(tok["logprobs"])
    assert len(tok["step_spans"]) == len(traj["steps"]) and traj["info"]["policy_version"] == 0
    if "opd" in algo:
        assert any(x != 0 for x in tok["teacher_logprobs"])
    if "inside" in algo:  # the policy's tokenizer told where each sampled token ends
        assert "estimator/inside_narrowed" in rows[0], rows[0]
        texts = traj["info"]["token_text"]
        assert len(texts) == len(traj["steps"])
        for (a, b), entry in zip(tok["step_spans"], texts):
            assert len(entry["ends"]) == b - a and entry["ends"] == sorted(entry["ends"])
            assert not entry["ends"] or entry["ends"][-1] == len(entry["text"])
    if algo in ("gigpo", "adastep"):  # anchor groups per key, on the same rollouts
        keys = [f"estimator/anchor_groups/{k}" for k in ("state", "observation", "history")]
        assert all(rows[0][k] >= 1 for k in keys), rows[0]


def test_zero_advantage_leaves_weights_alone(policies, tmp_path):
    """A group with identical rewards gives GRPO nothing to learn: no weight may move."""
    cfg = TrainConfig(algo="grpo", model="micro", tasks=[HELLO], group_size=2, steps=1,
                      lr=1e-2, seed=1, rollout=dict(ROLLOUT))
    run_dir = Trainer(cfg, tmp_path / "run").run()
    row = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert row["reward_mean"] == 0.0 and row["adv_abs_mean"] == 0.0  # random micro never wins
    before = {k: v for k, v in load_policy("micro").model.state_dict().items()}
    after = params(latest_model(run_dir))
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_resume_after_kill_loses_nothing(policies, tmp_path):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "termcredit.cli", "train", "--algo", "grpo", "--model",
           policies["student"], "--task", HELLO, "--group-size", "2", "--steps", "3",
           "--seed", "2", "--out", str(run_dir)]
    cfg_file = tmp_path / "small.toml"
    cfg_file.write_text("[rollout]\nmax_turns = 2\nmax_new_tokens = 24\ncommand_timeout = 10.0\n")
    proc = subprocess.Popen(cmd + ["--config", str(cfg_file)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while time.time() < deadline and not list((run_dir / "checkpoints").glob("step-*")):
        time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert done and done[0] == 0
    out = subprocess.run([sys.executable, "-m", "termcredit.cli", "train", "--resume",
                          str(run_dir)], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    steps = [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == [0, 1, 2]  # each step once: nothing lost, nothing repeated
    assert (run_dir / "checkpoints" / "step-000002" / "model").is_dir()
    assert list((run_dir / "tb").glob("events.out.tfevents.*"))


def test_sigterm_mid_run_leaves_no_container_and_keeps_finished_steps(policies, tmp_path):
    """`kill` (SIGTERM, what a scheduler or `timeout` sends) while a training run holds
    sandboxes: it exits as after Ctrl-C, its pools closed, its finished steps kept."""
    import docker

    from termcredit.sandbox.owner import LABEL_OWNER, owner_token

    run_dir = tmp_path / "run"
    cfg_file = tmp_path / "small.toml"
    cfg_file.write_text("[rollout]\nmax_turns = 2\nmax_new_tokens = 24\ncommand_timeout = 10.0\n")
    proc = subprocess.Popen([sys.executable, "-m", "termcredit.cli", "train", "--algo", "grpo",
                             "--model", policies["student"], "--task", HELLO, "--group-size",
                             "2", "--steps", "50", "--seed", "3", "--out", str(run_dir),
                             "--config", str(cfg_file)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    owner = owner_token(proc.pid)
    client = docker.from_env()

    def mine() -> list:
        # the low-level list: the high-level one inspects each container it lists, and one the
        # run removes in between raises NotFound
        return client.api.containers(all=True, filters={"label": f"{LABEL_OWNER}={owner}"})

    deadline = time.time() + 600
    while time.time() < deadline and not (list((run_dir / "checkpoints").glob("step-*"))
                                          and mine()):
        time.sleep(0.2)
    assert mine(), "the run never held a sandbox after its first step"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 130  # as after Ctrl-C
    assert mine() == []
    done = [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert done and done == list(range(len(done)))  # every finished step, once
