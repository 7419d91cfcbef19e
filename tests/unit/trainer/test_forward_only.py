"""forward_logprobs(only=mask): the needed log-probs, with the output layer run on the positions
that predict them alone; values and gradients equal to the full forward's, masked."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

SEQS = [[5, 9, 14, 3, 22, 7, 11, 30], [8, 4, 19, 25, 6], [12, 40, 2, 17, 9, 33]]
# row 0: tokens 3..7 needed; row 1: tokens 0 (nothing predicts it), 2, 4; row 2: none
MASKS = [[0, 0, 0, 1, 1, 1, 1, 1], [1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0]]


def _batch(micro, side: str):
    from termcredit.trainer.policy import pad_batch

    ids, attn = pad_batch(SEQS, micro.pad_id, side=side)
    only = pad_batch(MASKS, 0, side=side, dtype=torch.float32)[0]
    return ids, attn, only


def _grads(micro) -> list[torch.Tensor]:
    out = [p.grad.clone() for p in micro.model.parameters() if p.grad is not None]
    micro.model.zero_grad(set_to_none=True)
    return out


@pytest.mark.parametrize("side", ["right", "left"])
def test_only_equals_the_full_forward_masked(micro, side):
    ids, attn, only = _batch(micro, side)
    full = micro.forward_logprobs(ids, attn) * only
    full.sum().backward()
    g_full = _grads(micro)
    rows: list[int] = []
    hook = micro.model.lm_head.register_forward_hook(
        lambda _m, args, _out: rows.append(args[0].reshape(-1, args[0].shape[-1]).shape[0]))
    try:
        part = micro.forward_logprobs(ids, attn, only=only)
    finally:
        hook.remove()
    # 5 tokens in row 0 + 2 in row 1 (its token 0 has no predecessor) = 7 rows through the head
    assert rows == [7]
    assert part.shape == ids.shape
    assert torch.allclose(part, full, atol=1e-5)
    assert int((part != 0).sum()) == 7
    part.sum().backward()
    g_part = _grads(micro)
    assert len(g_part) == len(g_full)
    for a, b in zip(g_part, g_full):
        assert torch.allclose(a, b, atol=1e-5)


def test_score_with_masks_uses_the_selected_path_and_agrees(micro):
    with_masks = micro.score(SEQS, MASKS)
    plain = micro.score(SEQS)
    for lp, ref, mask in zip(with_masks, plain, MASKS):
        assert lp == pytest.approx([r if m else 0.0 for r, m in zip(ref, mask)], abs=1e-5)
    assert with_masks[2] == [0.0] * 6 and with_masks[1][0] == 0.0


def test_nothing_needed_gives_zeros_and_a_zero_gradient(micro):
    ids, attn, _ = _batch(micro, "right")
    lp = micro.forward_logprobs(ids, attn, only=torch.zeros_like(attn))
    assert torch.all(lp == 0) and lp.requires_grad  # still a graph: backward works
    lp.sum().backward()
    assert all(float(g.abs().max()) == 0.0 for g in _grads(micro))


def test_score_refuses_masks_that_do_not_fit(micro):
    with pytest.raises(ValueError, match="a loss mask of its own length"):
        micro.score(SEQS, MASKS[:2])
    with pytest.raises(ValueError, match="a loss mask of its own length"):
        micro.score(SEQS, [MASKS[0][:-1], *MASKS[1:]])
