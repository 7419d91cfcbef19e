"""Hooks: work other layers do with an episode, registered by them; the harness never names
them.

* An end-of-trial hook runs once per episode after verification, before the final trajectory
  and result files are written, with the trajectory in memory and the trial's ``TrialPaths``
  (DepGPO's ``graph.json``, ``depgpo/trial_hook.py``).
* A step hook runs after each command step is recorded, with the trajectory so far (DepGPO
  builds its dependencies as the episode runs, ``depgpo/live.py``); what it keeps goes in
  ``trajectory.live``.

A hook that raises is recorded in ``trajectory.info["hook_errors"]`` and never changes the
episode or its reward.
"""

from __future__ import annotations

from typing import Callable

from ..records import Trajectory
from ..trialdir import TrialPaths

TrialHook = Callable[[Trajectory, TrialPaths], None]
StepHook = Callable[[Trajectory], None]
_HOOKS: dict[str, TrialHook] = {}
_STEP_HOOKS: dict[str, StepHook] = {}


def register_trial_hook(name: str) -> Callable[[TrialHook], TrialHook]:
    def deco(fn: TrialHook) -> TrialHook:
        _HOOKS[name] = fn
        return fn
    return deco


def trial_hooks() -> dict[str, TrialHook]:
    return dict(_HOOKS)


def run_trial_hooks(traj: Trajectory, paths: TrialPaths) -> None:
    for name, hook in trial_hooks().items():
        try:
            hook(traj, paths)
        except Exception as exc:  # a hook's failure is its own, not the episode's
            traj.info.setdefault("hook_errors", {})[name] = f"{type(exc).__name__}: {exc}"


def register_step_hook(name: str) -> Callable[[StepHook], StepHook]:
    def deco(fn: StepHook) -> StepHook:
        _STEP_HOOKS[name] = fn
        return fn
    return deco


def run_step_hooks(traj: Trajectory) -> None:
    for name, hook in list(_STEP_HOOKS.items()):
        try:
            hook(traj)
        except Exception as exc:
            traj.info.setdefault("hook_errors", {})[name] = f"{type(exc).__name__}: {exc}"
