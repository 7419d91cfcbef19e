"""`depgpo` in the estimator registry: GRPO's group-relative outcome sets each trajectory's
sign and size (Â_i); DepGPO's step weights spread it over the steps (A_{i,t} = Â_i · w_t),
keeping the token-weighted mean equal to Â_i.

How a negative Â_i (a failed episode) is spread, ``negative``:
- ``"graph"`` (default): by the same credit as a positive one;
- ``"uniform"``: GRPO's unit weights;
- ``"errors"``: only over the steps whose command failed (exit status ≠ 0 or timed out),
  token-normalised like the graph's weights; graph weights where no command failed;
- ``"destroyers"``: only over the steps that deleted, truncated, overwrote, moved away or
  unset something a later step needed (``depgpo/destroyers.py``), token-normalised likewise;
  graph weights where no step did;
- ``"faults"``: over both, the steps whose command failed and those that destroyed what a
  later step needed: the oracle's blame (breaking commands and failed ones) as the trace
  sees it; graph weights where there is neither.
``omission`` (with ``errors``, ``destroyers`` or ``faults``): a failed episode where none of
those steps is found failed by what it did not do, and the graph credits the right early work
that reached the verifier; ``"graph"`` (default) spreads the blame by it all the same,
``"unit"`` by GRPO's unit weights, ``"done"`` puts it on the `done` that ended the episode
with work missing (unit weights when the episode did not end with `done`). The oracle's
``omission`` with the trace's faults instead of declared ones.
``positive`` (``"graph"``, default, or ``"uniform"``): how a positive Â_i (a solved episode)
is spread: by the graph's credit, or by GRPO's unit weights, so that credit only places blame
(on the horizon tier, withholding reinforcement from a solved episode's unnecessary but
well-formed steps let the tiny policy's commands drift: docs/credit-tier.md).
``inside`` (default false): of a failed episode's errored commands that carry blame, only
the tokens from where the command left every command that ran cleanly in its group keep it
(``estimators/inside.py``); with ``negative = "errors"`` that is blame on the token that went
wrong, not on the well-formed prefix around it.
``scale`` (``"tokens"``, default, or ``"peak"``): the graph's weights keep the token-weighted
mean at Â (Σ n_t w_t = Σ n_t), so credit on few tokens is credit multiplied (blame on one
command of nine: about nine times Â on each of its tokens); ``"peak"`` divides each
trajectory's weights by their largest, so no token gets more than GRPO's |Â|: credit then
removes advantage from steps, never moves it onto others.
``floor`` (0 to 1; default 0): every weight becomes floor + (1 − floor)·w, GRPO's unit weight
mixed in, so each step of an episode keeps that share of its advantage whatever its credit
(the token-weighted mean stays Â: both weightings have token-weighted mean 1). On the horizon
tier every per-step weighting lost to GRPO because withholding reinforcement from well-formed
but unnecessary steps let the policy's commands drift (docs/credit-tier.md).
Why ``negative``: the graph credits what reached the verifier, and in a failed episode that is often the
correct early work, while the command at fault (a garbled one that errored and wrote nothing,
or a decoy that deleted what a later step read) gets no credit and so no blame (measured on
the credit and horizon tiers: docs/credit-tier.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..depgpo import DepGPOConfig, StepWeights
from ..depgpo.analysis import analysis_of, kept_analysis
from ..depgpo.destroyers import destroyers
from ..records import Trajectory
from . import TOKEN_TEXT, EstimatorResult, register
from .group import Group, broadcast, group_advantages, group_rewards, is_zero_advantage
from .inside import clean_commands, errored_steps, final_done, narrow_failed


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


NEGATIVE = ("graph", "uniform", "errors", "destroyers", "faults")
POSITIVE = ("graph", "uniform")
OMISSION = ("graph", "unit", "done")
SCALE = ("tokens", "peak")


def only_weights(sw: StepWeights, chosen: Sequence[bool]) -> list[float] | None:
    """1 on the chosen steps (in ``sw.steps``' order), 0 elsewhere, scaled so that
    Σ n_t w_t = Σ n_t (the token-weighted mean stays Â); None when none is chosen or the
    chosen ones have no tokens."""
    flags = [float(c) for c in chosen]
    weighted = sum(n * f for n, f in zip(sw.n_tokens, flags))
    if not weighted > 0:
        return None
    scale = sum(sw.n_tokens) / weighted
    return [f * scale for f in flags]


def _destroyer_steps(traj: Trajectory, cfg: DepGPOConfig) -> set[int]:
    """The steps that destroyed what a later step needed, from the trajectory's own analysis
    (its dependencies) under ``cfg``."""
    deps = analysis_of(traj, cfg).graph
    return {deps.commands[c].index for c in destroyers(deps)}


def error_weights(traj: Trajectory, sw: StepWeights) -> list[float] | None:
    """``only_weights`` on the steps whose command failed (exit status ≠ 0 or timed out)."""
    bad = errored_steps(traj)
    return only_weights(sw, [i in bad for i in sw.steps])


def destroyer_weights(traj: Trajectory, cfg: DepGPOConfig, sw: StepWeights
                      ) -> list[float] | None:
    """``only_weights`` on the steps that destroyed what a later step needed."""
    bad = _destroyer_steps(traj, cfg)
    return only_weights(sw, [i in bad for i in sw.steps])


def fault_weights(traj: Trajectory, cfg: DepGPOConfig, sw: StepWeights) -> list[float] | None:
    """``only_weights`` on the steps that failed or destroyed what a later step needed."""
    bad = errored_steps(traj) | _destroyer_steps(traj, cfg)
    return only_weights(sw, [i in bad for i in sw.steps])


def check_floor(floor: float, who: str) -> float:
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"{who}: floor must be in [0, 1], not {floor!r}")
    return float(floor)


def with_floor(weights: Sequence[float], floor: float) -> list[float]:
    """floor + (1 − floor)·w for each weight (see the module doc)."""
    return [floor + (1.0 - floor) * w for w in weights]


def check_scale(scale: str, who: str) -> str:
    if scale not in SCALE:
        raise ValueError(f"{who}: scale must be one of {', '.join(map(repr, SCALE))}, "
                         f"not {scale!r}")
    return scale


def scaled(weights: Sequence[float], scale: str) -> list[float]:
    """``weights`` as they are (``"tokens"``) or divided by their largest (``"peak"``; see the
    module doc); all-zero weights stay zero."""
    top = max(weights, default=0.0)
    if scale == "tokens" or not top > 0:
        return list(weights)
    return [w / top for w in weights]


def shaped(weights: Sequence[float], scale: str, floor: float) -> list[float]:
    """The weights an advantage is multiplied by: ``scale`` first, then ``floor``."""
    return with_floor(scaled(weights, scale), floor)


@register("depgpo")
class DepGPO:
    def __init__(self, beta: float = 0.5, subtract_min: bool = True, std: bool = True,
                 diff_rewrites: str = "if-read", untraced_weight: float = 1.0,
                 eps: float = 1e-6, negative: str = "graph", floor: float = 0.0,
                 inside: bool = False, positive: str = "graph", scale: str = "tokens",
                 omission: str = "graph"):
        if omission not in OMISSION:
            raise ValueError(f"depgpo: omission must be one of {', '.join(map(repr, OMISSION))},"
                             f" not {omission!r}")
        self.omission = omission
        if negative not in NEGATIVE:
            raise ValueError(f"depgpo: negative must be one of {', '.join(map(repr, NEGATIVE))},"
                             f" not {negative!r}")
        if positive not in POSITIVE:
            raise ValueError(f"depgpo: positive must be one of {', '.join(map(repr, POSITIVE))},"
                             f" not {positive!r}")
        self.positive, self.scale = positive, check_scale(scale, "depgpo")
        self.negative, self.floor = negative, check_floor(floor, "depgpo")
        self.cfg = DepGPOConfig(beta=beta, subtract_min=subtract_min, diff_rewrites=diff_rewrites,
                                untraced_weight=untraced_weight)
        self.std, self.eps = std, eps
        self.inside = bool(inside)
        if self.inside:
            self.needs = type(self).needs | {TOKEN_TEXT}

    def weights_of(self, traj: Trajectory) -> StepWeights | None:
        """The weights this estimator's settings gave ``traj``, if it was weighed (the
        trajectory keeps its analysis: ``depgpo/analysis.py``)."""
        res = kept_analysis(traj, self.cfg)
        return res.weights if res is not None else None

    def step_weights(self, traj: Trajectory) -> StepWeights:
        """DepGPO's weights of one trajectory: its one analysis under these settings (from the
        dependencies its episode built as it ran, where it kept them)."""
        return analysis_of(traj, self.cfg).weights

    def _credit(self, sw: StepWeights) -> Sequence[float]:
        """The weights a solved (Â ≥ 0) trajectory's advantage is spread by."""
        return [1.0] * len(sw.w) if self.positive == "uniform" else sw.w

    def _blame(self, traj: Trajectory, sw: StepWeights) -> Sequence[float]:
        """The weights a failed trajectory's negative advantage is spread by."""
        if self.negative == "uniform":
            return [1.0] * len(sw.w)
        if self.negative == "errors":
            return error_weights(traj, sw) or self._omitted(traj, sw)
        if self.negative == "destroyers":
            return destroyer_weights(traj, self.cfg, sw) or self._omitted(traj, sw)
        if self.negative == "faults":
            return fault_weights(traj, self.cfg, sw) or self._omitted(traj, sw)
        return sw.w

    def _omitted(self, traj: Trajectory, sw: StepWeights) -> Sequence[float]:
        """A failed trajectory's weights when no step is at fault (``omission``)."""
        if self.omission == "graph":
            return sw.w
        unit = [1.0] * len(sw.w)
        if self.omission == "unit":
            return unit
        done = final_done(traj)
        return only_weights(sw, [i in done for i in sw.steps]) or unit

    def __call__(self, group: Group) -> EstimatorResult:
        adv_hat = group_advantages(group_rewards(group), std=self.std, eps=self.eps)
        weights = [self.step_weights(t) for t in group]
        per_step = [[a * w for w in shaped(self._blame(t, sw) if a < 0 else self._credit(sw),
                                           self.scale, self.floor)]
                    for t, sw, a in zip(group, weights, adv_hat)]
        stats = summarize_weights(weights)
        stats["zero_advantage_group"] = float(is_zero_advantage(adv_hat))
        advantages = [broadcast(t, s) for t, s in zip(group, per_step)]
        if self.inside:
            refs = clean_commands(group)  # what the policy itself got right in this group
            advantages, stats["inside_narrowed"] = narrow_failed(
                group, adv_hat, per_step, advantages, [refs] * len(group))
        return EstimatorResult(advantages=advantages, step_advantages=per_step, stats=stats)
