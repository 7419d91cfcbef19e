"""The agent loop ``termcredit`` on CPU: a scripted episode, each turn generated through a fake
of verl's server manager (the one fake here), checked token by token: prompt, replies as
sampled, observations masked, token rewards as the configured estimator reads them."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl", reason="verl lives in its own venv: `make venv-verl`, then "
                    ".venv-verl/bin/python -m pytest tests/verl_env")

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
import hydra  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (DictConfigWrap,  # noqa: E402
                                                     ToolListWrap, _agent_loop_registry)
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from termcredit.estimators.anchors import state_keys  # noqa: E402
from termcredit.harness.actions import SYSTEM_PROMPT  # noqa: E402
from termcredit.integrations.base import Outcome, close_all  # noqa: E402
from termcredit.integrations.step_facts import code, decode_facts, encode_facts  # noqa: E402
from termcredit.integrations.token_rewards import decode, encode  # noqa: E402
from termcredit.integrations.verl_agent import LOOPS_YAML, TermcreditAgentLoop  # noqa: E402
from termcredit.records import Step, TokenLayout, Trajectory  # noqa: E402
from termcredit.trainer.chat import ChatLayout  # noqa: E402
from termcredit.trainer.tiny import ensure_tiny  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
REPLIES = ["ls /app", "done"]
OBSERVATIONS = ["hello.txt", ""]


class FakeServer:
    """verl's server manager as the loop uses it: ``generate`` -> TokenOutput; each call's
    prompt and sampling parameters kept."""

    def __init__(self, replies: list[list[int]], logprobs: bool = True):
        self.replies, self.calls, self.logprobs = list(replies), [], logprobs

    async def generate(self, *, request_id: str, prompt_ids: list[int],
                       sampling_params: dict[str, Any], **_kw: Any) -> TokenOutput:
        self.calls.append((request_id, list(prompt_ids), dict(sampling_params)))
        ids = self.replies.pop(0)
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids) if self.logprobs else None)


class ScriptedEpisode:
    """Two turns whose observations are fixed; finish gives R = 1 and weights (0.25, 1.5)."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, bool]] = []
        self.tokens: TokenLayout | None = None

    def start(self) -> str:
        return "say hi"

    def act(self, reply: str, *, truncated: bool = False) -> tuple[str, bool]:
        self.replies.append((reply, truncated))
        k = len(self.replies) - 1
        return OBSERVATIONS[k], k == 1

    def finish(self, tokens: TokenLayout | None = None) -> Outcome:
        self.tokens = tokens
        steps = [Step(index=0, action=REPLIES[0], action_key="ls /app"),
                 Step(index=1, action=REPLIES[1], action_key="done")]
        return Outcome(reward=1.0, step_weights=[0.25, 1.5],
                       trajectory=Trajectory(task="t", instruction="say hi", agent="verl",
                                             steps=steps, tokens=tokens))


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return AutoTokenizer.from_pretrained(ensure_tiny("micro"))


def run_loop(tokenizer: Any, estimator: str, replies: list[list[int]], use_v1: bool = True,
             episode: Any = None, logprobs: bool = True, **settings: Any):
    """One row through the loop; ``episode``: the scripted one (default) or None for a real
    sandbox of hello-world (``settings``: the loop's, e.g. run_id, out_dir)."""
    config = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {"prompt_length": 2048, "response_length": 1024}},
        "data": {}, "algorithm": {"adv_estimator": estimator}, "trainer": {"use_v1": use_v1}})
    server = FakeServer(replies, logprobs)
    episode = ScriptedEpisode() if episode is None and not settings else episode

    async def go():
        loop = TermcreditAgentLoop(trainer_config=DictConfigWrap(config), server_manager=server,
                                   tokenizer=tokenizer, processor=None, dataset_cls=None,
                                   data_config=DictConfigWrap(config.data), max_new_tokens=32,
                                   **settings)
        if episode is not None:
            loop.open_episode = lambda _task, _dir: episode
        return await loop.run({"temperature": 1.0}, raw_prompt=[],
                              extra_info={"task_dir": str(REPO / "tasks" / "hello-world")})
    return asyncio.run(go()), server, episode


def encoded(tokenizer: Any, end_id: int) -> list[list[int]]:
    return [tokenizer.encode(r, add_special_tokens=False) + [end_id] for r in REPLIES]


def test_registered_by_name_and_in_its_yaml(tokenizer: Any) -> None:
    assert _agent_loop_registry["termcredit"]["_target_"] == \
        "termcredit.integrations.verl_agent.TermcreditAgentLoop"
    entry = OmegaConf.load(LOOPS_YAML)[0]
    assert entry.name == "termcredit"
    # what verl's AgentLoopWorker does with a registry entry: hydra.utils.instantiate, settings
    # from the entry, the rest from the worker
    entry.max_turns = 4
    config = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {"prompt_length": 64, "response_length": 64}},
        "data": {}, "algorithm": {"adv_estimator": "grpo"}, "trainer": {}})

    async def make():
        return hydra.utils.instantiate(
            config=entry, trainer_config=DictConfigWrap(config), server_manager=None,
            tokenizer=tokenizer, processor=None, hf_model_type=None, dataset_cls=None,
            data_config=DictConfigWrap(config.data), tools=ToolListWrap([]))
    loop = asyncio.run(make())
    assert isinstance(loop, TermcreditAgentLoop)
    assert (loop.max_turns, loop.max_new_tokens, loop.estimator) == (4, 256, "grpo")


def test_depgpo_row_token_by_token(tokenizer: Any) -> None:
    layout = ChatLayout(tokenizer)
    a1, a2 = encoded(tokenizer, layout.end_id)
    out, server, episode = run_loop(tokenizer, "depgpo", [a1, a2])
    prompt = layout.prompt_ids(SYSTEM_PROMPT, "say hi")
    o1, o2 = (layout.observation_ids(o) for o in OBSERVATIONS)
    assert out.prompt_ids == prompt
    assert out.response_ids == a1 + o1 + a2 + o2
    mask = [1] * len(a1) + [0] * len(o1) + [1] * len(a2) + [0] * len(o2)
    assert out.response_mask == mask
    assert out.response_logprobs == [-0.5 if m else 0.0 for m in mask]
    # the second turn is generated after the first reply and its observation, token-exact
    assert [c[1] for c in server.calls] == [prompt, prompt + a1 + o1]
    assert len({c[0] for c in server.calls}) == 1  # one session per episode
    assert all(c[2]["max_tokens"] == 32 and c[2]["temperature"] == 1.0 for c in server.calls)
    assert episode.replies == [(r, False) for r in REPLIES]
    assert episode.tokens.step_spans == [[len(prompt), len(prompt) + len(a1)],
                                         [len(prompt + a1 + o1), len(prompt + a1 + o1 + a2)]]
    rewards = encode(1.0, [0.25, 1.5], mask)
    assert out.token_rewards == rewards and out.reward_score == 1.0
    row = out.as_dict()  # what verl's v1 trainer stores: our token rewards as rm_scores
    assert torch.equal(row["rm_scores"], torch.tensor(rewards, dtype=torch.float32))
    assert float(row["rm_scores"].sum()) == pytest.approx(1.0, abs=1e-6)
    assert out.extra_fields["step_weights"] == [0.25, 1.5]


def test_gigpo_and_grpo_rows(tokenizer: Any) -> None:
    layout = ChatLayout(tokenizer)
    a1, a2 = encoded(tokenizer, layout.end_id)
    out, _s, _e = run_loop(tokenizer, "gigpo", [a1, a2])
    steps = decode_facts(out.token_rewards, out.response_mask).steps
    assert [s.action_key for s in steps] == [
        s.action_key for s in decode_facts(
            encode_facts(1.0, ["x", "y"], ["ls /app", "done"], [False, False],
                         out.response_mask), out.response_mask).steps]
    # neither step ran a command: both start from the initial state, one anchor
    empty = f"a{code(state_keys(Trajectory(task='t', instruction='', agent='a', steps=[Step(0, '')]))[0], 24)}"
    assert [s.anchor_obs for s in steps] == [empty, empty]
    assert sum(out.token_rewards) == pytest.approx(1.0, abs=1e-9)
    # verl's own estimators: R on the last loss token, as verl places a scalar reward; a server
    # that gives no log-probs: none in the row (zeros would read as the rollout's)
    out, _s, _e = run_loop(tokenizer, "grpo", [a1, a2], logprobs=False)
    assert out.response_logprobs is None
    last = max(i for i, m in enumerate(out.response_mask) if m)
    assert out.token_rewards == [1.0 if i == last else 0.0 for i in range(len(out.response_mask))]


def test_a_reply_cut_by_the_token_limit(tokenizer: Any) -> None:
    layout = ChatLayout(tokenizer)
    a1, a2 = encoded(tokenizer, layout.end_id)
    out, _s, episode = run_loop(tokenizer, "depgpo", [a1[:-1], a2])  # no end-of-turn id
    assert episode.replies[0] == (REPLIES[0], True)
    o1 = layout.observation_ids(OBSERVATIONS[0], after_truncated=True)
    assert o1[0] == layout.end_id  # the harness closes the turn itself, without loss
    assert out.response_ids[:len(a1) - 1 + len(o1)] == a1[:-1] + o1


def test_termcredit_estimators_need_the_v1_trainer(tokenizer: Any) -> None:
    with pytest.raises(ValueError, match="use_v1"):
        run_loop(tokenizer, "depgpo", [], use_v1=False)


@pytest.mark.docker
@pytest.mark.slow
def test_a_real_sandbox_episode_through_the_loop(tokenizer: Any, tmp_path: Path,
                                                 base_ref: str) -> None:
    """hello-world in a real sandbox, replies scripted: the right command, then ``done``; the
    verifier's reward and DepGPO's weights of the real trajectory come back in the row."""
    layout = ChatLayout(tokenizer)
    good = tokenizer.encode("echo 'Hello, world!' > /app/hello.txt",
                            add_special_tokens=False) + [layout.end_id]
    done = tokenizer.encode("done", add_special_tokens=False) + [layout.end_id]
    try:
        out, server, _e = run_loop(tokenizer, "depgpo", [good, done], max_turns=3,
                                   command_timeout=30.0, out_dir=str(tmp_path),
                                   run_id=f"pytest-verl-{secrets.token_hex(3)}")
    finally:
        close_all()
    assert out.reward_score == 1.0 and not out.extra_fields["infra"]
    assert len(server.calls) == 2
    weights = out.extra_fields["step_weights"]
    assert len(weights) == 2
    reward, decoded = decode(out.token_rewards, out.response_mask)
    assert reward == pytest.approx(1.0)
    # DepGPO's weights, renormalised to the row's own token counts (the loop's layout is the
    # one the weights were computed on, so they come back as they were)
    assert decoded == pytest.approx(weights, abs=1e-5)
    trial = Path(out.extra_fields["trial_dir"])
    assert trial.is_relative_to(tmp_path) and (trial / "trajectory.json").exists()
