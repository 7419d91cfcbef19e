"""GRPO outcome advantage (DeepSeekMath Eq. 3); ``std=False`` gives Dr.GRPO's unscaled form.

Â_i = (R_i − mean_j R_j) / (std_j R_j + eps)   (std=True, GRPO)
Â_i =  R_i − mean_j R_j                         (std=False, Dr.GRPO)
Every loss token of trajectory i gets Â_i. A group whose rewards are all equal gives 0.
"""

from __future__ import annotations

from ..estimators import EstimatorResult, Group, broadcast, register, reward_of
from .common import norm_scale


def group_advantages(rewards: list[float], *, std: bool = True, eps: float = 1e-6) -> list[float]:
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    scale = norm_scale(rewards, std, eps)  # population std, as in GiGPO and AdaStep
    return [(r - mean) / scale for r in rewards]


@register("grpo")
class GRPO:
    def __init__(self, std: bool = True, eps: float = 1e-6):
        self.std, self.eps = std, eps

    def __call__(self, group: Group) -> EstimatorResult:
        adv = group_advantages([reward_of(t) for t in group], std=self.std, eps=self.eps)
        per_step = [[a] * len(t.steps) for a, t in zip(adv, group)]
        return EstimatorResult(
            advantages=[broadcast(t, s) for t, s in zip(group, per_step)],
            step_advantages=per_step,
            stats={"zero_advantage_group": float(all(abs(a) < 1e-12 for a in adv))},
        )
