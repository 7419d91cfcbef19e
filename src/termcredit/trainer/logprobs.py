"""Log-probs of the sampled tokens, without a full-vocabulary log-softmax per position.

The loss needs log p(y_t) = z_t[y_t] − logsumexp(z_t) at each position, nothing else of the
distribution. Autograd through ``logsumexp`` + ``gather`` keeps the logits and, in backward,
builds the softmax and a scattered one-hot as separate [B, T, V] tensors before adding them.
``sampled_logprobs`` does both passes in row chunks with a hand-written backward:
d log p(y) / dz = onehot(y) − softmax(z), so the gradient is one [B, T, V] tensor written chunk
by chunk (``exp(z − lse)`` scaled in place, the target's entry bumped), and the float32 copy of
a half-precision chunk never exists for the whole batch at once.
"""

from __future__ import annotations

import torch

CHUNK_ROWS = 1024  # positions per chunk: a chunk is CHUNK_ROWS x V floats


class _SampledLogProbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor, temperature: float,  # type: ignore[override]
                chunk: int) -> torch.Tensor:
        flat = logits.reshape(-1, logits.shape[-1])
        tgt = targets.reshape(-1, 1)
        out = torch.empty(flat.shape[0], dtype=torch.float32, device=logits.device)
        lse = torch.empty_like(out)
        for lo in range(0, flat.shape[0], chunk):
            c = flat[lo:lo + chunk]
            # logsumexp by hand: the float32 chunk is made by the subtraction itself (no
            # separate upcast copy of a half-precision chunk) and exponentiated in place
            m = c.amax(-1, keepdim=True).float()
            e = torch.sub(c, m)
            if temperature != 1.0:
                e.mul_(1.0 / temperature)
            lse[lo:lo + chunk] = m.squeeze(1) / temperature + e.exp_().sum(-1).log()
            out[lo:lo + chunk] = (c.gather(1, tgt[lo:lo + chunk]).squeeze(1).float() / temperature
                                  - lse[lo:lo + chunk])
        ctx.save_for_backward(logits, targets, lse)
        ctx.temperature, ctx.chunk = temperature, chunk
        return out.view(targets.shape)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):  # type: ignore[override]
        logits, targets, lse = ctx.saved_tensors
        t, chunk = ctx.temperature, ctx.chunk
        flat = logits.reshape(-1, logits.shape[-1])
        tgt = targets.reshape(-1, 1)
        g = grad_out.reshape(-1, 1).float()
        grad = torch.empty_like(flat)
        in_place = flat.dtype == torch.float32  # else computed in float32, then cast
        for lo in range(0, flat.shape[0], chunk):
            c = flat[lo:lo + chunk]
            # softmax of the chunk, exp((z - t·lse) / t), straight into the gradient where the
            # dtypes agree (else a float32 chunk, made by the subtraction: no upcast copy)
            p = grad[lo:lo + chunk] if in_place else torch.empty(c.shape, dtype=torch.float32,
                                                                  device=c.device)
            torch.sub(c, lse[lo:lo + chunk, None] * t, out=p)
            if t != 1.0:
                p.div_(t)
            gc = g[lo:lo + chunk] / t  # d(z/t)/dz = 1/t, folded into the upstream gradient
            p.exp_().mul_(-gc)
            p.scatter_add_(1, tgt[lo:lo + chunk], gc)
            if not in_place:
                grad[lo:lo + chunk] = p
        return grad.view_as(logits), None, None, None


def sampled_logprobs(logits: torch.Tensor, input_ids: torch.Tensor, temperature: float = 1.0,
                     *, chunk: int = CHUNK_ROWS) -> torch.Tensor:
    """logits [B, T, V] from a forward over input_ids [B, T] -> log p(token t | tokens < t)
    [B, T] in float32, position 0 = 0 (nothing predicts it). ``temperature`` 0 or 1: the raw
    distribution."""
    t = temperature if temperature > 0 else 1.0
    # position t's logits predict token t+1; the last position predicts nothing (target 0,
    # its value dropped below, so its gradient is 0)
    targets = torch.nn.functional.pad(input_ids[:, 1:], (0, 1))
    lp = _SampledLogProbs.apply(logits, targets, float(t), chunk)
    return torch.nn.functional.pad(lp[:, :-1], (1, 0))


def target_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0,
                    *, chunk: int = CHUNK_ROWS) -> torch.Tensor:
    """logits [N, V] and the token each row predicts [N] -> log p(target) [N] in float32 (the
    rows already paired: no shift). ``temperature`` 0 or 1: the raw distribution."""
    t = temperature if temperature > 0 else 1.0
    return _SampledLogProbs.apply(logits[None], targets[None], float(t), chunk)[0]
