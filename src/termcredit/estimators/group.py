"""Group maths every estimator shares: rewards of a group, population std, group-relative
advantages, spreading per-step values over tokens, and when a group's advantages are zero."""

from __future__ import annotations

import statistics
from typing import Iterable, Sequence

from ..records import Trajectory
from .rewards import reward_of

Group = Sequence[Trajectory]

ZERO_TOL = 1e-12  # below this an advantage (or a reward spread) counts as zero


def group_rewards(group: Group) -> list[float]:
    """One training reward per trajectory: what every group-relative baseline compares."""
    return [reward_of(t) for t in group]


def is_zero_advantage(values: Iterable[float]) -> bool:
    """All advantages are zero: the group teaches nothing (the one test for it; stats,
    dynamic sampling and the trainer's metric all use this)."""
    return all(abs(a) < ZERO_TOL for a in values)


def rewards_tied(rewards: Sequence[float]) -> bool:
    """Every reward of a non-empty group is the same (no outcome signal to compare)."""
    return max(rewards) - min(rewards) < ZERO_TOL


def group_std(values: Sequence[float]) -> float:
    """Population std (divide by N, not N - 1): the one choice GRPO, GiGPO and AdaStep share
    (AdaStep's ŵ uses population variances too); a group is the whole population it ranks."""
    return statistics.pstdev(values) if len(values) > 1 else 0.0


def norm_scale(values: Sequence[float], use_std: bool, eps: float) -> float:
    """F_norm: std + eps (mean_std_norm) or 1 (mean_norm). A pool without spread is not scaled:
    its own entries centre to 0 anyway, and a penalty outside it must not be divided by eps."""
    sd = group_std(values)
    return sd + eps if use_std and sd > 0 else 1.0


def normalize(values: Sequence[float], use_std: bool, eps: float) -> list[float]:
    """x - mean (mean_norm) or (x - mean)/(std + eps) (mean_std_norm); one value -> 0."""
    if len(values) < 2:
        return [0.0] * len(values)
    mean = sum(values) / len(values)
    scale = norm_scale(values, use_std, eps)
    return [(v - mean) / scale for v in values]


def group_advantages(rewards: Sequence[float], *, std: bool = True,
                     eps: float = 1e-6) -> list[float]:
    """GRPO's Â_i = (R_i − mean) / (std + eps) (std=True) or R_i − mean (std=False): the
    group-relative advantage, ``normalize`` over one reward per trajectory."""
    return normalize(rewards, std, eps)


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
