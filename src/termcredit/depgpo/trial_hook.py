"""DepGPO's hooks, the default set every application passes to its episodes (``termcredit
run``, ``refine``, ``credit-audit``, ``tasks check``, the trainer's rollouts: ``Hooks`` in
harness/hooks.py), so each of their trial directories gets the same files. The step hook
builds the dependencies as the episode runs (``live.feed``); the end-of-trial hook writes the
trial's dependency graph (``graph.json``) from the trajectory's one analysis
(``analysis.py``), which the estimator and every other reader then reuse. Nothing is
registered by importing this module: an episode runs the hooks its caller gave it."""

from __future__ import annotations

from ..harness.hooks import Hooks
from ..records import Trajectory
from ..trialdir import TrialPaths
from .analysis import analysis_of
from .live import feed
from .report import write_graph_json


def write_graph(traj: Trajectory, paths: TrialPaths) -> None:
    write_graph_json(paths.root, analysis_of(traj))


_DEFAULT = Hooks(step=(("depgpo-dependencies", feed),), trial=(("depgpo-graph", write_graph),))


def default_hooks() -> Hooks:
    """The hooks an application passes to each ``Episode``: DepGPO's dependencies built as the
    episode runs, and the trial's graph.json."""
    return _DEFAULT
