"""DepGPO's end-of-trial hook: every finished trial gets its dependency graph (``graph.json``),
from the trajectory's one analysis (``analysis.py``), which the estimator and every other
reader then reuse. Importing it also registers the step hook that builds the dependencies as
the episode runs (``live.py``)."""

from __future__ import annotations

from ..harness.hooks import register_trial_hook
from ..records import Trajectory
from ..trialdir import TrialPaths
from . import live  # noqa: F401  live: registers its step hook
from .analysis import analysis_of
from .report import write_graph_json


@register_trial_hook("depgpo-graph")
def write_graph(traj: Trajectory, paths: TrialPaths) -> None:
    write_graph_json(paths.root, analysis_of(traj))
