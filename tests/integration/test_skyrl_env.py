"""The skyrl-gym environment `termcredit` through skyrl-gym's own API, on hello-world in real
sandboxes: per-step observations, the verifier's reward at the end, DepGPO's step weights in the
last step's metadata, and those weights carried through token rewards and back."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
import skyrl_gym

import termcredit.integrations.skyrl as tc_skyrl
from termcredit.integrations.token_rewards import decode, encode

pytestmark = [pytest.mark.docker, pytest.mark.slow]
HELLO = str(Path(__file__).resolve().parents[2] / "tasks" / "hello-world")


@pytest.fixture
def config(tmp_path, base_ref):
    cfg = {"run_id": f"pytest-skyrl-{secrets.token_hex(3)}", "out_dir": str(tmp_path),
           "command_timeout": 30.0}
    yield cfg
    tc_skyrl.close_all()


def play(config: dict, replies: list[str], max_turns: int = 3) -> tuple[list[dict], list[str]]:
    env = skyrl_gym.make("termcredit", env_config=config,
                         extras={"task_dir": HELLO, "max_turns": max_turns})
    prompt, info = env.init([])
    assert info == {"task": "hello-world"}  # the loader's name, without Harbor's org
    assert prompt[0]["role"] == "system" and prompt[1]["content"].startswith("Create")
    outs, seen = [], []
    for reply in replies:
        out = env.step(reply)
        outs.append(out)
        seen += [m["content"] for m in out["observations"]]
        if out["done"]:
            break
    env.close()
    return outs, seen


def test_solved_episode_reward_and_depgpo_weights(config):
    outs, seen = play(config, ["ls /app", "echo 'Hello, world!' > /app/hello.txt", "done"])
    assert [o["done"] for o in outs] == [False, False, True]
    assert [o["reward"] for o in outs] == [0.0, 0.0, 1.0]
    assert seen == ["exit code: 0", "exit code: 0"]  # an empty /app lists nothing
    meta = outs[-1]["metadata"]
    assert meta["reward"] == 1.0 and meta["infra"] is False
    assert Path(meta["trial_dir"], "result.json").is_file()
    # `ls` reaches nothing the verifier reads (credit 0), the echo writes what it reads, `done`
    # is untraced: f = (0, 2, 1) up to the token normalisation
    w = meta["step_weights"]
    assert w[0] == 0.0 and w[1] == pytest.approx(2 * w[2])
    # replies of 3, 4 and 2 tokens: w ∝ (0, 2, 1), Σ n f = 10, N = 9 -> (0, 1.8, 0.9)
    mask = [1] * 3 + [0] * 5 + [1] * 4 + [0] * 5 + [1] * 2
    row = encode(meta["reward"], w, mask)
    assert sum(row) == pytest.approx(1.0)
    reward, back = decode(row, mask)
    assert reward == pytest.approx(1.0) and back == pytest.approx([0.0, 1.8, 0.9])


def test_wrong_answer_and_turn_limit(config):
    outs, seen = play(config, ["echo 'Hello' > /app/hello.txt", "cat /app/hello.txt"],
                      max_turns=2)
    assert [o["done"] for o in outs] == [False, True]  # the second reply hits max_turns
    assert outs[-1]["reward"] == 0.0
    assert seen == ["exit code: 0"]
    assert len(outs[-1]["metadata"]["step_weights"]) == 2
