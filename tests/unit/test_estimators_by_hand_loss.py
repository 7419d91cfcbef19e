"""The policy loss (GRPO / Dr.GRPO / DAPO modes) and its metrics on a hand-built batch; every
expected number is worked out by hand below.

Two rows of three tokens, default config (ε_low = ε_high = 0.2, dual clip c = 3):
  row 0, A = +1, ratios [1.5, 0.5, 1.0], mask [1, 1, 1]
     -A·r = [-1.5, -0.5, -1.0]; -A·clip(r) = [-1.2, -0.8, -1.0]; max -> [-1.2, -0.5, -1.0]
  row 1, A = -2, ratios [0.5, 10, 20], mask [1, 1, 0]
     -A·r = [1, 20, 40]; -A·clip(r) = [1.6, 2.4, 2.4]; max -> [1.6, 20, 40];
     dual clip min(·, -A·c = 6) -> [1.6, 6, 6] (the third token is masked)
Masked sums: row 0 -2.7 (3 tokens), row 1 7.6 (2 tokens); all 4.9 over 5 tokens.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from termcredit.trainer.loss import LossConfig, LossInputs, policy_loss  # noqa: E402

RATIOS = [[1.5, 0.5, 1.0], [0.5, 10.0, 20.0]]
MASK = [[1, 1, 1], [1, 1, 0]]


def batch(**kw) -> LossInputs:
    logp = torch.tensor([[math.log(r) for r in row] for row in RATIOS], dtype=torch.float64)
    return LossInputs(logprobs=logp, old_logprobs=torch.zeros_like(logp),
                      advantages=torch.tensor([1.0, -2.0], dtype=torch.float64),
                      loss_mask=torch.tensor(MASK), **kw)


def loss(cfg: LossConfig | None = None, **kw) -> float:
    return float(policy_loss(batch(**kw), cfg).loss)


@pytest.mark.parametrize("agg,kw,expected", [
    ("token-mean", {}, 4.9 / 5),
    ("token-mean", {"global_tokens": 10.0}, 4.9 / 10),
    ("seq-mean-token-mean", {}, (-2.7 / 3 + 7.6 / 2) / 2),
    ("seq-mean-token-mean", {"global_seqs": 4.0}, (-2.7 / 3 + 7.6 / 2) / 4),
    ("seq-mean-token-sum", {}, 4.9 / 2),
    ("seq-mean-token-sum", {"global_seqs": 5.0}, 4.9 / 5),
    ("seq-mean-token-sum-norm", {}, 4.9 / (2 * 4)),  # Dr.GRPO: L_max = 4
])
def test_aggregations(agg: str, kw: dict, expected: float) -> None:
    assert loss(LossConfig(agg=agg, norm_len=4), **kw) == pytest.approx(expected)


def test_default_is_token_mean_with_clip_02_and_dual_clip_3() -> None:
    assert loss() == pytest.approx(4.9 / 5)


def test_eps_low_and_eps_high() -> None:
    # ε_low 0.4: row 1 token 0 clips at 0.6 -> 1.2 (not 1.6); ε_high 0.28 (DAPO clip-higher):
    # row 0 token 0 clips at 1.28 -> -1.28 (not -1.2)
    assert loss(LossConfig(eps_low=0.4)) == pytest.approx((4.9 - 0.4) / 5)
    assert loss(LossConfig(eps_high=0.28)) == pytest.approx((4.9 - 0.08) / 5)


def test_dual_clip_constant_and_off() -> None:
    # c = 5: row 1 token 1 capped at 10 instead of 6; off: 20
    assert loss(LossConfig(dual_clip_c=5.0)) == pytest.approx((4.9 + 4) / 5)
    assert loss(LossConfig(dual_clip_c=None)) == pytest.approx((4.9 + 14) / 5)


def test_metrics_by_hand() -> None:
    m = policy_loss(batch()).metrics
    # clipped (l2 > l1): row 0 token 0 (-1.2 > -1.5), row 1 token 0 (1.6 > 1) -> 2 of 5
    assert m["clip_frac"] == pytest.approx(2 / 5)
    assert m["clip_low_frac"] == pytest.approx(1 / 5)  # r 0.5 < 0.8 with A < 0 (row 1)
    assert m["clip_high_frac"] == pytest.approx(1 / 5)  # r 1.5 > 1.2 with A > 0 (row 0)
    assert m["dual_clip_frac"] == pytest.approx(1 / 5)  # row 1 token 1: 20 > 6
    kl = [(r - 1 - math.log(r)) for r in (1.5, 0.5, 1.0, 0.5, 10.0)]
    assert m["approx_kl"] == pytest.approx(sum(kl) / 5)
    assert m["ratio_mean"] == pytest.approx((1.5 + 0.5 + 1.0 + 0.5 + 10.0) / 5)
    assert m["ratio_max"] == pytest.approx(10.0)  # the masked 20 does not count
    assert m["n_tokens"] == 5.0
    assert "kl_ref" not in m and "entropy" not in m


def test_metrics_with_a_wider_clip() -> None:
    m = policy_loss(batch(), LossConfig(eps_low=0.6, eps_high=0.6)).metrics
    # clip range [0.4, 1.6]: nothing clipped, no ratio beyond it
    assert m["clip_frac"] == 0.0 and m["clip_low_frac"] == 0.0 and m["clip_high_frac"] == 0.0


def test_k3_kl_and_its_clamp() -> None:
    ref = torch.log(torch.tensor(RATIOS, dtype=torch.float64)) + math.log(2.0)  # d = ln 2
    out = policy_loss(batch(ref_logprobs=ref), LossConfig(kl_coef=0.1))
    k3 = 2 - math.log(2) - 1
    assert float(out.loss) == pytest.approx((4.9 + 5 * 0.1 * k3) / 5)
    assert out.metrics["kl_ref"] == pytest.approx(k3)
    far = torch.log(torch.tensor(RATIOS, dtype=torch.float64)) + math.log(20.0)  # 20-ln20-1 > 10
    out = policy_loss(batch(ref_logprobs=far), LossConfig(kl_coef=0.1))
    assert out.metrics["kl_ref"] == pytest.approx(10.0)
    near = torch.log(torch.tensor(RATIOS, dtype=torch.float64)) - 30.0  # e^-30 + 29 > 10 too
    assert policy_loss(batch(ref_logprobs=near), LossConfig(kl_coef=0.1)).metrics["kl_ref"] \
        == pytest.approx(10.0)


def test_entropy_bonus_and_its_needs() -> None:
    ent = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 100.0]], dtype=torch.float64)
    out = policy_loss(batch(entropy=ent), LossConfig(entropy_coef=0.5))
    assert float(out.loss) == pytest.approx((4.9 - 0.5 * 15) / 5)  # masked 100 left out
    assert out.metrics["entropy"] == pytest.approx(15 / 5)
    with pytest.raises(ValueError, match="entropy"):
        policy_loss(batch(), LossConfig(entropy_coef=0.5))
    with pytest.raises(ValueError, match="ref_logprobs"):
        policy_loss(batch(), LossConfig(kl_coef=0.5))


def test_log_ratio_clamped_at_20() -> None:
    logp = torch.tensor([[25.0]], dtype=torch.float64)
    out = policy_loss(LossInputs(logp, torch.zeros_like(logp), torch.tensor([-1.0]),
                                 torch.tensor([[1]])), LossConfig(dual_clip_c=None))
    assert float(out.loss) == pytest.approx(math.exp(20.0))
    assert out.metrics["ratio_max"] == pytest.approx(math.exp(20.0))
    assert out.metrics["approx_kl"] == pytest.approx(math.exp(20.0) - 1 - 20.0)


def test_empty_mask_counts_nothing() -> None:
    logp = torch.tensor([[0.3, 0.1]], dtype=torch.float64)
    out = policy_loss(LossInputs(logp, logp, torch.tensor([1.0]), torch.tensor([[0, 0]])))
    assert float(out.loss) == 0.0 and out.metrics["ratio_max"] == 0.0
    assert out.metrics["n_tokens"] == 0.0 and out.metrics["ratio_mean"] == 0.0


def test_aggregate_default_and_a_single_sequence() -> None:
    from termcredit.trainer.loss import aggregate

    v = torch.tensor([[1.0, 2.0, 4.0]], dtype=torch.float64)
    m = torch.tensor([[1, 1, 0]])
    assert float(aggregate(v, m)) == pytest.approx(3 / 2)  # token-mean
    assert float(aggregate(v, m, "seq-mean-token-sum")) == pytest.approx(3.0)  # one sequence
    assert float(aggregate(v, m, "seq-mean-token-mean")) == pytest.approx(1.5)


def test_loss_messages() -> None:
    from termcredit.trainer.loss import aggregate

    v, m = torch.ones(1, 1), torch.ones(1, 1)
    with pytest.raises(ValueError) as err:
        aggregate(v, m, "seq-mean-token-sum-norm")
    assert str(err.value) == "seq-mean-token-sum-norm needs a constant norm_len (L_max)"
    with pytest.raises(ValueError) as err:
        aggregate(v, m, "sum")
    assert str(err.value) == ("unknown aggregation 'sum': choose from token-mean, "
                              "seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm")
    with pytest.raises(ValueError) as err:
        policy_loss(batch(), LossConfig(kl_coef=0.5))
    assert str(err.value) == "kl_coef > 0 needs ref_logprobs"
    with pytest.raises(ValueError) as err:
        policy_loss(batch(), LossConfig(entropy_coef=0.5))
    assert str(err.value) == "entropy_coef > 0 needs entropy"


def test_log_ratio_clamped_at_minus_20() -> None:
    logp = torch.tensor([[-25.0]], dtype=torch.float64)
    out = policy_loss(LossInputs(logp, torch.zeros_like(logp), torch.tensor([1.0]),
                                 torch.tensor([[1]])))
    # r = e^-20: -A·r = -e^-20 beats -A·0.8
    assert float(out.loss) == pytest.approx(-math.exp(-20.0), rel=1e-9)
    assert out.metrics["approx_kl"] == pytest.approx(math.exp(-20.0) - 1 + 20.0)


def _metrics(ratios: list[list[float]], adv: list[float], mask: list[list[int]],
             cfg: LossConfig | None = None) -> dict[str, float]:
    logp = torch.tensor([[math.log(r) for r in row] for row in ratios], dtype=torch.float64)
    return policy_loss(LossInputs(logp, torch.zeros_like(logp),
                                  torch.tensor(adv, dtype=torch.float64), torch.tensor(mask)),
                       cfg).metrics


def test_clip_metrics_count_only_their_sign() -> None:
    # A = 0.5 (ratios 1, 0.5) and A = 0 (ratios 0.5, 1.5): no dual clip and no clip-low
    # (A >= 0), no clip-high for A = 0; A = 0.5, r = 0.5: -A·r = -0.25 > -A·0.8 = -0.4, so the
    # unclipped term wins and nothing counts as clipped
    m = _metrics([[1.0, 0.5], [0.5, 1.5]], [0.5, 0.0], [[1, 1], [1, 1]])
    assert m["dual_clip_frac"] == 0.0 and m["clip_low_frac"] == 0.0
    assert m["clip_high_frac"] == 0.0 and m["clip_frac"] == 0.0


def test_clip_metrics_at_the_boundaries() -> None:
    # ε = 0 and c = 1 put ratio 1 exactly on the clip bounds and -A·r exactly on the dual cap:
    # on the boundary is not beyond it
    m = _metrics([[1.0], [1.0]], [-1.0, 1.0], [[1], [1]],
                 LossConfig(eps_low=0.0, eps_high=0.0, dual_clip_c=1.0))
    assert m["dual_clip_frac"] == 0.0 and m["clip_low_frac"] == 0.0
    assert m["clip_high_frac"] == 0.0


def test_ratio_max_ignores_masked_tokens_below_one() -> None:
    assert _metrics([[0.5, 2.0]], [1.0], [[1, 0]])["ratio_max"] == pytest.approx(0.5)


def test_empty_batch() -> None:
    empty = torch.zeros(0, 3, dtype=torch.float64)
    out = policy_loss(LossInputs(empty, empty, torch.zeros(0, dtype=torch.float64),
                                 torch.zeros(0, 3)))
    assert float(out.loss) == 0.0 and out.metrics["ratio_max"] == 0.0
