"""DepGPO: credit from what commands really did, spread over the steps of a trajectory.

Pipeline (each stage a pure function of the previous one's dataclass):
``EpisodeFacts`` -> ``build_graph`` (ownership + stdout reuse + NetworkX graph) ->
``assign_credit`` (per command) -> per-step sums -> ``step_weights`` (per step f_t, w_t).
The group-relative outcome decides the sign; execution dependency decides the spread.
"""

from __future__ import annotations

from dataclasses import dataclass

from .advantage import Weights, step_advantages, step_weights
from .credit import CreditResult, DepGPOConfig, assign_credit
from .facts import CommandFacts, EpisodeFacts, Version
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
    OwnershipTracker,
    Record,
    ResourceWrite,
    track,
)
from .stdout_reuse import ReuseConfig, StdoutReuse, extract_values, stdout_sources


@dataclass(frozen=True)
class StepWeights:
    steps: tuple[int, ...]  # step indices, ascending
    credit: tuple[float | None, ...]  # C_t: sum over the step's commands; None: untraced
    f: tuple[float, ...]  # min-max weight, mean 1 over traced steps
    w: tuple[float, ...]  # token-normalised weight: A_t = Â · w_t
    n_tokens: tuple[int, ...]
    classes: tuple[tuple[str, ...], ...]  # labels of the step's commands
    fallback: str | None  # reason GRPO unit weights were used, or None
    relevant: frozenset[int]  # steps with a command on a path to the verified result

    def advantages(self, adv_hat: float) -> list[float]:
        return step_advantages(adv_hat, self.w)


@dataclass
class Analysis:
    graph: DepGraph  # graph.graph: the annotated NetworkX graph (for graph.json)
    credit: CreditResult  # per command
    weights: StepWeights  # per step


def _steps(facts: EpisodeFacts, credit: CreditResult) -> tuple[list[int], list, list, list]:
    order: dict[int, list[int]] = {}
    for c, cmd in enumerate(facts.commands):
        order.setdefault(cmd.index, []).append(c)
    steps = sorted(order)
    step_credit, n_tok, labels = [], [], []
    for s in steps:
        cs = order[s]
        traced = [credit.credit[c] for c in cs if credit.credit[c] is not None]
        step_credit.append(sum(traced) if traced else None)
        n_tok.append(max(facts.commands[c].n_tokens for c in cs))
        seen: dict[str, None] = {}
        for c in cs:
            seen.update(dict.fromkeys(credit.classes[c]))
        labels.append(tuple(seen))
    return steps, step_credit, n_tok, labels


def analyse(facts: EpisodeFacts, cfg: DepGPOConfig = DepGPOConfig()) -> Analysis:
    dg = build_graph(facts, diff_rewrites=cfg.diff_rewrites, reuse=cfg.reuse)
    cr = assign_credit(dg, cfg)
    steps, step_credit, n_tok, labels = _steps(facts, cr)
    wts = step_weights(step_credit, n_tok, has_resources=bool(dg.resources),
                       subtract_min=cfg.subtract_min)
    rel_steps = frozenset(facts.commands[c].index for c in cr.relevant)
    sw = StepWeights(tuple(steps), tuple(step_credit), wts.f, wts.w, tuple(n_tok),
                     tuple(labels), wts.fallback, rel_steps)
    annotate(dg.graph, cr.credit, cr.classes, dict(zip(steps, wts.w)))
    add_verifier_edges(dg.graph, cr.deps)
    return Analysis(dg, cr, sw)


def depgpo_step_weights(facts: EpisodeFacts, cfg: DepGPOConfig = DepGPOConfig()) -> StepWeights:
    """Per-step credit, weights and classes of one trajectory (see ``analyse`` for the graph)."""
    return analyse(facts, cfg).weights


__all__ = [
    "WHOLE_FILE", "Analysis", "CommandEffects", "CommandFacts", "CreditResult", "DepGPOConfig",
    "DepGraph", "EpisodeFacts", "FileVersion", "GraphBuilder", "OwnershipTracker", "Record",
    "ResourceWrite", "ReuseConfig", "StdoutReuse", "StepWeights", "Version", "Weights", "analyse",
    "annotate", "assign_credit", "build_graph", "depgpo_step_weights", "extract_values",
    "from_json", "stdout_sources", "step_advantages", "step_weights", "to_json", "track",
]
