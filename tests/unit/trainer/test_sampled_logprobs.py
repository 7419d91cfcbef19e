"""The chunked log-probs of the sampled tokens against the textbook formula, value and gradient.

Reference, written out here: log p(y_t) = z[t-1, y_t] − log Σ_v exp(z[t-1, v]) (temperature τ:
z/τ), 0 at position 0; its gradient through autograd of log_softmax. Chunks smaller than the
batch's positions, a temperature, a half-precision input and an upstream gradient that is not
all ones (as the PPO loss sends) are all covered; a broken backward (softmax not subtracted, or
the target's entry not bumped) fails the gradient check.
"""

from __future__ import annotations

import math

import pytest
import torch

from termcredit.trainer.logprobs import sampled_logprobs


def reference(logits: torch.Tensor, ids: torch.Tensor, t: float) -> torch.Tensor:
    z = logits[:, :-1].double() / t
    lp = torch.log_softmax(z, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return torch.nn.functional.pad(lp, (1, 0))


@pytest.mark.parametrize("t,chunk", [(1.0, 3), (0.7, 5), (1.0, 10_000)])
def test_values_and_gradients_match_the_formula(t: float, chunk: int) -> None:
    torch.manual_seed(0)
    logits = torch.randn(2, 7, 11, dtype=torch.float64, requires_grad=True)
    ids = torch.randint(0, 11, (2, 7))
    up = torch.randn(2, 7, dtype=torch.float64)
    ours = sampled_logprobs(logits, ids, t, chunk=chunk)
    ref = reference(logits, ids, t)
    assert torch.allclose(ours.double(), ref, atol=1e-6)
    assert ours[:, 0].abs().max() == 0
    (g_ours,) = torch.autograd.grad((ours.double() * up).sum(), logits)
    (g_ref,) = torch.autograd.grad((ref * up).sum(), logits)
    assert torch.allclose(g_ours, g_ref, atol=1e-6)
    assert g_ours[:, -1].abs().max() == 0  # the last position predicts nothing


def test_one_position_by_hand() -> None:
    """z = (0, ln 3) over two tokens, the sampled one is token 1: p = 3/4, log p = ln 0.75;
    d log p / dz = onehot − softmax = (0 − 1/4, 1 − 3/4) = (−0.25, 0.25)."""
    logits = torch.tensor([[[0.0, math.log(3.0)], [0.0, 0.0]]], requires_grad=True)
    lp = sampled_logprobs(logits, torch.tensor([[0, 1]]))
    assert lp[0, 1].item() == pytest.approx(math.log(0.75))
    lp.sum().backward()
    assert logits.grad[0, 0].tolist() == pytest.approx([-0.25, 0.25])


def test_half_precision_logits_get_float32_logprobs_and_a_same_dtype_gradient() -> None:
    torch.manual_seed(1)
    logits = torch.randn(1, 5, 9).to(torch.bfloat16).requires_grad_()
    ids = torch.randint(0, 9, (1, 5))
    lp = sampled_logprobs(logits, ids, chunk=2)
    assert lp.dtype == torch.float32
    assert torch.allclose(lp.double(), reference(logits.detach().float(), ids, 1.0), atol=1e-5)
    lp.sum().backward()
    assert logits.grad is not None and logits.grad.dtype == torch.bfloat16


def test_half_precision_with_a_temperature_values_and_gradient() -> None:
    """The bf16 path (float32 chunks made by the subtraction) at τ = 0.7 against the reference
    on the same values in float64: log-probs to float32 noise, the gradient to bf16 rounding."""
    torch.manual_seed(2)
    logits = (3 * torch.randn(2, 6, 50)).to(torch.bfloat16).requires_grad_()
    ids = torch.randint(0, 50, (2, 6))
    up = torch.randn(2, 6)
    lp = sampled_logprobs(logits, ids, 0.7, chunk=4)
    exact = logits.detach().double().requires_grad_()
    ref = reference(exact, ids, 0.7)
    assert torch.allclose(lp.double(), ref, atol=1e-5)
    (lp * up).sum().backward()
    (g_ref,) = torch.autograd.grad((ref * up.double()).sum(), exact)
    assert logits.grad.dtype == torch.bfloat16
    assert torch.allclose(logits.grad.double(), g_ref, atol=1e-2, rtol=1e-2)
    assert float(g_ref.abs().max()) > 0.1  # a gradient worth comparing
