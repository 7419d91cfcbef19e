"""One DepGPO analysis per trajectory: every reader of a trajectory's credit takes it from here.

``analysis_of(traj, cfg)`` computes the trajectory's facts, its dependencies (the episode's
live builder's where it kept one, ``live.deps_for``), credit, step weights and annotated graph
once, and keeps the result with the trajectory (``Trajectory.live``, never written), so the
end-of-trial hook (``graph.json``), the estimator, OPD's scopes, the trainer's credit metrics,
refine, the viewer and ``termcredit credit``/``graph`` all read the same object.

The result is kept per settings (a DepGPO estimator with its own β has its own) and with what
it was computed from that can still change on a trajectory in memory (its steps, their token
counts, the verifier's resources); when any of those differ it is computed again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..records import Trajectory, step_token_counts
from . import Analysis, DepGPOConfig, analyse_graph
from .live import deps_for
from .load import facts_from_trajectory

KEY = "depgpo.analysis"


def _inputs(traj: Trajectory) -> tuple[Any, ...]:
    """What the analysis read that a trajectory in memory may still change (its steps are
    final once the episode is: the trainer only adds tokens and scores)."""
    resources = tuple(traj.verifier.resources) if traj.verifier else None
    return len(traj.steps), tuple(step_token_counts(traj)), resources, traj.trial_dir


def kept_analysis(traj: Trajectory, cfg: DepGPOConfig = DepGPOConfig()) -> Analysis | None:
    """The analysis of ``traj`` under ``cfg`` if it was computed and is still current."""
    hit = traj.live.get(KEY, {}).get(cfg)
    return hit[1] if hit is not None and hit[0] == _inputs(traj) else None


def analysis_of(traj: Trajectory, cfg: DepGPOConfig = DepGPOConfig()) -> Analysis:
    """DepGPO's analysis of ``traj`` under ``cfg``, computed once."""
    res = kept_analysis(traj, cfg)
    if res is None:
        facts = facts_from_trajectory(traj)
        deps = deps_for(traj, facts, diff_rewrites=cfg.diff_rewrites, reuse=cfg.reuse)
        kept = traj.live.setdefault(KEY, {})
        if any(other.graph.graph is deps.graph for _, other in kept.values()):
            # the live builder's drawing, annotated with other settings' credit: keep theirs
            deps = replace(deps, graph=deps.graph.copy())
        res = analyse_graph(facts, deps, cfg)
        kept[cfg] = (_inputs(traj), res)
    return res
