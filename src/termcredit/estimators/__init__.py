"""Advantage-estimator registry: one signature, looked up by name, composed with `+`.

An estimator takes a *group* (trajectories of one task from one initial state) and returns,
per trajectory, one advantage per token of its token sequence (0 where the loss mask is 0),
or, for a trajectory without tokens (a harness run), one advantage per step.

    est = build("depgpo+opd", beta=0.5)
    out = est(group)            # EstimatorResult(advantages=[[...], ...], stats={...})
    est.needs                   # frozenset({"teacher_logprobs"}): inputs the caller fills

Estimators register themselves with ``@register("name")``; their constructor takes keyword
settings (unknown ones are an error, so a typo in a config fails loudly). An estimator that
reads more than the rollout records declares it in ``needs`` (keys of ``NEEDS``); whoever
runs it provides those inputs, without asking which algorithm it is.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from .group import Group, broadcast
from .rewards import INTEGRITY_POLICIES, is_flagged, reward_of, training_reward

TEACHER_LOGPROBS = "teacher_logprobs"
ORACLE_STEPS = "oracle_steps"
TOKEN_TEXT = "token_text"
# every input an estimator may need beyond the rollout records, and what it is
NEEDS: dict[str, str] = {
    TEACHER_LOGPROBS: "the teacher policy's log-probs of the sampled tokens, in the "
                        "student's context (TokenLayout.teacher_logprobs)",
    ORACLE_STEPS: "each step's ground-truth label (necessary / breaking) from its task's "
                  "[metadata.oracle] patterns (Trajectory.info['oracle']; estimators/oracle.py)",
    TOKEN_TEXT: "each step's decoded tokens and where each ends in that text, from the "
                "policy's tokenizer (Trajectory.info['token_text']; estimators/inside.py)",
}


@dataclass
class EstimatorResult:
    advantages: list[list[float]]  # per trajectory: per token (or per step without tokens)
    stats: dict[str, float] = field(default_factory=dict)  # fallbacks, zero-adv groups, ...
    step_advantages: list[list[float]] = field(default_factory=list)  # per trajectory, per step


class Estimator(Protocol):
    needs: frozenset[str]

    def __call__(self, group: Group) -> EstimatorResult: ...


REGISTRY: dict[str, Callable[..., Estimator]] = {}


def register(name: str) -> Callable[[type], type]:
    """Register an estimator class; its ``needs`` (default: none) must be keys of NEEDS."""
    def deco(cls: type) -> type:
        declared = frozenset(getattr(cls, "needs", ()))
        if declared - set(NEEDS):
            raise ValueError(f"estimator {name!r} needs unknown input(s) "
                             f"{sorted(declared - set(NEEDS))}: known are {', '.join(NEEDS)}")
        cls.needs = declared
        REGISTRY[name] = cls
        return cls
    return deco


def names() -> list[str]:
    return sorted(REGISTRY)


def spec_parts(spec: str) -> list[str]:
    """The estimator names in ``"depgpo"`` or a sum such as ``"depgpo + opd"``."""
    return [p.strip() for p in spec.split("+") if p.strip()]


def _classes(spec: str) -> list[Callable[..., Estimator]]:
    parts = spec_parts(spec)
    unknown = [p for p in parts if p not in REGISTRY]
    if not parts or unknown:
        raise ValueError(f"unknown estimator {spec!r}: choose from {', '.join(names())} "
                         "(combine with +)")
    return [REGISTRY[p] for p in parts]


def needs(spec: str) -> frozenset[str]:
    """What the spec's estimators read beyond the rollout records (the union over a sum),
    known without building them: e.g. whether a teacher must be loaded at all."""
    return frozenset().union(*(getattr(c, "needs", frozenset()) for c in _classes(spec)))


def _settings_for(cls: Callable[..., Estimator], settings: dict[str, Any]) -> dict[str, Any]:
    params = inspect.signature(cls).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(settings)
    return {k: v for k, v in settings.items() if k in params}


def build(spec: str, **settings: Any) -> Estimator:
    """``"depgpo"`` or a sum such as ``"depgpo+opd"``; settings go to every part that takes
    them, and a setting no part takes is an error."""
    classes = _classes(spec)
    used: set[str] = set()
    built = []
    for cls in classes:
        mine = _settings_for(cls, settings)
        used |= set(mine)
        built.append(cls(**mine))
    if set(settings) - used:
        takes = sorted({p for c in classes for p in inspect.signature(c).parameters})
        raise ValueError(f"estimator {spec!r} takes no setting(s) "
                         f"{sorted(set(settings) - used)} (it takes: {', '.join(takes) or 'none'})")
    return built[0] if len(built) == 1 else Sum(built, spec_parts(spec))


class Sum:
    """Per-token sum of several estimators' advantages (e.g. DepGPO + OPD); it needs what
    any of its parts needs."""

    def __init__(self, parts: list[Estimator], names: list[str]):
        self.parts, self.names = parts, names
        self.needs: frozenset[str] = frozenset().union(
            *(getattr(p, "needs", frozenset()) for p in parts))

    def __call__(self, group: Group) -> EstimatorResult:
        results = [p(group) for p in self.parts]
        advs = [[sum(vals) for vals in zip(*per_traj)] for per_traj in
                zip(*(r.advantages for r in results))]
        stats = {f"{n}/{k}": v for n, r in zip(self.names, results) for k, v in r.stats.items()}
        return EstimatorResult(advantages=advs, stats=stats)


__all__ = ["EstimatorResult", "Estimator", "Group", "INTEGRITY_POLICIES", "NEEDS", "ORACLE_STEPS",
           "REGISTRY",
           "Sum", "TEACHER_LOGPROBS", "TOKEN_TEXT", "broadcast", "build", "is_flagged", "names", "needs", "register",
           "parse_spec", "reward_of", "spec_parts", "split_spec", "training_reward"]

# The algorithms, imported here so that importing the package registers every one of them.
from . import adastep, anchors, depgpo, gigpo, grpo, opd, oracle  # noqa: E402,F401  (registration)
from .spec import parse_spec, split_spec  # noqa: E402  (it builds estimators to check a spec)
