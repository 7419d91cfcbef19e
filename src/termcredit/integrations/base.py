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

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..depgpo.trial_hook import default_hooks
from ..estimators.depgpo import DepGPO
from ..estimators.rewards import training_reward
from ..harness.actions import SYSTEM_PROMPT
from ..harness.backend import BackendSettings
from ..harness.episode import Episode, task_spec
from ..harness.runner import RunnerSettings, TrialRunner
from ..harness.textenv import TextEnv
from ..records import TokenLayout, Trajectory
from ..sandbox import SandboxPool, docker_client, gc
from ..tasks import Task
from ..tracer.choice import DEFAULT_TRACER, for_backend, resolve_tracer

log = logging.getLogger(__name__)


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
                 agent: str = "engine", instance: int = 0, tracer: str = "strace"):
        ep = Episode(task, pool, task_spec(task, image, tracer=tracer), trial_dir, agent=agent,
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
    """Opens ``HarnessEpisode``s: task images built once per (task, instance) and sandboxes
    from one pool owned by ``run_id``, both the one trial runner's (harness/runner.py; its
    backend, local by default, and the default image map)."""

    run_id: str
    max_turns: int = 6
    command_timeout: float = 20.0
    obs_chars: int = 600
    backend: BackendSettings = field(default_factory=BackendSettings)
    tracer: str = "strace"  # the resolved backend tracing the sandboxes (tracer/choice.py)

    def __post_init__(self) -> None:
        self.runner = TrialRunner(RunnerSettings(self.backend, command_timeout=self.command_timeout,
                                                 tracer=self.tracer), self.run_id)

    @property
    def pool(self) -> Any:
        return self.runner.pool

    def image(self, task: Task, instance: int = 0) -> str:
        return self.runner.image(task, instance)

    def open(self, task: Task, trial_dir: str | Path, instance: int = 0,
             max_turns: int | None = None) -> HarnessEpisode:
        return HarnessEpisode(task, self.image(task, instance), self.pool, trial_dir,
                              max_turns=max_turns or self.max_turns,
                              command_timeout=self.command_timeout,
                              obs_chars=self.obs_chars, instance=instance, tracer=self.tracer)

    def close(self) -> None:
        """Every sandbox of the run removed: the runner closes its backend's pool, then (local
        engine) whatever the run still owns is swept by its run id."""
        self.runner.close()
        if self.backend.name == "local":
            gc(docker_client(), run_id=self.run_id)


_POOLS: dict[str, HarnessEnvs] = {}  # run id -> its images and sandbox pool, per process
_LOCK = threading.Lock()


def setting(config: Any, key: str, default: Any) -> Any:
    """A setting from an engine's config (a dict, an OmegaConf node or an object) or the
    default."""
    if config is None:
        return default
    value = config.get(key, default) if hasattr(config, "get") else getattr(config, key, default)
    return default if value is None else value


def envs_for(config: Any, engine: str) -> HarnessEnvs:
    """The process's ``HarnessEnvs`` for the config's ``run_id`` (default: the engine's name
    and the process id), created on first use: engines make environments one row at a time,
    and every row of a process shares the images and the sandbox pool. ``tracer`` (auto,
    ebpf or strace; default auto) is resolved as ``termcredit run`` resolves it."""
    run_id = str(setting(config, "run_id", f"{engine}-{os.getpid()}"))
    with _LOCK:
        if run_id not in _POOLS:
            choice = str(setting(config, "tracer", DEFAULT_TRACER))
            tracer, note = resolve_tracer(choice)  # ebpf where it cannot run: an error
            tracer, note = for_backend(choice, tracer, note, BackendSettings().name)
            if note:
                log.info("termcredit %s: %s", engine, note)
            _POOLS[run_id] = HarnessEnvs(
                run_id=run_id, command_timeout=float(setting(config, "command_timeout", 20.0)),
                obs_chars=int(setting(config, "obs_chars", 600)), tracer=tracer)
        return _POOLS[run_id]


def close_all() -> None:
    """Release every pool this process opened (their sandboxes removed)."""
    with _LOCK:
        for envs in _POOLS.values():
            envs.close()
        _POOLS.clear()


__all__ = ["HarnessEnvs", "HarnessEpisode", "Outcome", "SYSTEM_PROMPT", "TextEpisode", "close_all",
           "envs_for", "setting"]
