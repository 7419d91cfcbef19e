"""DepGPO: credit from what commands really did, spread over the steps of a trajectory.

Pipeline (each stage a pure function of the previous one's dataclass):
``EpisodeFacts`` -> ``dependencies`` (ownership + stdout reuse + cwd and shell-state links,
plain Python) -> ``assign_credit`` (per command) -> per-step sums -> ``step_weights`` (per
step f_t, w_t). The group-relative outcome decides the sign; execution dependency decides
the spread. ``analyse`` also draws the dependencies as an annotated NetworkX graph (``graph.json``,
``termcredit graph``). Every reader of one trajectory's credit (estimator, OPD's scopes,
metrics, refine, viewer, ``graph.json``) takes it from ``analysis.analysis_of``: one analysis
per trajectory and settings, from the dependencies its episode built as it ran.
"""

from __future__ import annotations

from dataclasses import dataclass

from .advantage import CreditWeights, step_weights
from .credit import CreditResult, DepGPOConfig, assign_credit
from .deps import DepBuilder, Dependencies, dependencies
from .facts import CommandFacts, EpisodeFacts, text_of
from .graph import (
    DepGraph,
    GraphBuilder,
    add_verifier_edges,
    annotate,
    build_graph,
    from_json,
    to_json,
)
from .ownership import (
    WHOLE_FILE,
    CommandEffects,
    FileVersion,
    LineRecord,
    OwnershipTracker,
    ResourceWrite,
    track_ownership,
)
from .stdout_reuse import ReuseConfig, StdoutReuse, extract_values, stdout_sources


@dataclass(frozen=True)
class StepWeights:
    """One trajectory's per-step credit and weights (A_t = Â · w_t)."""

    steps: tuple[int, ...]  # step indices, ascending
    credit: tuple[float | None, ...]  # C_t: sum over the step's commands; None: untraced
    f: tuple[float, ...]  # min-max weight, mean 1 over traced steps
    w: tuple[float, ...]  # token-normalised weight: A_t = Â · w_t
    n_tokens: tuple[int, ...]
    classes: tuple[tuple[str, ...], ...]  # labels of the step's commands
    fallback: str | None  # reason GRPO unit weights were used, or None
    relevant: frozenset[int]  # steps with a command on a path to the verified result


@dataclass
class Analysis:
    graph: DepGraph  # graph.graph: the annotated NetworkX graph (for graph.json)
    credit: CreditResult  # per command
    weights: StepWeights  # per step
    facts: EpisodeFacts | None = None  # what it was computed from


def _per_step(facts: EpisodeFacts, deps: Dependencies, credit: CreditResult,
              cfg: DepGPOConfig) -> StepWeights:
    order: dict[int, list[int]] = {}
    for c, cmd in enumerate(facts.commands):
        order.setdefault(cmd.index, []).append(c)
    steps = sorted(order)
    step_credit: list[float | None] = []
    n_tok, labels = [], []
    for s in steps:
        cs = order[s]
        traced = [credit.credit[c] for c in cs if credit.credit[c] is not None]
        step_credit.append(sum(traced) if traced else None)
        n_tok.append(max(facts.commands[c].n_tokens for c in cs))
        seen: dict[str, None] = {}
        for c in cs:
            seen.update(dict.fromkeys(credit.classes[c]))
        labels.append(tuple(seen))
    wts = step_weights(step_credit, n_tok, has_resources=bool(deps.resources),
                       subtract_min=cfg.subtract_min, untraced_weight=cfg.untraced_weight)
    rel_steps = frozenset(facts.commands[c].index for c in credit.relevant)
    return StepWeights(tuple(steps), tuple(step_credit), wts.f, wts.w, tuple(n_tok),
                       tuple(labels), wts.fallback, rel_steps)


def analyse(facts: EpisodeFacts, cfg: DepGPOConfig = DepGPOConfig()) -> Analysis:
    """Credit, step weights and the annotated dependency graph of one trajectory."""
    return analyse_graph(facts, build_graph(facts, diff_rewrites=cfg.diff_rewrites,
                                            reuse=cfg.reuse), cfg)


def analyse_graph(facts: EpisodeFacts, dg: DepGraph, cfg: DepGPOConfig = DepGPOConfig()
                  ) -> Analysis:
    """``analyse`` from the facts' dependencies under ``cfg``, already built and drawn (``dg``:
    the episode's live builder's, ``live.deps_for``); annotates ``dg.graph`` in place."""
    cr = assign_credit(dg, cfg)
    sw = _per_step(facts, dg, cr, cfg)
    annotate(dg.graph, cr.credit, cr.classes, dict(zip(sw.steps, sw.w)))
    add_verifier_edges(dg.graph, cr.deps)
    return Analysis(dg, cr, sw, facts)


def depgpo_step_weights(facts: EpisodeFacts, cfg: DepGPOConfig = DepGPOConfig(),
                        deps: Dependencies | None = None) -> StepWeights:
    """Per-step credit, weights and classes of one trajectory, as ``analyse(...).weights``
    but without drawing the graph (the training path). ``deps``: the facts' dependencies
    under ``cfg`` when already built (``live.deps_for``)."""
    if deps is None:
        deps = dependencies(facts, diff_rewrites=cfg.diff_rewrites, reuse=cfg.reuse)
    return _per_step(facts, deps, assign_credit(deps, cfg), cfg)


__all__ = [
    "WHOLE_FILE", "Analysis", "CommandEffects", "CommandFacts", "CreditResult", "CreditWeights",
    "DepBuilder", "DepGPOConfig", "DepGraph", "Dependencies", "EpisodeFacts", "FileVersion",
    "GraphBuilder", "LineRecord", "OwnershipTracker", "ResourceWrite", "ReuseConfig",
    "StdoutReuse", "StepWeights", "analyse", "analyse_graph", "annotate", "assign_credit",
    "build_graph", "dependencies", "depgpo_step_weights", "extract_values", "from_json", "step_weights",
    "stdout_sources", "text_of", "to_json", "track_ownership",
]
