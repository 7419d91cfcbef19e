"""`depgpo` in the estimator registry: GRPO's group-relative outcome sets each trajectory's
sign and size (Â_i); DepGPO's step weights spread it over the steps (A_{i,t} = Â_i · w_t),
keeping the token-weighted mean equal to Â_i."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Sequence

from ..depgpo import DepGPOConfig, StepWeights, depgpo_step_weights
from ..depgpo.load import facts_from_trajectory
from ..records import Trajectory
from . import EstimatorResult, register
from .group import Group, broadcast, group_advantages, group_rewards, is_zero_advantage


def summarize_weights(weights: Sequence[StepWeights]) -> dict[str, float]:
    """What DepGPO made of some trajectories (one ``StepWeights`` each): ``fallback/<reason>``,
    the share of trajectories that fell back to GRPO unit weights for that reason ("none": no
    fallback); ``fallback_rate``, the share that fell back at all; ``zero_credit_step_frac``,
    traced steps with credit 0 over traced steps (0.0 without any). The estimator's stats and
    the trainer's credit metrics both come from here."""
    n = len(weights)
    fallbacks = Counter(sw.fallback or "none" for sw in weights)
    zero = sum(1 for sw in weights for c in sw.credit if c == 0)
    traced = sum(1 for sw in weights for c in sw.credit if c is not None)
    stats = {f"fallback/{k}": v / n for k, v in fallbacks.items()}
    stats["fallback_rate"] = 1.0 - fallbacks["none"] / n if n else 0.0
    stats["zero_credit_step_frac"] = zero / traced if traced else 0.0
    return stats


@register("depgpo")
class DepGPO:
    def __init__(self, beta: float = 0.5, subtract_min: bool = True, std: bool = True,
                 diff_rewrites: str = "if-read", untraced_weight: float = 1.0,
                 eps: float = 1e-6):
        self.cfg = DepGPOConfig(beta=beta, subtract_min=subtract_min, diff_rewrites=diff_rewrites,
                                untraced_weight=untraced_weight)
        self.std, self.eps = std, eps
        # id -> (trajectory, weights) of the trajectories it weighed that are still alive, for
        # the trainer's credit metrics (an update's groups are weighed one call each)
        self._seen: dict[int, tuple[weakref.ref[Trajectory], StepWeights]] = {}

    def weights_of(self, traj: Trajectory) -> StepWeights | None:
        """The weights this estimator gave ``traj`` (the very object), if it weighed it."""
        hit = self._seen.get(id(traj))
        return hit[1] if hit is not None and hit[0]() is traj else None

    def __call__(self, group: Group) -> EstimatorResult:
        adv_hat = group_advantages(group_rewards(group), std=self.std, eps=self.eps)
        weights = [depgpo_step_weights(facts_from_trajectory(t), self.cfg) for t in group]
        self._seen = {k: v for k, v in self._seen.items() if v[0]() is not None}
        self._seen.update((id(t), (weakref.ref(t), sw)) for t, sw in zip(group, weights))
        per_step = [[a * w for w in sw.w] for sw, a in zip(weights, adv_hat)]
        stats = summarize_weights(weights)
        stats["zero_advantage_group"] = float(is_zero_advantage(adv_hat))
        return EstimatorResult(advantages=[broadcast(t, s) for t, s in zip(group, per_step)],
                               step_advantages=per_step, stats=stats)
