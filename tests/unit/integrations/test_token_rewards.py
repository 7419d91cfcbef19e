"""DepGPO's step weights in token rewards: encoded rows sum to R, decode to the weights, and the
engines' estimator gives Â · w by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from termcredit.integrations.token_rewards import (decode, depgpo_advantage, encode,
                                                   normalized, turns)

# two replies of 2 and 3 tokens, an observation of 2 between them
MASK = [1, 1, 0, 0, 1, 1, 1]


def test_turns_are_runs_of_loss_tokens() -> None:
    assert turns(MASK) == [(0, 2), (4, 7)]
    assert turns([0, 0]) == []
    assert turns([1]) == [(0, 1)]


def test_encoding_by_hand_sums_to_r_and_round_trips() -> None:
    # w = (0.25, 1.5): Σ n w = 2·0.25 + 3·1.5 = 5 = N, already normalised
    row = encode(1.0, [0.25, 1.5], MASK)
    # r_1 = (1·2 + 2·(0.25 − 1)) / 5 = 0.1 at index 1; r_2 = (1·3 + 3·0.5) / 5 = 0.9 at index 6
    assert row == pytest.approx([0, 0.1, 0, 0, 0, 0, 0.9])
    assert sum(row) == pytest.approx(1.0)
    reward, w = decode(row, MASK)
    assert reward == pytest.approx(1.0) and w == pytest.approx([0.25, 1.5])


def test_a_failed_episode_keeps_its_weights() -> None:
    row = encode(0.0, [0.25, 1.5], MASK)  # r = (2·(−0.75), 3·0.5) / 5 = (−0.3, 0.3)
    assert row == pytest.approx([0, -0.3, 0, 0, 0, 0, 0.3])
    assert decode(row, MASK) == (pytest.approx(0.0), pytest.approx([0.25, 1.5]))


def test_weights_are_renormalised_to_the_engines_token_counts() -> None:
    # weights (1, 2) with other token counts: w ∝ (1, 2), Σ n w = 2·1 + 3·2 = 8 -> × 5/8
    assert normalized([1.0, 2.0], [2, 3]) == pytest.approx([0.625, 1.25])
    assert decode(encode(1.0, [1.0, 2.0], MASK), MASK)[1] == pytest.approx([0.625, 1.25])
    assert normalized([0.0, 0.0], [2, 3]) == [1.0, 1.0]  # nothing to scale: unit weights


def test_cut_short_and_missing_weights() -> None:
    assert decode(encode(1.0, [2.0], MASK), MASK)[1] == pytest.approx(normalized([2.0, 1.0], [2, 3]))
    assert encode(1.0, [1.0], [0, 0]) == [0.0, 0.0]


def test_estimator_by_hand() -> None:
    # group "a": R = 1 (w = 0.25, 1.5) and R = 0 (unit weights): Â = ±0.5 / (0.5 + 1e-6);
    # group "b": one row, Â = 0
    rows = torch.tensor([encode(1.0, [0.25, 1.5], MASK), encode(0.0, [1.0, 1.0], MASK),
                         encode(1.0, [1.0, 1.0], MASK)])
    mask = torch.tensor([MASK] * 3)
    adv, ret = depgpo_advantage(rows, mask, np.array(["a", "a", "b"]))
    a = 0.5 / (0.5 + 1e-6)
    expected = torch.tensor([[0.25 * a] * 2 + [0, 0] + [1.5 * a] * 3,
                             [-a] * 2 + [0, 0] + [-a] * 3,
                             [0.0] * 7])
    assert torch.allclose(adv, expected, atol=1e-6)
    assert torch.equal(adv, ret)
