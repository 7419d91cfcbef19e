"""One trial's DepGPO credit for the viewer: per step credit, weight and classes, the reason
for a fallback to unit weights, and the dependency graph.

The graph comes from the trial's ``graph.json`` (the end-of-trial hook writes the annotated
graph: command nodes carry their step, credit, classes and the step's weight) when it is there
and matches the trajectory's commands; otherwise from the trajectory's one analysis
(``depgpo.analysis.analysis_of``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from ..depgpo.advantage import step_weights
from ..depgpo.analysis import analysis_of
from ..depgpo.graph import from_json
from ..records import Trajectory
from ..trialdir import TrialPaths


@dataclass
class TrialCredit:
    # step -> {step, credit, weight, classes}
    steps: dict[int, dict[str, Any]] = field(default_factory=dict)
    note: str = ""  # why there is no credit, or the fallback to unit weights
    graph: nx.MultiDiGraph | None = None
    source: str = ""  # "graph.json" or "analysis"


def _command_steps(traj: Trajectory) -> set[int]:
    return {s.index for s in traj.steps if s.command is not None}


def stored_graph(paths: TrialPaths, traj: Trajectory) -> nx.MultiDiGraph | None:
    """The trial's graph.json when it is readable and has the trajectory's command steps."""
    if not paths.graph.is_file():
        return None
    try:
        graph = from_json(paths.graph.read_text())
    except (OSError, ValueError, KeyError, TypeError, nx.NetworkXError):
        return None
    steps = {d.get("step") for _, d in graph.nodes(data=True) if d.get("type") == "command"}
    return graph if steps == _command_steps(traj) else None


def _from_graph(graph: nx.MultiDiGraph) -> tuple[dict[int, dict[str, Any]], str | None]:
    """Step rows from the annotated command nodes (a step's credit: the sum over its traced
    commands; its classes: theirs, in order), and the fallback reason, which the graph does
    not store: it follows from the step credits, token counts and verifier resources."""
    cmds = sorted((d for _, d in graph.nodes(data=True) if d.get("type") == "command"),
                  key=lambda d: d["index"])
    by_step: dict[int, list[dict[str, Any]]] = {}
    for d in cmds:
        by_step.setdefault(d["step"], []).append(d)
    rows, credits, n_tokens = {}, [], []
    for step in sorted(by_step):
        ds = by_step[step]
        traced = [d["credit"] for d in ds if d.get("credit") is not None]
        credit = sum(traced) if traced else None
        classes = list(dict.fromkeys(c for d in ds for c in d.get("classes") or []))
        rows[step] = {"step": step, "credit": credit, "weight": ds[0].get("weight"),
                      "classes": classes}
        credits.append(credit)
        n_tokens.append(max(int(d.get("n_tokens") or 0) for d in ds))
    has_resources = any(d.get("resource") for _, d in graph.nodes(data=True))
    return rows, step_weights(credits, n_tokens, has_resources=has_resources).fallback


def trial_credit(traj: Trajectory) -> TrialCredit:
    """The credit of ``traj`` (whose ``trial_dir`` is set); errors become the note."""
    if not any(s.command is not None and s.command.accesses is not None for s in traj.steps):
        return TrialCredit(note="no step has traced file accesses: no DepGPO credit")
    try:
        graph = stored_graph(TrialPaths(traj.trial_dir), traj) if traj.trial_dir else None
        if graph is not None:
            rows, fallback = _from_graph(graph)
            source = "graph.json"
        else:
            res = analysis_of(traj)
            sw = res.weights
            rows = {s: {"step": s, "credit": c, "weight": w, "classes": list(cl)}
                    for s, c, w, cl in zip(sw.steps, sw.credit, sw.w, sw.classes)}
            graph, fallback, source = res.graph.graph, sw.fallback, "analysis"
    except Exception as exc:  # a page without credit beats no page
        return TrialCredit(note=f"DepGPO credit unavailable: {type(exc).__name__}: {exc}")
    note = f"DepGPO fallback to unit weights: {fallback}" if fallback else ""
    return TrialCredit(rows, note, graph, source)
