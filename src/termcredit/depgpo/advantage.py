"""Step weights from step credits: how a trajectory's advantage is spread over its steps.

Over the K traced steps of a trajectory

    f_t = K · (C_t − min_s C_s) / Σ_s (C_s − min_s C_s)     (``subtract_min``, the default)
    f_t = K · C_t / Σ_s C_s                                 (``subtract_min=False``)

so f averages 1 over traced steps; untraced steps (no command ran: an invalid action, the
`done` action) get f_t = u, the ``untraced_weight`` (default 1: as much as the average traced
step). Then the token normalisation ``w_t = f_t / (Σ_s n_s f_s / Σ_s n_s)`` (the sum over all
steps, untraced ones included) and ``A_{i,t} = Â_i · w_t`` keep the token-weighted mean of the
trajectory's advantage at Â_i for every u ≥ 0, and w_t ≥ 0 never flips its sign. What u
changes is the share: u < 1 moves advantage from untraced steps to the traced ones (u = 0:
untraced steps get none, the traced ones carry all of Â_i), u > 1 the other way; f then no
longer averages 1 over all steps, only over the traced ones. Whether the paper subtracts the
minimum this way follows the third-party re-implementation; the switch keeps the plain
proportional reading available.

GRPO unit weights (all w_t = 1, untraced steps included, whatever u) are the fallback, with
the reason recorded: ``no-traced-steps``, ``no-verifier-resources``, ``tied-credits`` (all
traced credits equal, within a relative 1e-12, one traced step included) or
``zero-denominator`` (nothing left to normalise by, e.g. every positive-weight step has zero
loss tokens, or u = 0 and only untraced steps have tokens).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

TIE_RTOL = 1e-12


@dataclass(frozen=True)
class CreditWeights:
    """What ``step_weights`` makes of a trajectory's step credits (``StepWeights`` adds the
    credits, classes and token counts they came from)."""

    f: tuple[float, ...]  # mean 1 over traced steps
    w: tuple[float, ...]  # token-normalised: Σ n_t w_t = Σ n_t
    fallback: str | None  # why GRPO unit weights were used, or None


def _unit(k: int, reason: str) -> CreditWeights:
    ones = (1.0,) * k
    return CreditWeights(ones, ones, reason)


def step_weights(credits: Sequence[float | None], n_tokens: Sequence[int], *,
                 has_resources: bool = True, subtract_min: bool = True,
                 untraced_weight: float = 1.0) -> CreditWeights:
    """``credits[t]`` is C_t, or None for an untraced step; ``n_tokens[t]`` its loss tokens;
    ``untraced_weight`` the f_t of an untraced step (finite, ≥ 0)."""
    k = len(credits)
    if len(n_tokens) != k:
        raise ValueError(f"{k} step credits but {len(n_tokens)} token counts")
    if not (math.isfinite(untraced_weight) and untraced_weight >= 0):
        raise ValueError(f"untraced_weight must be finite and >= 0, got {untraced_weight}")
    traced = [c for c in credits if c is not None]
    if any(not math.isfinite(c) or c < 0 for c in traced):
        raise ValueError(f"step credits must be finite and >= 0: {list(credits)}")
    if any(n < 0 for n in n_tokens):
        raise ValueError(f"token counts must be >= 0: {list(n_tokens)}")
    if not traced:
        return _unit(k, "no-traced-steps")
    if not has_resources:
        return _unit(k, "no-verifier-resources")
    lo, hi = min(traced), max(traced)
    if hi - lo <= TIE_RTOL * max(1.0, hi):
        return _unit(k, "tied-credits")
    base = lo if subtract_min else 0.0
    denom = math.fsum(c - base for c in traced)
    if not denom > 0:
        return _unit(k, "zero-denominator")
    K = len(traced)
    f = tuple(untraced_weight if c is None else K * (c - base) / denom for c in credits)
    total_n = math.fsum(n_tokens)
    weighted = math.fsum(n * x for n, x in zip(n_tokens, f))
    if not (total_n > 0 and weighted > 0):
        return _unit(k, "zero-denominator")
    scale = total_n / weighted
    return CreditWeights(f, tuple(x * scale for x in f), None)

