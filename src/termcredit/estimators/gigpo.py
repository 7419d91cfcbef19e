"""GiGPO (arXiv 2505.10978): episode advantage + ω · step advantage within anchor groups.

A^E(row) = (R_i − pen·[row's action invalid] − mean) / F_norm   (mode: mean_norm | mean_std_norm)
A^S(t)   = normalize(G_t over rows with the same anchor state)  (singleton anchor group -> 0)
A        = A^E + ω · A^S, broadcast over the step's tokens.
The invalid-action penalty lands on its own row in both terms (verl-agent subtracts it from that
row's reward, which both terms read), so a penalised step in a singleton anchor group still pays.
The baseline (mean, std) is over one R_i per trajectory (the paper's Eq. 3, our default), or with
`cross_steps=True` over every step row's penalised value (verl-agent's default: longer
trajectories weigh more). Stds are population stds (`group.group_std`).
"""

from __future__ import annotations

from ..records import Trajectory
from . import EstimatorResult, register
from .anchors import anchor_counts, anchor_groups, check_anchor
from .group import Group, broadcast, group_rewards, norm_scale, normalize
from .rewards import reward_of


def step_returns(traj: Trajectory, gamma: float, invalid_penalty: float) -> list[float]:
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


def episode_advantages(group: Group, use_std: bool, eps: float, cross_steps: bool,
                       invalid_penalty: float) -> list[list[float]]:
    """A^E per step row (one entry for a trajectory without steps)."""
    rewards = group_rewards(group)
    rows = [[r - (invalid_penalty if s.invalid else 0.0) for s in t.steps] or [r]
            for r, t in zip(rewards, group)]
    pool = [v for vs in rows for v in vs] if cross_steps else rewards
    if len(pool) < 2:  # a lone trajectory: no baseline to compare with, only its penalties
        return [[v - r for v in vs] for r, vs in zip(rewards, rows)]
    mean = sum(pool) / len(pool)
    scale = norm_scale(pool, use_std, eps)
    return [[(v - mean) / scale for v in vs] for vs in rows]


def step_advantages(group: Group, returns: list[list[float]], use_std: bool, eps: float,
                    similarity: float | None, anchor: str = "state",
                    ) -> tuple[list[list[float]], dict[int, list]]:
    adv = [[0.0] * len(r) for r in returns]
    clusters = anchor_groups(group, similarity, anchor)
    for rows in clusters.values():
        values = normalize([returns[i][t] for i, t in rows], use_std, eps)
        for (i, t), v in zip(rows, values):
            adv[i][t] = v
    return adv, clusters


@register("gigpo")
class GiGPO:
    def __init__(self, gamma: float = 0.95, omega: float = 1.0, mode: str = "mean_norm",
                 similarity: float | None = None, invalid_penalty: float = 0.1,
                 eps: float = 1e-6, cross_steps: bool = False, anchor: str = "state"):
        if mode not in ("mean_norm", "mean_std_norm"):
            raise ValueError(f"gigpo mode must be mean_norm or mean_std_norm, not {mode!r}")
        check_anchor(anchor, similarity)
        self.anchor = anchor
        self.gamma, self.omega, self.use_std = gamma, omega, mode == "mean_std_norm"
        self.similarity, self.penalty, self.eps = similarity, invalid_penalty, eps
        self.cross_steps = cross_steps

    def __call__(self, group: Group) -> EstimatorResult:
        a_e = episode_advantages(group, self.use_std, self.eps, self.cross_steps, self.penalty)
        returns = [step_returns(t, self.gamma, self.penalty) for t in group]
        a_s, clusters = step_advantages(group, returns, self.use_std, self.eps, self.similarity,
                                        self.anchor)
        per_step = [[e + self.omega * s for e, s in zip(es, ss)] for es, ss in zip(a_e, a_s)]
        n_rows = sum(len(r) for r in clusters.values())
        singles = sum(len(r) for r in clusters.values() if len(r) == 1)
        return EstimatorResult(
            advantages=[broadcast(t, s) for t, s in zip(group, per_step)],
            step_advantages=per_step,
            stats={"singleton_anchor_ratio": singles / n_rows if n_rows else 1.0,
                   "anchor_groups": float(len(clusters)), **anchor_counts(group)},
        )
