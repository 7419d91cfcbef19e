"""`oracle` (bench only): the ceiling of per-step credit. DepGPO's weighting, fed with ground
truth instead of the dependency graph: how much could *any* per-step credit gain on a tier?

Ground truth is what the task's design makes necessary, declared by the task in its
task.toml (``[metadata.oracle]``, free-form metadata any Harbor loader keeps)::

    [metadata.oracle]
    necessary = ['^tar -xzf ', 'sha256sum -c']      # regexes (re.search) of needed commands
    breaking  = ['rm -rf /app/data', '> /app/keep']  # decoys that break what a later step needs

Why declared patterns and not leave-one-out replays (`credit-audit`): a replay per step of
every rollout is K extra sandbox trials per trajectory (≈ 8 × 36 per update on the horizon
tier, an hour a run on 2 cores), and it is only defined on solved trajectories; the tier's
tasks are written so that their necessary and breaking commands have a recognisable form,
so the task author's statement is exact there and free in training.

The labels reach the estimator through the ``needs`` mechanism: ``ORACLE_STEPS`` is filled
by the trainer (``label_steps`` on each trajectory, into ``Trajectory.info["oracle"]``), so
the estimator reads nothing but the rollout records. Per trajectory:

* a solved (Â ≥ 0) or any trajectory's *credit*: C_t = 1 for a step whose command matched a
  ``necessary`` pattern and ran cleanly (exit 0, not timed out), 0 for any other command,
  None for a step without a command (untraced, as DepGPO has it);
* a failed one's *blame* (Â < 0): C_t = 1 for a step that ran a ``breaking`` command or
  whose command failed, 0 for the other commands; with no such step the failure is an
  omission and nothing present is at fault: GRPO's unit weights (``omission = "unit"``), or,
  with ``omission = "done"``, blame on the `done` that ended it with work missing (the one
  decision that made it an omission; on an episode the turn budget ended: unit weights);
  ``omission = "also"`` blames, in any failed episode, faults or not, the `done` that ended it
  while some necessary command was never tried, beside its faults.

Both go through DepGPO's own ``step_weights`` (subtract the minimum, token-normalise, fall
back to unit weights on tied credits) and A_{i,t} = Â_i · w_t spread over the step's loss
tokens (``broadcast``), exactly as the `depgpo` estimator applies its graph's credit.
DepGPO's shaping settings apply the same way: ``floor``, ``scale``, ``positive = "uniform"``
(GRPO's weights on solved episodes) and ``inside`` (blame inside a failed command, measured
against the task's own commands: ``OracleSpec.references``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..depgpo import StepWeights, step_weights
from ..records import Step, Trajectory, step_token_counts
from . import ORACLE_STEPS, TOKEN_TEXT, EstimatorResult, register
from .depgpo import check_floor, check_scale, shaped, summarize_weights
from .group import Group, broadcast, group_advantages, group_rewards, is_zero_advantage
from .inside import errored_steps, final_done, narrow_failed, ran_cleanly

# Trajectory.info[INFO_KEY] = {"necessary": [...], "breaking": [...], "references": [...]}
INFO_KEY = "oracle"
LABELS = ("necessary", "breaking")


@dataclass(frozen=True)
class OracleSpec:
    """A task's declared ground truth: regexes of its necessary and its breaking commands."""

    necessary: tuple[re.Pattern[str], ...]
    breaking: tuple[re.Pattern[str], ...] = ()
    # the task's well-formed commands (its solution's and its demonstrations'), what blame
    # inside an errored command measures against (``inside``; estimators/inside.py)
    references: tuple[str, ...] = ()

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any], where: str,
                      references: Sequence[str] = ()) -> "OracleSpec":
        """From a task's ``[metadata]``; a ValueError naming ``where`` when it declares none."""
        table = metadata.get(INFO_KEY)
        if not isinstance(table, dict) or not table.get("necessary"):
            raise ValueError(f"{where}: the oracle estimator needs [metadata.oracle] with a "
                             "non-empty 'necessary' list of command regexes")
        unknown = set(table) - set(LABELS)
        if unknown:
            raise ValueError(f"{where}: [metadata.oracle] takes {', '.join(LABELS)}, "
                             f"not {', '.join(sorted(unknown))}")
        try:
            return cls(*(tuple(re.compile(p) for p in table.get(k, [])) for k in LABELS),
                       references=tuple(references))
        except (re.error, TypeError) as exc:
            raise ValueError(f"{where}: [metadata.oracle]: {exc}") from exc


def label_steps(traj: Trajectory, spec: OracleSpec) -> dict[str, list]:
    """Step indices whose command matches a necessary pattern and ran cleanly, and those
    whose command matches a breaking pattern (whatever its exit status: it ran); how many
    necessary patterns no command matched at all (``untried``); and the task's reference
    commands."""
    def hits(patterns: Sequence[re.Pattern[str]], s: Step) -> bool:
        return s.command is not None and any(p.search(s.command.command) for p in patterns)

    return {"necessary": [s.index for s in traj.steps
                          if ran_cleanly(s) and hits(spec.necessary, s)],
            "breaking": [s.index for s in traj.steps if hits(spec.breaking, s)],
            "untried": sum(not any(hits([p], s) for s in traj.steps) for p in spec.necessary),
            "references": list(spec.references)}


def _labels(traj: Trajectory) -> dict[str, set[int]]:
    got = traj.info.get(INFO_KEY)
    if not isinstance(got, dict):
        raise ValueError(f"oracle: trajectory of {traj.task!r} has no step labels "
                         f"(info[{INFO_KEY!r}]): the caller must provide {ORACLE_STEPS!r}")
    return {k: set(got.get(k, [])) for k in LABELS}


# how a failed episode's negative advantage is spread: on the commands at fault (the breaking
# ones and those that failed), or GRPO's unit weights (which tells whether concentrated
# blame, not the credit on solved episodes, is what the oracle's learning gets from it)
NEGATIVE = ("blame", "uniform")
# and a solved one's: on the necessary commands that ran cleanly, or GRPO's unit weights (the
# ground truth then only places blame)
POSITIVE = ("necessary", "uniform")
# and an omission's (a failed episode with no breaking or failed command): GRPO's unit weights,
# or blame on its final `done` (an episode that said done with a necessary step missing);
# "also": blame that `done` in every failed episode, faults or not, where some necessary
# command was never even tried (on the menu tier a third of GRPO's decoy episodes also
# stopped early, and spread blame on their `done` was what kept the policy from stopping
# early: docs/credit-tier.md)
OMISSION = ("unit", "done", "also")


def _unit(traj: Trajectory, why: str) -> StepWeights:
    """GRPO's unit weights, as a fallback for ``why``."""
    ones = (1.0,) * len(traj.steps)
    return StepWeights(tuple(s.index for s in traj.steps), (None,) * len(traj.steps), ones, ones,
                       tuple(step_token_counts(traj)), tuple(() for _ in traj.steps), why,
                       frozenset())


@register("oracle")
class Oracle:
    needs = (ORACLE_STEPS,)

    def __init__(self, subtract_min: bool = True, untraced_weight: float = 1.0,
                 std: bool = True, eps: float = 1e-6, negative: str = "blame",
                 floor: float = 0.0, inside: bool = False, positive: str = "necessary",
                 scale: str = "tokens", omission: str = "unit"):
        if omission not in OMISSION:
            raise ValueError(f"oracle: omission must be one of {', '.join(map(repr, OMISSION))},"
                             f" not {omission!r}")
        self.omission = omission
        if negative not in NEGATIVE:
            raise ValueError(f"oracle: negative must be one of {', '.join(map(repr, NEGATIVE))},"
                             f" not {negative!r}")
        if positive not in POSITIVE:
            raise ValueError(f"oracle: positive must be one of {', '.join(map(repr, POSITIVE))},"
                             f" not {positive!r}")
        self.positive, self.scale = positive, check_scale(scale, "oracle")  # as DepGPO's
        self.subtract_min, self.untraced_weight = subtract_min, untraced_weight
        self.std, self.eps, self.negative = std, eps, negative
        self.floor = check_floor(floor, "oracle")  # as DepGPO's (estimators/depgpo.py)
        # blame inside an errored command, against the task's own commands (estimators/inside.py)
        self.inside = bool(inside)
        if self.inside:
            self.needs = type(self).needs | {TOKEN_TEXT}

    def _weights(self, traj: Trajectory, hot: set[int]) -> StepWeights:
        """DepGPO's weights of credits 1 on ``hot`` steps, 0 on the other commands (a step
        without a command is untraced, None, unless it is hot: a blamed `done`)."""
        credits = [float(s.index in hot) if s.command is not None or s.index in hot else None
                   for s in traj.steps]
        n_tok = step_token_counts(traj)
        cw = step_weights(credits, n_tok, subtract_min=self.subtract_min,
                          untraced_weight=self.untraced_weight)
        return StepWeights(tuple(s.index for s in traj.steps), tuple(credits), cw.f, cw.w,
                           tuple(n_tok), tuple(() for _ in traj.steps), cw.fallback,
                           frozenset(hot))

    def step_weights(self, traj: Trajectory) -> StepWeights:
        """Credit on the necessary commands that ran cleanly."""
        return self._weights(traj, _labels(traj)["necessary"])

    def blame_weights(self, traj: Trajectory) -> StepWeights:
        """Blame on the breaking commands and on the commands that failed (``negative =
        "uniform"``: GRPO's unit weights, the ground truth used on solved episodes only)."""
        lab = _labels(traj)
        hot = lab["breaking"] | errored_steps(traj)
        if self.negative == "uniform":
            hot = set()
        elif self.omission == "also" and traj.info[INFO_KEY].get("untried", 0):
            hot |= final_done(traj)  # it said done with work never tried
        elif not hot and self.omission == "done":
            hot = final_done(traj)
        if not hot:  # an omission: nothing present is at fault
            return _unit(traj, "omission")
        return self._weights(traj, hot)

    def __call__(self, group: Group) -> EstimatorResult:
        adv_hat = group_advantages(group_rewards(group), std=self.std, eps=self.eps)
        weights = [self.blame_weights(t) if a < 0 else self.step_weights(t)
                   for t, a in zip(group, adv_hat)]
        # ``positive = "uniform"``: a solved one gets GRPO's unit weights; its credit is still
        # what the statistics describe, as DepGPO's are
        applied = [[1.0] * len(sw.w) if a >= 0 and self.positive == "uniform" else sw.w
                   for sw, a in zip(weights, adv_hat)]
        per_step = [[a * w for w in shaped(ws, self.scale, self.floor)]
                    for ws, a in zip(applied, adv_hat)]
        stats = summarize_weights(weights)
        stats["zero_advantage_group"] = float(is_zero_advantage(adv_hat))
        advantages = [broadcast(t, s) for t, s in zip(group, per_step)]
        if self.inside:
            refs = [t.info[INFO_KEY].get("references", []) for t in group]
            advantages, stats["inside_narrowed"] = narrow_failed(group, adv_hat, per_step,
                                                                 advantages, refs)
        return EstimatorResult(advantages=advantages, step_advantages=per_step, stats=stats)
