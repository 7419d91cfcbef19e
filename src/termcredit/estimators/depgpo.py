"""`depgpo` in the estimator registry: GRPO's group-relative outcome sets each trajectory's
sign and size (Â_i); DepGPO's step weights spread it over the steps (A_{i,t} = Â_i · w_t),
keeping the token-weighted mean equal to Â_i."""

from __future__ import annotations

from collections import Counter

from ..depgpo import DepGPOConfig, depgpo_step_weights
from ..depgpo.load import facts_from_trajectory
from . import EstimatorResult, register
from .group import Group, broadcast, group_advantages, group_rewards, is_zero_advantage


@register("depgpo")
class DepGPO:
    def __init__(self, beta: float = 0.5, subtract_min: bool = True, std: bool = True,
                 diff_rewrites: str = "if-read", eps: float = 1e-6):
        self.cfg = DepGPOConfig(beta=beta, subtract_min=subtract_min, diff_rewrites=diff_rewrites)
        self.std, self.eps = std, eps

    def __call__(self, group: Group) -> EstimatorResult:
        adv_hat = group_advantages(group_rewards(group), std=self.std, eps=self.eps)
        per_step, fallbacks, zero_credit, traced = [], Counter(), 0, 0
        for traj, a in zip(group, adv_hat):
            sw = depgpo_step_weights(facts_from_trajectory(traj), self.cfg)
            per_step.append([a * w for w in sw.w])
            fallbacks[sw.fallback or "none"] += 1
            zero_credit += sum(1 for c in sw.credit if c == 0)
            traced += sum(1 for c in sw.credit if c is not None)
        stats = {f"fallback/{k}": v / len(group) for k, v in fallbacks.items()}
        stats["fallback_rate"] = 1.0 - fallbacks["none"] / len(group) if group else 0.0
        stats["zero_credit_step_frac"] = zero_credit / traced if traced else 0.0
        stats["zero_advantage_group"] = float(is_zero_advantage(adv_hat))
        return EstimatorResult(advantages=[broadcast(t, s) for t, s in zip(group, per_step)],
                               step_advantages=per_step, stats=stats)
