"""The episode API the engine adapters drive, and its implementation over the harness.

An engine (TRL, skyrl-gym, verl) sees a terminal task as text in, text out:

    ep = envs.open(task, trial_dir)
    first = ep.start()               # the first observation: the task's instruction
    obs, done = ep.act(reply)        # the model's reply, parsed and run in the sandbox
    out = ep.finish()                # verified: out.reward, out.step_weights, out.trajectory

``TextEpisode`` is the protocol the adapters are written against; ``HarnessEpisode`` implements
it over the harness's text environment (``harness/textenv.py``), the one termcredit's own
trainer and the ``openai:`` agent use, so a reply means the same in every engine.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..depgpo.trial_hook import default_hooks
from ..estimators.depgpo import DepGPO
from ..estimators.rewards import training_reward
from ..harness.episode import Episode, task_spec
from ..records import TokenLayout, Trajectory
from ..sandbox import SandboxPool, docker_client, ensure_base_image
from ..tasks import Task
from ..tasks.build import build_image
from ..harness.actions import SYSTEM_PROMPT
from ..harness.textenv import TextEnv


@dataclass
class Outcome:
    """A finished episode: the reward training reads, DepGPO's weight of each step
    (A_t = Â · w_t; token-normalised when the trajectory has tokens), and the trajectory the
    estimators read (steps, traces, verifier)."""

    reward: float
    step_weights: list[float]
    trajectory: Trajectory
    infra: bool = False  # the harness failed (not the agent): an engine should mask it


class TextEpisode(Protocol):
    def start(self) -> str: ...

    def act(self, reply: str, *, truncated: bool = False) -> tuple[str, bool]: ...

    def finish(self, tokens: TokenLayout | None = None) -> Outcome: ...


class HarnessEpisode:
    """One episode of a task in a fresh sandbox; ``act`` takes the model's whole reply."""

    def __init__(self, task: Task, image: str, pool: SandboxPool, trial_dir: str | Path, *,
                 max_turns: int = 6, command_timeout: float = 20.0, obs_chars: int = 600,
                 agent: str = "engine", instance: int = 0):
        ep = Episode(task, pool, task_spec(task, image), trial_dir, agent=agent,
                     instance=instance, command_timeout=command_timeout, hooks=default_hooks())
        self.env = TextEnv(ep, obs_chars=obs_chars)
        self.max_turns = max_turns

    @property
    def episode(self) -> Episode:
        return self.env.episode  # type: ignore[return-value]

    @property
    def trajectory(self) -> Trajectory:
        return self.env.trajectory

    @property
    def done(self) -> bool:
        return self.env.done

    def start(self) -> str:
        """Start the sandbox; the instruction is the first observation. A sandbox that could
        not start is an infrastructure failure and the episode is done at once."""
        return self.env.init()

    def act(self, reply: str, *, truncated: bool = False) -> tuple[str, bool]:
        """Run the reply (a command, ``done``, or invalid text, parsed as the trainer parses
        it); ``truncated``: the reply was cut by the token limit. Returns what the model sees
        next and whether the episode is over (done, max turns, a limit, a failure)."""
        if self.done:
            return "", True
        obs, done = self.env.act(reply, finished=not truncated)
        if not done and len(self.trajectory.steps) >= self.max_turns:
            self.env.end("max_turns")
        return obs, self.done

    def finish(self, tokens: TokenLayout | None = None) -> Outcome:
        """Verify and write the trial; ``tokens``: the engine's token layout of the episode
        (its step spans let DepGPO weigh steps by their tokens)."""
        if tokens is not None:
            self.trajectory.tokens = tokens
        self.env.end("max_turns")  # no-op when the episode already ended
        fin = self.env.close(weigh=lambda t: DepGPO().step_weights(t) if t.steps else None)
        traj = fin.trajectory
        return Outcome(reward=training_reward(traj), trajectory=traj, infra=fin.infra,
                       step_weights=list(fin.weights.w) if fin.weights is not None else [])


@dataclass
class HarnessEnvs:
    """Opens ``HarnessEpisode``s: task images built once each (on the default base image),
    sandboxes from one pool owned by ``run_id``."""

    run_id: str
    client: Any = None
    max_turns: int = 6
    command_timeout: float = 20.0
    obs_chars: int = 600
    ahead: int = 0
    _images: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.client = self.client or docker_client()
        self.pool = SandboxPool(self.client, self.run_id, ahead=self.ahead)

    def image(self, task: Task) -> str:
        with self._lock:  # one build per task, whichever thread asks first
            if task.name not in self._images:
                base = ensure_base_image(self.client)
                self._images[task.name] = build_image(self.client, task, base_ref=base)
            return self._images[task.name]

    def open(self, task: Task, trial_dir: str | Path) -> HarnessEpisode:
        return HarnessEpisode(task, self.image(task), self.pool, trial_dir,
                              max_turns=self.max_turns, command_timeout=self.command_timeout,
                              obs_chars=self.obs_chars)

    def close(self) -> None:
        from ..sandbox import gc

        self.pool.close()
        gc(self.client, run_id=self.run_id)


__all__ = ["HarnessEnvs", "HarnessEpisode", "Outcome", "SYSTEM_PROMPT", "TextEpisode"]
