"""One optimizer step on a batch of token sequences: micro-batched, globally normalised."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from .loss import LossConfig, LossInputs, global_counts, policy_loss
from .policy import pad_batch


def make_optimizer(name: str, params: Any, lr: float,
                   weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """The trainer's optimizer by its config name (``TrainConfig.optimizer``)."""
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}: adamw or sgd")


def ppo_update(policy: Any, opt: torch.optim.Optimizer, seqs: Sequence[Sequence[int]],
               masks: Sequence[Sequence[int]], advantages: Sequence[Sequence[float]],
               old: Sequence[Sequence[float]], ref: Sequence[Sequence[float]] | None,
               loss_cfg: LossConfig, *, micro_batch: int = 4,
               max_grad_norm: float = 1.0) -> dict[str, float]:
    """Gradients of every micro-batch add up to the full batch's (global token / sequence
    counts), then one optimizer step, clipped to ``max_grad_norm`` (0: not clipped). Returns
    loss, grad norm and loss metrics."""
    n_tok, n_seq = global_counts(torch.tensor(m, dtype=torch.float32)[None] for m in masks)
    dev = policy.device
    policy.model.train()
    opt.zero_grad(set_to_none=True)
    metrics: dict[str, float] = {}
    total = 0.0

    def pad(rows: Sequence[Sequence[float]]) -> torch.Tensor:
        return pad_batch(rows, 0.0, dtype=torch.float32, device=dev)[0]

    for lo in range(0, len(seqs), micro_batch):
        idx = range(lo, min(lo + micro_batch, len(seqs)))
        ids, attn = pad_batch([seqs[i] for i in idx], policy.pad_id, device=dev)
        mask = pad([masks[i] for i in idx])
        # the loss reads the masked tokens' log-probs alone (the others are multiplied by 0)
        logp = policy.forward_logprobs(ids, attn, only=mask)
        out = policy_loss(LossInputs(
            logprobs=logp, old_logprobs=pad([old[i] for i in idx]),
            advantages=pad([advantages[i] for i in idx]), loss_mask=mask,
            ref_logprobs=pad([ref[i] for i in idx]) if ref is not None else None,
            global_tokens=n_tok, global_seqs=n_seq), loss_cfg)
        out.loss.backward()
        total += float(out.loss.detach())
        weight = out.metrics.get("n_tokens", 0.0) / max(n_tok, 1.0)
        for k, v in out.metrics.items():
            if k != "n_tokens":
                metrics[k] = metrics.get(k, 0.0) + weight * v
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(),
                                               max_grad_norm or float("inf"))
    opt.step()
    policy.model.eval()
    return {"loss": total, "grad_norm": float(grad_norm), "kl": metrics.get("approx_kl", 0.0),
            **{f"loss/{k}": v for k, v in metrics.items()}}
