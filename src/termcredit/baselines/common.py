"""Pieces GiGPO and AdaStep share: discounted step returns and anchor grouping."""

from __future__ import annotations

import difflib
import statistics
from typing import Sequence

from ..estimators import Group, reward_of
from .anchors import ANCHORS, anchor_keys


def step_returns(traj, gamma: float, invalid_penalty: float) -> list[float]:
    """G_t = r_t + γ G_{t+1}; the outcome reward is the last step's reward; an invalid action
    costs `invalid_penalty` on its own step only (verl-agent: not propagated backwards)."""
    n = len(traj.steps)
    rewards = [s.reward for s in traj.steps]
    if n:
        rewards[-1] += reward_of(traj)
    out, g = [0.0] * n, 0.0
    for t in range(n - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return [r - (invalid_penalty if s.invalid else 0.0) for r, s in zip(out, traj.steps)]


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


def check_anchor(anchor: str, similarity: float | None) -> None:
    if anchor not in ANCHORS:
        raise ValueError(f"anchor must be one of {', '.join(ANCHORS)}, not {anchor!r}")
    if similarity is not None and anchor != "observation":
        raise ValueError("similarity grouping compares observation text: it needs "
                         f"anchor = 'observation', not {anchor!r}")


def anchor_counts(group: Group) -> dict[str, float]:
    """How many anchor groups each key gives on these rollouts (exact matching)."""
    return {f"anchor_groups/{a}": float(len({k for t in group for k in anchor_keys(t, a)}))
            for a in ANCHORS}


def anchor_groups(group: Group, similarity: float | None, anchor: str = "state",
                  ) -> dict[int, list[tuple[int, int]]]:
    """(traj, step) rows clustered by their anchor key (see anchors.py): exact match, or for
    observations with `similarity` a greedy clustering on difflib ratio >= threshold (first
    member represents)."""
    clusters: list[tuple[str, list[tuple[int, int]]]] = []
    exact: dict[str, int] = {}
    for i, traj in enumerate(group):
        for t, key in enumerate(anchor_keys(traj, anchor)):
            if key in exact:
                clusters[exact[key]][1].append((i, t))
                continue
            hit = None
            if similarity is not None:
                hit = next((c for c, (rep, _) in enumerate(clusters)
                            if difflib.SequenceMatcher(None, rep, key).ratio() >= similarity), None)
            if hit is None:
                hit = len(clusters)
                clusters.append((key, []))
            exact[key] = hit
            clusters[hit][1].append((i, t))
    return {c: rows for c, (_, rows) in enumerate(clusters)}
