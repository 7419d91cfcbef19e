"""The skyrl-gym environment ``termcredit``: a Harbor task directory as a multi-turn text
environment (one shell command per reply, its output as the next user message, the verifier's
reward at the end). Importing this module registers it:

    import termcredit.integrations.skyrl  # in the process that makes the envs (SkyRL's entry)
    env = skyrl_gym.make("termcredit", env_config={"max_turns": 6},
                         extras={"task_dir": "tasks/hello-world"})
    prompt, info = env.init([])            # [] -> termcredit's system prompt + the instruction
    out = env.step("ls /app")              # observations, reward (0 until done), done, metadata

The last step's metadata carries what DepGPO needs beyond the reward: ``step_weights`` (one per
reply) and ``infra`` (the harness failed: mask the row). A SkyRL generator places step rewards
at turn ends; to train with DepGPO it writes ``token_rewards.encode(reward, step_weights,
loss_mask)`` as the row's token rewards instead (the row still sums to R) and registers
``token_rewards.depgpo_advantage`` as the ``depgpo`` estimator (skyrl-train, Python >= 3.12).

``env_config`` (SkyRL's ``skyrl_gym_config.termcredit``): ``max_turns``, ``command_timeout``,
``obs_chars``, ``out_dir`` (trial directories; default a temporary one), ``run_id`` (owner
of the sandboxes; one pool per id and process). ``extras``: ``task_dir`` (required),
``max_turns`` (SkyRL's generator sets it), ``trial_dir``. Needs the ``skyrl`` extra."""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path
from typing import Any

from skyrl_gym.envs import register
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
from skyrl_gym.envs.registration import registry

from ..tasks import load_task
from .base import SYSTEM_PROMPT, HarnessEpisode, envs_for, setting
from .base import close_all  # noqa: F401  (SkyRL users release the pools through this module)

ENV_ID = "termcredit"


class TermcreditEnv(BaseTextEnv):
    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None):
        super().__init__()
        extras = extras or {}
        info = extras.get("extra_info") or {}
        task_dir = extras.get("task_dir") or info.get("task_dir")
        if not task_dir:
            raise ValueError("termcredit env: extras.task_dir (a task directory) is required")
        self.task = load_task(task_dir)
        self.max_turns = int(extras.get("max_turns") or setting(env_config, "max_turns", 6))
        out = extras.get("trial_dir") or Path(
            setting(env_config, "out_dir", tempfile.gettempdir())) / "termcredit-skyrl" / \
            f"{self.task.name.replace('/', '_')}-{secrets.token_hex(4)}"
        self.episode: HarnessEpisode = envs_for(env_config, "skyrl").open(
            self.task, out, max_turns=self.max_turns)
        self.finished: dict[str, Any] | None = None

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Start the sandbox. An empty prompt becomes termcredit's system prompt and the
        task's instruction (what termcredit's own trainer shows); a dataset's prompt is kept."""
        instruction = self.episode.start()
        if not prompt:
            prompt = [{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": instruction}]
        return prompt, {"task": self.task.name}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        obs, done = self.episode.act(action)
        if not done:
            return BaseTextEnvStepOutput(observations=[{"role": "user", "content": obs}],
                                         reward=0.0, done=False, metadata={})
        out = self.episode.finish()
        self.finished = {"reward": out.reward, "step_weights": out.step_weights,
                         "infra": out.infra, "trial_dir": out.trajectory.trial_dir}
        return BaseTextEnvStepOutput(observations=[], reward=out.reward, done=True,
                                     metadata=dict(self.finished))

    def close(self) -> None:
        """A row cut off before it was done (SkyRL's length limit): the sandbox is released
        and the steps so far kept, without a verdict."""
        if self.finished is None:
            self.episode.episode.abandon()

    def get_metrics(self) -> dict[str, Any]:
        done = self.finished or {}
        return {"steps": self.turns, "reward": done.get("reward", 0.0),
                "infra": float(bool(done.get("infra")))}


if ENV_ID not in registry:  # importing the module twice (or from a worker) registers once
    register(id=ENV_ID, entry_point=f"{__name__}:TermcreditEnv")
