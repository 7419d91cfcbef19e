"""The text environment: one episode driven by a model's replies, in SkyRL-gym's shape.

    env = TextEnv(Episode(task, pool, spec, trial_dir, agent="my-model"), obs_chars=600)
    first = env.init()                 # the sandbox started; the task's instruction
    obs, done = env.act(reply)         # parse the reply, run its command, record the step
    ...                                # the caller's own limits: env.end("max_turns")
    fin = env.close()                  # verify, write the trial; fin.reward, fin.trajectory

Each reply becomes exactly one step of the trajectory, whatever its kind: a command (run
traced), an invalid reply (no command found, a NUL byte), ``done``, or a command the episode
could not run (the agent's time was up, the sandbox failed). Every one is recorded through
``AgentEnv`` (the trajectory and ``steps.jsonl`` at once), with the observation the model is
shown next, the observation it answered (``anchor_obs``, GiGPO) and its canonical action
(``action_key``, AdaStep). One step per reply is what keeps a token layout's step spans in
line with the trajectory's steps.

Two users, one protocol (``TextTurns``):
* the trainer's rollout and an external engine's adapter own the episode: ``TextEnv`` ends
  it when a step goes wrong (the harness's outcome, as ``run_trial`` would record it) and
  the reply stays a step;
* an agent inside ``termcredit run`` (the ``openai:MODEL`` agent) is handed an ``AgentEnv``
  by the trial: ``TextTurns.act`` raises what the step raised and the trial records it.

Nothing here imports torch or the trainer: an engine adapter needs only this module and,
for DepGPO's per-step weights, ``close(weigh=DepGPO().step_weights)`` (estimators/depgpo.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..records import Step, Trajectory, TrialResult
from .actions import Action, format_observation, parse_action
from .agents import AgentEnv, AgentFailure, AgentTimeout, InvalidAction
from .infra import is_infra


class TextTurns:
    """The text protocol on one ``AgentEnv``: parse a reply, run its command, record the step,
    say what the model sees next. Exceptions from running the command propagate."""

    def __init__(self, env: AgentEnv, *, obs_chars: int):
        self.env, self.obs_chars = env, obs_chars
        self.anchor = env.instruction  # what the next reply answers

    def act(self, reply: str, **info: Any) -> tuple[Step, bool]:
        """The reply's step (its ``observation`` what the model sees next) and whether the
        reply ended the episode (``done``). ``info`` goes into ``step.info``."""
        return self.take(reply, parse_action(reply), **info)

    def take(self, reply: str, action: Action, **info: Any) -> tuple[Step, bool]:
        """``act`` on an action already parsed from ``reply``."""
        if action.kind == "done":
            return self.observed(self.env.record_done(reply, **info), action, ""), True
        if action.kind == "command":
            try:
                rec = self.env.step(action.command, action=reply, **info)
            except InvalidAction as exc:  # parse_action refuses what step refuses; kept safe
                step = self.env.record_invalid(reply, exc.reason, **info)
                return self.observed(step, action, step.observation), False
            return self.observed(self.env.trajectory.steps[-1], action,
                                 format_observation(rec, self.obs_chars)), False
        step = self.env.record_invalid(reply, action.error, **info)
        return self.observed(step, action, step.observation), False

    def observed(self, step: Step, action: Action, observation: str) -> Step:
        """Complete a recorded step with what the protocol knows of it; the observation
        becomes the next reply's anchor."""
        step.observation, step.action_key, step.anchor_obs = observation, action.key, self.anchor
        self.anchor = observation
        return step


class EpisodeLike(Protocol):
    """What ``TextEnv`` uses of ``harness.episode.Episode`` (unit tests fake it)."""

    traj: Trajectory
    env: AgentEnv | None

    @property
    def done(self) -> bool: ...

    def start(self) -> bool: ...

    def end(self, termination: str, **info: Any) -> None: ...

    def fail(self, exc: BaseException, where: str, *, by_agent: bool = False) -> None: ...

    def finish(self) -> TrialResult: ...

    def abandon(self) -> None: ...


@dataclass
class Finished:
    """A closed episode: its reward (the trial's: 0 for a suspect reward the task zeroes), the
    trajectory with every step and the verifier's report, the trial's result, and what
    ``close``'s ``weigh`` made of the trajectory (None without one)."""

    reward: float
    trajectory: Trajectory
    result: TrialResult
    weights: Any = None

    @property
    def infra(self) -> bool:
        """The harness failed, not the agent: training masks the episode (infra.py)."""
        return is_infra(self.trajectory)


class TextEnv:
    """One episode that a model drives by text: ``init``, ``act`` per reply, ``close``."""

    def __init__(self, episode: EpisodeLike, *, obs_chars: int = 600):
        self.episode, self.obs_chars = episode, obs_chars
        self.turns: TextTurns | None = None

    @property
    def trajectory(self) -> Trajectory:
        return self.episode.traj

    @property
    def done(self) -> bool:
        """Over: a ``done`` reply, a step that ended it, ``end``, or a sandbox that never
        started (an infrastructure failure)."""
        return self.episode.done

    def init(self) -> str:
        """Start the sandbox; the first observation, the task's instruction. A sandbox that
        could not be had leaves the episode ``done`` (recorded, not raised)."""
        if self.episode.start():
            assert self.episode.env is not None
            self.turns = TextTurns(self.episode.env, obs_chars=self.obs_chars)
        return self.trajectory.instruction

    def act(self, reply: str, **info: Any) -> tuple[str, bool]:
        """One reply: its step recorded, the observation the model sees next, whether the
        episode is over. A failing step ends the episode as ``run_trial`` would (the agent's
        time used up, the agent breaking its sandbox, an infrastructure failure); the reply
        stays a step, its observation the error."""
        if self.done or self.turns is None:
            raise RuntimeError("act on an episode that is over (or never started)")
        action = parse_action(reply)
        try:
            step, _ = self.turns.take(reply, action, **info)
        except AgentFailure as exc:  # the step ran and is kept; the episode ends, scored
            step = self._ended(self.trajectory.steps[-1], action, exc)
            self.episode.end(exc.termination, **{exc.termination: str(exc)})
        except AgentTimeout as exc:  # the agent's own time is used up
            step = self._ended(self._unrun(reply, info), action, exc)
            self.episode.end("agent_timeout")
        except Exception as exc:  # sandbox gone, engine error: not the agent's doing
            step = self._ended(self._unrun(reply, info), action, exc)
            self.episode.fail(exc, f"step {step.index}", by_agent=True)
        else:
            if action.kind == "done":
                self.episode.end("done")
        return step.observation, self.done

    def _unrun(self, reply: str, info: dict[str, Any]) -> Step:
        assert self.turns is not None
        return self.turns.env.record(reply, info=info)

    def _ended(self, step: Step, action: Action, exc: BaseException) -> Step:
        assert self.turns is not None
        return self.turns.observed(step, action, f"error: {exc}")

    def end(self, termination: str) -> None:
        """The caller stops the episode (its own limits: ``max_turns``, ``token_budget``);
        a no-op once it is over."""
        self.episode.end(termination)

    def close(self, weigh: Callable[[Trajectory], Any] | None = None) -> Finished:
        """Verify and write the trial (never raises; the sandbox is released). ``weigh``: what
        to make of the finished trajectory, e.g. ``DepGPO().step_weights`` for DepGPO's
        per-step credit and weights (tokens per step from ``trajectory.tokens``, else 1)."""
        result = self.episode.finish()
        traj = self.trajectory
        return Finished(result.reward, traj, result, weigh(traj) if weigh is not None else None)

    def abandon(self) -> None:
        """Torn down before ``close`` (interrupted, crashed): the steps so far kept, the sandbox
        released, no verdict."""
        self.episode.abandon()
