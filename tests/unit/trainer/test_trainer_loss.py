"""Policy loss: clipping, dual clip, k3 KL, aggregation modes, micro-batch invariance."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from termcredit.trainer.loss import (AGG_MODES, LossConfig, LossInputs, aggregate,  # noqa: E402
                                     global_counts, policy_loss)


def _one(logp, old, adv, cfg=None, **kw):
    t = lambda x: torch.tensor([[x]], dtype=torch.float64)  # noqa: E731
    out = policy_loss(LossInputs(t(logp), t(old), t(adv), t(1.0), **kw), cfg)
    return float(out.loss), out.metrics


def test_clipped_surrogate_cases():
    r = math.log(1.5)
    # A > 0, ratio above 1 + eps: clipped at 1.2 -> loss -A * 1.2, gradient-free branch
    assert _one(r, 0.0, 2.0)[0] == pytest.approx(-2.0 * 1.2)
    assert _one(r, 0.0, 2.0)[1]["clip_frac"] == 1.0
    # clip-higher: eps_high 0.28 lets the ratio go further
    assert _one(r, 0.0, 2.0, LossConfig(eps_high=0.28))[0] == pytest.approx(-2.0 * 1.28)
    # A > 0 and ratio below 1 - eps: unclipped (pessimistic max picks -A*r)
    assert _one(math.log(0.5), 0.0, 1.0)[0] == pytest.approx(-0.5)
    # A < 0, ratio 0.5: clipped at 1 - eps = 0.8
    assert _one(math.log(0.5), 0.0, -1.0)[0] == pytest.approx(0.8)
    # A < 0, huge ratio: dual clip caps at -A * c
    assert _one(math.log(10.0), 0.0, -1.0)[0] == pytest.approx(3.0)
    assert _one(math.log(10.0), 0.0, -1.0)[1]["dual_clip_frac"] == 1.0
    assert _one(math.log(10.0), 0.0, -1.0, LossConfig(dual_clip_c=None))[0] == pytest.approx(10.0)
    # on-policy: loss = -A, approx KL 0
    loss, m = _one(-1.3, -1.3, 0.7)
    assert loss == pytest.approx(-0.7) and m["approx_kl"] == pytest.approx(0.0)


def test_k3_kl_term():
    base, _ = _one(-1.0, -1.0, 0.0)
    same, m = _one(-1.0, -1.0, 0.0, LossConfig(kl_coef=0.5), ref_logprobs=torch.tensor([[-1.0]],
                                                                                         dtype=torch.float64))
    assert same == base == 0.0 and m["kl_ref"] == 0.0
    d = -2.0 - (-1.0)
    kl, _ = _one(-1.0, -1.0, 0.0, LossConfig(kl_coef=0.5),
                 ref_logprobs=torch.tensor([[-2.0]], dtype=torch.float64))
    assert kl == pytest.approx(0.5 * (math.exp(d) - d - 1))
    with pytest.raises(ValueError):
        _one(-1.0, -1.0, 0.0, LossConfig(kl_coef=0.1))


def test_aggregation_modes_by_hand():
    v = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 0.0, 0.0], [9.0, 9.0, 9.0, 9.0]])
    m = torch.tensor([[1, 1, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    assert float(aggregate(v, m, "token-mean")) == pytest.approx((1 + 2 + 3 + 5) / 4)
    assert float(aggregate(v, m, "seq-mean-token-mean")) == pytest.approx((2.0 + 5.0) / 2)
    assert float(aggregate(v, m, "seq-mean-token-sum")) == pytest.approx((6 + 5) / 2)
    assert float(aggregate(v, m, "seq-mean-token-sum-norm", norm_len=8)) == pytest.approx(11 / 16)
    with pytest.raises(ValueError):
        aggregate(v, m, "seq-mean-token-sum-norm")
    with pytest.raises(ValueError):
        aggregate(v, m, "sum")
    assert global_counts([m, m[:1]]) == (7.0, 3.0)


@pytest.mark.parametrize("mode", AGG_MODES)
@pytest.mark.parametrize("kl_coef", [0.0, 0.1])
def test_micro_batches_sum_to_the_full_batch(mode, kl_coef):
    g = torch.Generator().manual_seed(0)
    B, T, V = 7, 9, 11
    logits = torch.randn(B, T, V, generator=g, dtype=torch.float64)
    ids = torch.randint(0, V, (B, T), generator=g)
    mask = (torch.rand(B, T, generator=g) < 0.6).long()
    mask[3] = 0  # a fully masked row counts for nothing
    old = torch.log_softmax(logits + 0.3 * torch.randn(B, T, V, generator=g, dtype=torch.float64), -1) \
        .gather(-1, ids[..., None]).squeeze(-1)
    ref = old - 0.1
    adv = torch.randn(B, generator=g, dtype=torch.float64)[:, None].expand(B, T).clone()
    cfg = LossConfig(eps_low=0.2, eps_high=0.28, kl_coef=kl_coef, agg=mode, norm_len=T)
    tokens, seqs = global_counts([mask])

    def run(rows_list):
        w = logits.clone().requires_grad_(True)
        total = 0.0
        for rows in rows_list:
            lp = torch.log_softmax(w[rows], -1).gather(-1, ids[rows][..., None]).squeeze(-1)
            out = policy_loss(LossInputs(lp, old[rows], adv[rows], mask[rows], ref_logprobs=ref[rows],
                                         global_tokens=tokens, global_seqs=seqs), cfg)
            out.loss.backward()
            total = total + float(out.loss.detach())
        return total, w.grad

    full_loss, full_grad = run([list(range(B))])
    split_loss, split_grad = run([[0, 1], [2, 3, 4], [5], [6]])
    assert split_loss == pytest.approx(full_loss, rel=1e-12, abs=1e-12)
    assert torch.allclose(split_grad, full_grad, atol=1e-12)
    assert full_grad.abs().sum() > 0


def test_metrics_and_entropy_bonus():
    lp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    ent = torch.tensor([[2.0, 2.0]])
    inp = LossInputs(lp, lp.detach(), torch.tensor([1.0]), torch.tensor([[1, 1]]), entropy=ent)
    out = policy_loss(inp, LossConfig(entropy_coef=0.1))
    assert float(out.loss.detach()) == pytest.approx(-1.0 - 0.2)
    assert set(out.metrics) >= {"clip_frac", "dual_clip_frac", "approx_kl", "ratio_mean",
                                "ratio_max", "entropy", "n_tokens"}
    assert out.metrics["entropy"] == 2.0 and out.metrics["n_tokens"] == 2.0
