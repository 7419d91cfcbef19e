"""GRPO outcome advantage (DeepSeekMath Eq. 3); ``std=False`` gives Dr.GRPO's unscaled form.

Â_i = (R_i − mean_j R_j) / (std_j R_j + eps)   (std=True, GRPO)
Â_i =  R_i − mean_j R_j                         (std=False, Dr.GRPO)
Every loss token of trajectory i gets Â_i. A group whose rewards are all equal gives 0.
"""

from __future__ import annotations

from . import EstimatorResult, register
from .group import Group, broadcast, group_advantages, group_rewards, is_zero_advantage


@register("grpo")
class GRPO:
    def __init__(self, std: bool = True, eps: float = 1e-6):
        self.std, self.eps = std, eps

    def __call__(self, group: Group) -> EstimatorResult:
        adv = group_advantages(group_rewards(group), std=self.std, eps=self.eps)
        per_step = [[a] * len(t.steps) for a, t in zip(adv, group)]
        return EstimatorResult(
            advantages=[broadcast(t, s) for t, s in zip(group, per_step)],
            step_advantages=per_step,
            stats={"zero_advantage_group": float(is_zero_advantage(adv))},
        )
