"""Advantage-estimator registry: one signature, looked up by name, composed with `+`.

An estimator takes a *group* (trajectories of one task from one initial state) and returns,
per trajectory, one advantage per token of its token sequence (0 where the loss mask is 0),
or, for a trajectory without tokens (a harness run), one advantage per step.

    est = build("depgpo+opd", beta=0.5)
    out = est(group)            # EstimatorResult(advantages=[[...], ...], stats={...})

Estimators register themselves with ``@register("name")``; their constructor takes keyword
settings (unknown ones are an error, so a typo in a config fails loudly).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from .records import Trajectory, step_token_counts

Group = Sequence[Trajectory]


@dataclass
class EstimatorResult:
    advantages: list[list[float]]  # per trajectory: per token (or per step without tokens)
    stats: dict[str, float] = field(default_factory=dict)  # fallbacks, zero-adv groups, ...
    step_advantages: list[list[float]] = field(default_factory=list)  # per trajectory, per step


class Estimator(Protocol):
    def __call__(self, group: Group) -> EstimatorResult: ...


REGISTRY: dict[str, Callable[..., Estimator]] = {}
_MODULES = ("termcredit.baselines.grpo", "termcredit.depgpo.estimator",
            "termcredit.baselines.gigpo", "termcredit.baselines.adastep",
            "termcredit.baselines.opd")


def register(name: str) -> Callable[[Callable[..., Estimator]], Callable[..., Estimator]]:
    def deco(cls: Callable[..., Estimator]) -> Callable[..., Estimator]:
        REGISTRY[name] = cls
        return cls
    return deco


def _load_all() -> None:
    for mod in _MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:  # a baseline not written yet
            if exc.name != mod:
                raise


def names() -> list[str]:
    _load_all()
    return sorted(REGISTRY)


def _settings_for(cls: Callable[..., Estimator], settings: dict[str, Any]) -> dict[str, Any]:
    params = inspect.signature(cls).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(settings)
    return {k: v for k, v in settings.items() if k in params}


def spec_parts(spec: str) -> list[str]:
    """The estimator names in ``"depgpo"`` or a sum such as ``"depgpo + opd"``."""
    return [p.strip() for p in spec.split("+") if p.strip()]


def needs_teacher(spec: str) -> bool:
    """Whether the spec distils (OPD scores the sampled tokens with a teacher policy)."""
    return "opd" in spec_parts(spec)


def build(spec: str, **settings: Any) -> Estimator:
    """``"depgpo"`` or a sum such as ``"depgpo+opd"``; settings go to every part that takes
    them, and a setting no part takes is an error."""
    _load_all()
    parts = spec_parts(spec)
    unknown = [p for p in parts if p not in REGISTRY]
    if not parts or unknown:
        raise ValueError(f"unknown estimator {spec!r}: choose from {', '.join(names())} "
                         "(combine with +)")
    used: set[str] = set()
    built = []
    for p in parts:
        mine = _settings_for(REGISTRY[p], settings)
        used |= set(mine)
        built.append(REGISTRY[p](**mine))
    if set(settings) - used:
        raise ValueError(f"estimator {spec!r} takes no setting(s) "
                         f"{sorted(set(settings) - used)}")
    return built[0] if len(built) == 1 else Sum(built, parts)


class Sum:
    """Per-token sum of several estimators' advantages (e.g. DepGPO + OPD)."""

    def __init__(self, parts: list[Estimator], names: list[str]):
        self.parts, self.names = parts, names

    def __call__(self, group: Group) -> EstimatorResult:
        results = [p(group) for p in self.parts]
        advs = [[sum(vals) for vals in zip(*per_traj)] for per_traj in
                zip(*(r.advantages for r in results))]
        stats = {f"{n}/{k}": v for n, r in zip(self.names, results) for k, v in r.stats.items()}
        return EstimatorResult(advantages=advs, stats=stats)


# ---------------------------------------------------------------- helpers for estimators


def broadcast(traj: Trajectory, per_step: Sequence[float]) -> list[float]:
    """Spread per-step values over the step's loss tokens (per step without tokens)."""
    if traj.tokens is None:
        return list(per_step)
    out = [0.0] * len(traj.tokens.token_ids)
    mask = traj.tokens.loss_mask
    for value, (a, b) in zip(per_step, traj.tokens.step_spans):
        for i in range(a, b):
            if mask[i]:
                out[i] = value
    return out


INTEGRITY_POLICIES = ("zero", "mask")  # what training does with a flagged trajectory


def is_flagged(traj: Trajectory) -> bool:
    """Tampering was recorded in the episode (or in one of its steps' traces)."""
    return traj.flagged or any(s.command is not None and s.command.integrity for s in traj.steps)


def training_reward(traj: Trajectory, integrity: str = "zero") -> float:
    """The reward a trajectory trains with: the only place training reads a verifier's reward.

    0.0 without a verifier; 0.0 when the episode is flagged (tampering recorded): under
    ``integrity = "zero"`` that is its reward, under ``"mask"`` it is dropped from its group
    before estimation (``select_group`` in the trainer) and 0.0 is what it gets if asked
    anyway; 0.0 when the verifier's provenance audit found it suspect and the task's
    ``on_suspect`` is "zero" (the default when the task does not say; "flag" keeps the reward).
    """
    if integrity not in INTEGRITY_POLICIES:
        raise ValueError(f"integrity policy must be one of {', '.join(INTEGRITY_POLICIES)}, "
                         f"not {integrity!r}")
    v = traj.verifier
    if v is None or is_flagged(traj):
        return 0.0
    if v.suspect and (v.on_suspect or "zero") == "zero":
        return 0.0
    return v.reward


def reward_of(traj: Trajectory) -> float:
    """The estimators' reward (see training_reward; masked trajectories never reach them)."""
    return training_reward(traj)
