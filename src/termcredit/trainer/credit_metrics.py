"""Credit at work, per update, for every algorithm's rollouts: what DepGPO's traced credit makes
of the group whether or not the estimator reads it, how long successful episodes are, and how
many episodes infrastructure failures took.

Keys (all under ``credit/``; shares of the group's episodes unless said otherwise):

* ``infra_rate``: infrastructure failures (``harness.infra.is_infra``) over all episodes;
* over the other episodes, DepGPO's step weights (each trajectory's one analysis,
  ``depgpo.analysis.analysis_of``, which the DepGPO estimator already made; summarised by
  ``estimators.depgpo.summarize_weights``, as the DepGPO estimator's own stats are):
  ``zero_credit_step_frac`` (traced steps with credit 0 over traced steps),
  ``fallback_rate`` and ``fallback/<reason>`` ("none": DepGPO's weights were used);
  absent when every episode was an infrastructure failure;
* ``errored_command_frac``: commands that failed (exit status ≠ 0 or timed out) over the
  commands run, in those episodes: how often the policy breaks a command (absent without any);
* ``steps_per_success`` and ``tokens_per_success`` (sampled action tokens, the sum of the loss
  mask, over the successful episodes that have tokens): means over the successful episodes
  (training reward ≥ 1); absent when none succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..depgpo import DepGPOConfig
from ..depgpo.analysis import analysis_of
from ..estimators import reward_of
from ..estimators.depgpo import DepGPO, summarize_weights
from ..harness.infra import is_infra
from ..records import Trajectory

PREFIX = "credit/"


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def credit_metrics(trajs: Sequence[Trajectory], cfg: DepGPOConfig | None = None
                   ) -> dict[str, float]:
    """The ``credit/…`` metrics of one update's episodes (see the module docstring).

    ``cfg``: DepGPO's settings (default ``DepGPOConfig()``); a trajectory already analysed
    with them (by the estimator, or its episode's ``graph.json`` hook) is not analysed again."""
    if not trajs:
        return {}
    cfg = cfg or DepGPOConfig()
    ok = [t for t in trajs if not is_infra(t)]
    out = {f"{PREFIX}infra_rate": (len(trajs) - len(ok)) / len(trajs)}
    if ok:
        weights = [analysis_of(t, cfg).weights for t in ok]
        out.update({PREFIX + k: v for k, v in summarize_weights(weights).items()})
        cmds = [s.command for t in ok for s in t.steps if s.command is not None]
        if cmds:
            out[f"{PREFIX}errored_command_frac"] = _mean(
                [float(c.exit_code != 0 or c.timed_out) for c in cmds])
    wins = [t for t in ok if reward_of(t) >= 1.0]
    if wins:
        out[f"{PREFIX}steps_per_success"] = _mean([len(t.steps) for t in wins])
        tokens = [sum(t.tokens.loss_mask) for t in wins if t.tokens is not None]
        if tokens:
            out[f"{PREFIX}tokens_per_success"] = _mean(tokens)
    return out


def depgpo_part(estimator: Any) -> DepGPO | None:
    """The DepGPO estimator in ``estimator`` (itself, or a part of a sum such as depgpo+opd)."""
    for part in getattr(estimator, "parts", [estimator]):
        if isinstance(part, DepGPO):
            return part
    return None


def credit_metrics_for(trajs: Sequence[Trajectory], estimator: Any) -> dict[str, float]:
    """``credit_metrics`` as the trainer calls it after the estimator ran on the update's
    groups: with a DepGPO estimator, its settings (the trajectories it weighed keep their
    analysis; only those it did not weigh are analysed: infra failures, masked ones, skipped
    groups); otherwise DepGPO's defaults."""
    dep = depgpo_part(estimator)
    return credit_metrics(trajs, dep.cfg if dep is not None else None)
