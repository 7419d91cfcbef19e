"""End-of-trial hooks: work other layers do with a finished trial, registered by them.

A hook runs once per episode after verification, before the final trajectory and
result files are written, with the trajectory in memory and the trial's ``TrialPaths``.
DepGPO's ``graph.json`` is one (``depgpo/trial_hook.py``); the harness never names it. A hook
that raises is recorded in ``trajectory.info["hook_errors"]`` and never changes the reward.
"""

from __future__ import annotations

from typing import Callable

from ..records import Trajectory
from ..trialdir import TrialPaths

TrialHook = Callable[[Trajectory, TrialPaths], None]
_HOOKS: dict[str, TrialHook] = {}


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
