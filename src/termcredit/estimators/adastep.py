"""AdaStep (arXiv 2610.03223): GiGPO with ω replaced by a per-anchor shrinkage weight

ŵ(s) = 1 − Σ_a p̂(a|s) v̂_{s,a} / v̂_s   (population variances of raw discounted returns),
computed only when the anchor group has ≥ 2 distinct action keys, each seen ≥ 2 times, and
v̂_s > 0; otherwise the fallback ŵ = 1 (the paper's ablation winner). A = A^E + ŵ · A^S.
Actions are compared by `Step.action_key` (the canonical command), not raw generations.
"""

from __future__ import annotations

from collections import defaultdict

from . import EstimatorResult, register
from .anchors import anchor_counts, check_anchor
from .gigpo import episode_advantages, step_advantages, step_returns
from .group import Group, broadcast


def pvar(xs: list[float]) -> float:
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)


def shrinkage_weight(returns: list[float], actions: list[str]) -> float | None:
    """ŵ for one anchor group, or None when it is not eligible (caller falls back to 1)."""
    by_a: dict[str, list[float]] = defaultdict(list)
    for r, a in zip(returns, actions):
        by_a[a].append(r)
    total = pvar(returns) if returns else 0.0
    if len(by_a) < 2 or any(len(v) < 2 for v in by_a.values()) or total <= 0:
        return None
    within = sum(len(v) / len(returns) * pvar(v) for v in by_a.values())
    return 1.0 - within / total


@register("adastep")
class AdaStep:
    def __init__(self, gamma: float = 0.95, mode: str = "mean_norm",
                 similarity: float | None = None, invalid_penalty: float = 0.1,
                 eps: float = 1e-6, fallback: float = 1.0, anchor: str = "state"):
        if mode not in ("mean_norm", "mean_std_norm"):
            raise ValueError(f"adastep mode must be mean_norm or mean_std_norm, not {mode!r}")
        check_anchor(anchor, similarity)
        self.anchor = anchor
        self.gamma, self.use_std, self.similarity = gamma, mode == "mean_std_norm", similarity
        self.penalty, self.eps, self.fallback = invalid_penalty, eps, fallback

    def __call__(self, group: Group) -> EstimatorResult:
        a_e = episode_advantages(group, self.use_std, self.eps, False, self.penalty)
        returns = [step_returns(t, self.gamma, self.penalty) for t in group]
        a_s, clusters = step_advantages(group, returns, self.use_std, self.eps, self.similarity,
                                        self.anchor)
        weights = [[self.fallback] * len(r) for r in returns]
        eligible = multi = 0
        for rows in clusters.values():
            if len(rows) < 2:
                continue
            multi += 1
            w = shrinkage_weight([returns[i][t] for i, t in rows],
                                 [group[i].steps[t].action_key for i, t in rows])
            if w is not None:
                eligible += 1
                for i, t in rows:
                    weights[i][t] = w
        per_step = [[e + w * s for e, w, s in zip(es, ws, ss)]
                    for es, ws, ss in zip(a_e, weights, a_s)]
        return EstimatorResult(
            advantages=[broadcast(t, s) for t, s in zip(group, per_step)],
            step_advantages=per_step,
            stats={"fallback_rate": 1.0 - eligible / multi if multi else 1.0,
                   "anchor_groups": float(len(clusters)), **anchor_counts(group)},
        )
