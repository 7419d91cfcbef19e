"""Policy loss: PPO clip with DAPO clip-higher, dual clip, optional k3 KL, global aggregation.

Per token (verl's ``compute_policy_loss`` semantics):
    r  = exp(clamp(logp - old_logp, ±20))
    L  = max(-A·r, -A·clip(r, 1-eps_low, 1+eps_high))        eps_high > eps_low: clip-higher
    L  = min(L, -A·c)            where A < 0                  dual clip (c = 3; None: off)
    L += kl_coef · clamp(exp(d) - d - 1, ±10), d = ref - logp  k3 / "low_var_kl" (GRPO)
    L -= entropy_coef · H
then ``aggregate`` with GLOBAL counts (tokens, non-empty sequences of the whole optimizer batch),
so summing the losses of micro-batches == the loss of the full batch, gradients included:
    token-mean               Σ L·m / global_tokens                               (DAPO)
    seq-mean-token-mean      Σ_i (Σ_t L·m / Σ_t m) / global_seqs                 (GRPO)
    seq-mean-token-sum       Σ L·m / global_seqs
    seq-mean-token-sum-norm  Σ L·m / (global_seqs · norm_len)                    (Dr. GRPO)
The last one keeps Dr. GRPO's 1/G (its paper and TRL's ``dr_grpo``); verl divides by
``norm_len`` only, which differs by the constant batch size (a learning-rate rescale).
Fully masked rows count for nothing. Without global counts, the micro-batch's own are used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import torch
from torch import Tensor

AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")


@dataclass
class LossConfig:
    eps_low: float = 0.2
    eps_high: float = 0.2  # 0.28: DAPO clip-higher
    dual_clip_c: float | None = 3.0  # applied where A < 0; None disables
    kl_coef: float = 0.0  # k3 to a frozen reference (needs ref_logprobs)
    entropy_coef: float = 0.0  # bonus (needs entropy)
    agg: str = "token-mean"
    norm_len: int | None = None  # L_max, constant, for seq-mean-token-sum-norm


@dataclass
class LossInputs:
    logprobs: Tensor  # [B, T] current policy, with grad (forward_logprobs alignment)
    old_logprobs: Tensor  # [B, T] behaviour / old policy
    advantages: Tensor  # [B, T] (a [B] tensor is broadcast over tokens)
    loss_mask: Tensor  # [B, T] 1 on sampled action tokens
    ref_logprobs: Tensor | None = None  # [B, T] for the k3 KL term
    entropy: Tensor | None = None  # [B, T] for the entropy bonus / metric
    global_tokens: float | None = None  # masked tokens in the whole optimizer batch
    global_seqs: float | None = None  # non-empty sequences in the whole optimizer batch


@dataclass
class LossOutputs:
    loss: Tensor  # scalar; sum these over micro-batches (already globally normalised)
    metrics: dict[str, float] = field(default_factory=dict)  # masked means over this micro-batch


def global_counts(loss_masks: Iterable[Tensor]) -> tuple[float, float]:
    """(tokens, non-empty sequences) over all micro-batches of one optimizer step."""
    tokens = seqs = 0.0
    for m in loss_masks:
        tokens += float(m.sum())
        seqs += float((m.sum(-1) > 0).sum())
    return tokens, seqs


def aggregate(values: Tensor, mask: Tensor, mode: str = "token-mean", *,
              global_tokens: float | None = None, global_seqs: float | None = None,
              norm_len: int | None = None) -> Tensor:
    m = mask.to(values.dtype)
    per_seq_tokens = m.sum(-1)
    n_seqs = global_seqs if global_seqs is not None else float((per_seq_tokens > 0).sum())
    n_seqs = max(n_seqs, 1.0)
    if mode == "token-mean":
        n_tok = global_tokens if global_tokens is not None else float(m.sum())
        return (values * m).sum() / max(n_tok, 1.0)
    if mode == "seq-mean-token-mean":
        return ((values * m).sum(-1) / per_seq_tokens.clamp(min=1)).sum() / n_seqs
    if mode == "seq-mean-token-sum":
        return (values * m).sum() / n_seqs
    if mode == "seq-mean-token-sum-norm":
        if not norm_len:
            raise ValueError("seq-mean-token-sum-norm needs a constant norm_len (L_max)")
        return (values * m).sum() / (n_seqs * norm_len)
    raise ValueError(f"unknown aggregation {mode!r}: choose from {', '.join(AGG_MODES)}")


def policy_loss(inp: LossInputs, cfg: LossConfig | None = None) -> LossOutputs:
    cfg = cfg or LossConfig()
    mask = inp.loss_mask.to(inp.logprobs.dtype)
    adv = inp.advantages.to(inp.logprobs.dtype)
    if adv.dim() == 1:
        adv = adv[:, None].expand_as(inp.logprobs)
    log_ratio = (inp.logprobs - inp.old_logprobs).clamp(-20.0, 20.0)
    ratio = log_ratio.exp()
    l1 = -adv * ratio
    l2 = -adv * ratio.clamp(1 - cfg.eps_low, 1 + cfg.eps_high)
    clipped = torch.maximum(l1, l2)
    per_tok = clipped
    dual = torch.zeros_like(mask, dtype=torch.bool)
    if cfg.dual_clip_c is not None:
        cap = -adv * cfg.dual_clip_c
        dual = (adv < 0) & (clipped > cap)
        per_tok = torch.where(adv < 0, torch.minimum(clipped, cap), clipped)
    kl = None
    if cfg.kl_coef:
        if inp.ref_logprobs is None:
            raise ValueError("kl_coef > 0 needs ref_logprobs")
        d = inp.ref_logprobs - inp.logprobs
        kl = (d.exp() - d - 1).clamp(-10.0, 10.0)
        per_tok = per_tok + cfg.kl_coef * kl
    if cfg.entropy_coef:
        if inp.entropy is None:
            raise ValueError("entropy_coef > 0 needs entropy")
        per_tok = per_tok - cfg.entropy_coef * inp.entropy
    loss = aggregate(per_tok, mask, cfg.agg, global_tokens=inp.global_tokens,
                     global_seqs=inp.global_seqs, norm_len=cfg.norm_len)

    with torch.no_grad():
        n = mask.sum().clamp(min=1)

        def mean(x: Tensor) -> float:
            return float((x.to(mask.dtype) * mask).sum() / n)

        metrics = {
            "clip_frac": mean(l2 > l1),
            "clip_low_frac": mean((ratio < 1 - cfg.eps_low) & (adv < 0)),
            "clip_high_frac": mean((ratio > 1 + cfg.eps_high) & (adv > 0)),
            "dual_clip_frac": mean(dual),
            "approx_kl": mean(ratio - 1 - log_ratio),  # k3 estimate of KL(old || new)
            "ratio_mean": mean(ratio),
            "ratio_max": float(ratio.masked_fill(mask == 0, 0).max()) if mask.any() else 0.0,
            "n_tokens": float(mask.sum()),
        }
        if kl is not None:
            metrics["kl_ref"] = mean(kl)
        if inp.entropy is not None:
            metrics["entropy"] = mean(inp.entropy)
    return LossOutputs(loss, metrics)
