"""verl's agent loop ``termcredit``: one termcredit episode (a task in a fresh sandbox) per row,
each turn generated through verl's server manager, token-exact.

    # a verl v1 run (trainer.use_v1=True), with the termcredit plugin installed:
    data rows: {"agent_name": "termcredit", "extra_info": {"task_dir": "tasks/hello-world"}, ...}
    algorithm.adv_estimator=depgpo        # or gigpo, adastep, grpo, ...

The response is ``[a1][obs1][a2]...[aT][obsT]``: the sampled ids as sampled (mask 1, with
their log-probs), every observation's ids from the tokenizer's chat template (mask 0, as
termcredit's own trainer lays them out, ``trainer/chat.py``), the last turn closed by its
observation too. The row's token rewards are written for the configured estimator: DepGPO's
step weights (``token_rewards.encode``), GiGPO's/AdaStep's step facts
(``step_facts.encode_facts``), or, for verl's own estimators, R on the last loss token. verl's
v1 trainer reads them as they are (``AgentLoopOutput.as_dict``); its legacy trainer keeps only
one scalar per row, so termcredit's estimators need ``trainer.use_v1=True``.

Settings (keyword arguments of the agent-loop entry, e.g. in ``agent_loop_config_path``):
``max_turns`` (6), ``max_new_tokens`` per reply (256), ``command_timeout``, ``obs_chars``,
``out_dir`` (trial directories; default a temporary one), ``run_id`` (owner of the sandboxes).
Needs the ``verl`` extra."""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path
from typing import Any
from uuid import uuid4

import torch
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from ..estimators.anchors import state_keys
from ..records import TokenLayout
from ..tasks import Task, load_task
from ..trainer.chat import ChatLayout, LayoutBuilder
from .base import SYSTEM_PROMPT, Outcome, TextEpisode, envs_for, setting
from .step_facts import SLOTS, encode_facts
from .token_rewards import encode

AGENT_NAME = "termcredit"
# verl's agent_loop_config_path for it (workers that never import this module find it there)
LOOPS_YAML = Path(__file__).with_name("verl_agent_loops.yaml")
STEP_FACTS = ("gigpo", "adastep")  # estimators that read step_facts rows


class TermcreditOutput(AgentLoopOutput):
    """An agent-loop output whose token rewards are the row's own (one per response token),
    not verl's one scalar on the last token."""

    token_rewards: list[float]

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        out["rm_scores"] = torch.tensor(out.pop("token_rewards"), dtype=torch.float32)
        return out


def token_rewards(estimator: str, outcome: Outcome, mask: list[int]) -> list[float]:
    """The row's token rewards as ``estimator`` reads them (verl's own: R on the last loss
    token, what verl itself does with a scalar reward)."""
    if estimator == "depgpo":
        return encode(outcome.reward, outcome.step_weights, mask)
    traj = outcome.trajectory
    steps = traj.steps
    if estimator in STEP_FACTS:
        return encode_facts(outcome.reward, state_keys(traj), [s.action_key for s in steps],
                            [s.invalid for s in steps], mask)
    out = [0.0] * len(mask)
    ones = [i for i, m in enumerate(mask) if m]
    if ones:
        out[ones[-1]] = outcome.reward
    return out


@register(AGENT_NAME)
class TermcreditAgentLoop(AgentLoopBase):
    def __init__(self, *args: Any, max_turns: int = 6, max_new_tokens: int = 256,
                 command_timeout: float = 20.0, obs_chars: int = 600, out_dir: str | None = None,
                 run_id: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.max_turns, self.max_new_tokens = int(max_turns), int(max_new_tokens)
        self.env_settings = {"command_timeout": command_timeout, "obs_chars": obs_chars,
                             "run_id": run_id}
        self.out_dir = Path(out_dir or tempfile.gettempdir()) / "termcredit-verl"
        self.response_length = int(self.rollout_config.response_length)
        self.estimator = str(setting(self.config.get("algorithm"), "adv_estimator", "grpo"))
        use_v1 = bool(setting(self.config.get("trainer"), "use_v1", False))
        if not use_v1 and (self.estimator == "depgpo" or self.estimator in STEP_FACTS):
            raise ValueError(f"{self.estimator} reads per-token rewards, which only verl's v1 "
                             "trainer keeps: set trainer.use_v1=True")

    def open_episode(self, task: Task, trial_dir: Path) -> TextEpisode:
        """A fresh sandbox of ``task`` from this process's pool."""
        return envs_for(self.env_settings, "verl").open(task, trial_dir, max_turns=self.max_turns)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        info = kwargs.get("extra_info") or {}
        task_dir = kwargs.get("task_dir") or info.get("task_dir")
        if not task_dir:
            raise ValueError("termcredit agent loop: the row needs extra_info.task_dir")
        task = load_task(task_dir)
        trial = self.out_dir / f"{task.name.replace('/', '_')}-{secrets.token_hex(4)}"
        ep = await self.loop.run_in_executor(None, self.open_episode, task, trial)
        try:
            layout = ChatLayout(self.tokenizer)
            first = await self.loop.run_in_executor(None, ep.start)
            b = LayoutBuilder(layout.prompt_ids(SYSTEM_PROMPT, first))
            n_prompt = len(b.token_ids)
            logprobs = await self._play(ep, b, layout, n_prompt, sampling_params)
            outcome = await self.loop.run_in_executor(None, ep.finish, b.layout)
        except BaseException:  # interrupted or crashed: keep the steps, free the sandbox
            episode = getattr(ep, "episode", None)
            if episode is not None:
                episode.abandon()
            raise
        return self._output(b.layout, n_prompt, outcome, len(outcome.trajectory.steps), logprobs)

    async def _play(self, ep: TextEpisode, b: LayoutBuilder, layout: ChatLayout, n_prompt: int,
                    sampling_params: dict[str, Any]) -> bool:
        """Turns until the episode ends or the response has no room for another reply and its
        closing observation; every reply is followed by its observation (mask 0). Returns
        whether the server gave every reply's log-probs."""
        request_id = uuid4().hex  # one id per episode: verl keeps a session on one server
        done, logprobs = False, True
        while not done:
            room = self.response_length - (len(b.token_ids) - n_prompt) - SLOTS
            if room < 1:
                break
            params = dict(sampling_params, max_tokens=min(self.max_new_tokens, room))
            out = await self.server_manager.generate(request_id=request_id,
                                                     prompt_ids=list(b.token_ids),
                                                     sampling_params=params)
            ids = list(out.token_ids)
            logprobs = logprobs and out.log_probs is not None
            finished = bool(ids) and ids[-1] == layout.end_id
            b.add_action(ids, out.log_probs)
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            obs, done = await self.loop.run_in_executor(
                None, lambda: ep.act(text, truncated=not finished))
            b.add_observation(layout.observation_ids(obs, after_truncated=not finished))
        return logprobs

    def _output(self, lay: TokenLayout, n_prompt: int, outcome: Outcome, steps: int,
                logprobs: bool) -> TermcreditOutput:
        """verl's row: the response cut to ``response_length``, token rewards on that cut; no
        log-probs unless the server gave them (zeros would read as the rollout's own)."""
        end = n_prompt + self.response_length
        mask = lay.loss_mask[n_prompt:end]
        return TermcreditOutput(
            prompt_ids=lay.token_ids[:n_prompt], response_ids=lay.token_ids[n_prompt:end],
            response_mask=mask, response_logprobs=lay.logprobs[n_prompt:end] if logprobs else None,
            reward_score=outcome.reward, token_rewards=token_rewards(self.estimator, outcome, mask),
            num_turns=2 * steps + 1, metrics={},
            extra_fields={"step_weights": outcome.step_weights, "infra": outcome.infra,
                          "trial_dir": outcome.trajectory.trial_dir,
                          "turn_scores": [], "tool_rewards": []})
