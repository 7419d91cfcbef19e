"""Hooks: work other layers do with an episode. The application (``termcredit run``, refine,
credit-audit, ``tasks check``, the trainer) passes a ``Hooks`` to each ``Episode``; the harness
never names what they do and keeps no registry of its own, so an episode runs exactly the hooks
its caller gave (``depgpo.trial_hook.default_hooks``: DepGPO's).

* A step hook runs after each command step is recorded, with the trajectory so far (DepGPO
  builds its dependencies as the episode runs, ``depgpo/live.py``); what it keeps goes in
  ``trajectory.live``.
* An end-of-trial hook runs once per episode after verification, before the final trajectory
  and result files are written, with the trajectory in memory and the trial's ``TrialPaths``
  (DepGPO's ``graph.json``, ``depgpo/trial_hook.py``).

A hook that raises is recorded in ``trajectory.info["hook_errors"]`` and never changes the
episode or its reward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..records import Trajectory
from ..trialdir import TrialPaths

TrialHook = Callable[[Trajectory, TrialPaths], None]
StepHook = Callable[[Trajectory], None]


@dataclass(frozen=True)
class Hooks:
    """Named hooks, run in the order given."""

    step: tuple[tuple[str, StepHook], ...] = ()
    trial: tuple[tuple[str, TrialHook], ...] = ()


NO_HOOKS = Hooks()


def _record(traj: Trajectory, name: str, exc: Exception) -> None:
    traj.info.setdefault("hook_errors", {})[name] = f"{type(exc).__name__}: {exc}"


def run_trial_hooks(hooks: Hooks, traj: Trajectory, paths: TrialPaths) -> None:
    for name, hook in hooks.trial:
        try:
            hook(traj, paths)
        except Exception as exc:  # a hook's failure is its own, not the episode's
            _record(traj, name, exc)


def run_step_hooks(hooks: Hooks, traj: Trajectory) -> None:
    for name, hook in hooks.step:
        try:
            hook(traj)
        except Exception as exc:
            _record(traj, name, exc)
