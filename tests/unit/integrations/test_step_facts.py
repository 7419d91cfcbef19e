"""GiGPO's and AdaStep's step facts in token rewards: the encoding by hand, its round trip,
and the estimators over encoded rows by hand (no engine needed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from termcredit.integrations.step_facts import (UNIT, code, decode_facts, encode_facts,
                                                step_estimator)

# turn 0: 2 loss tokens, its observation 4; turn 1: 1 loss token, its (closing) observation 4
MASK = [1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0]
ONE = [1, 1, 0, 0, 0, 0]  # one turn and its closing observation


def test_codes_are_nonzero_exact_float32_integers() -> None:
    for key in ("", "state:abc", "ls /app"):
        a = code(key, 24)
        assert 1 <= a < 2 ** 24
        assert float(torch.tensor(a * UNIT, dtype=torch.float32)) == a * UNIT
    assert code("x", 24) == code("x", 24) != code("y", 24)


def test_encoding_by_hand_sums_to_r_and_round_trips() -> None:
    row = encode_facts(1.0, ["S0", "S1"], ["ls", "rm x"], [False, True], MASK)
    a0, a1 = code("S0", 24) * UNIT, code("S1", 24) * UNIT
    c0, c1 = 2 * code("ls", 22) * UNIT, (2 * code("rm x", 22) + 1) * UNIT
    assert row == [0, 0, a0, -a0, c0, -c0, 1.0, a1, -a1, c1, -c1]
    assert sum(row) == pytest.approx(1.0, abs=1e-12)
    # through float32, as verl keeps token rewards
    traj = decode_facts(torch.tensor(row, dtype=torch.float32).tolist(), MASK)
    assert traj.verifier.reward == 1.0
    assert [s.anchor_obs for s in traj.steps] == [f"a{code('S0', 24)}", f"a{code('S1', 24)}"]
    assert [s.action_key for s in traj.steps] == [f"c{code('ls', 22)}", f"c{code('rm x', 22)}"]
    assert [s.invalid for s in traj.steps] == [False, True]
    assert traj.tokens.step_spans == [[0, 2], [6, 7]]


def test_a_turn_without_room_for_its_facts_is_a_step_of_its_own() -> None:
    cut = MASK[:9]  # the closing observation cut to 2 tokens by the response length
    row = encode_facts(1.0, ["S0", "S1"], ["ls", "ls"], [False, False], cut)
    assert row[6] == 1.0 and row[7:] == [0.0, 0.0]
    steps = decode_facts(row, cut, row=3).steps
    assert steps[1].anchor_obs == "none:3:1" and steps[1].action_key == "none:3:1"
    assert not steps[1].invalid and steps[0].anchor_obs == f"a{code('S0', 24)}"


def test_gigpo_by_hand() -> None:
    # group g: A (R=1) and B (R=0) share both anchors; group h: C alone, its first step invalid.
    # A^E (mean_norm over R): ±0.5. Returns (γ=0.95): A (0.95, 1), B (0, 0); anchors S0, S1 each
    # hold one step of A and B: A^S = ±0.475, ±0.5. So A = (0.975, 1.0), B = −A.
    # C alone: A^E = −0.1 on its invalid step only, A^S = 0 (singleton anchors).
    rows = torch.tensor([encode_facts(1.0, ["S0", "S1"], ["ls", "fix"], [False, False], MASK),
                         encode_facts(0.0, ["S0", "S1"], ["ls", "break"], [False, False], MASK),
                         encode_facts(0.0, ["S0", "S1"], ["??", "ls"], [True, False], MASK)])
    mask = torch.tensor([MASK] * 3)
    adv, ret = step_estimator("gigpo")(rows, mask, np.array(["g", "g", "h"], dtype=object))
    expected = torch.tensor([[0.975, 0.975, 0, 0, 0, 0, 1.0, 0, 0, 0, 0],
                             [-0.975, -0.975, 0, 0, 0, 0, -1.0, 0, 0, 0, 0],
                             [-0.1, -0.1, 0, 0, 0, 0, 0.0, 0, 0, 0, 0]])
    assert torch.allclose(adv, expected, atol=1e-6)
    assert torch.equal(adv, ret)


def test_adastep_by_hand() -> None:
    # one anchor, actions a, a, b, b with R = 1, 0, 1, 1: A^E = A^S = R − 0.75 = (.25, −.75, .25,
    # .25); v̂ = pvar(1, 0, 1, 1) = 0.1875, within-action = ½·pvar(1, 0) + ½·0 = 0.125,
    # ŵ = 1 − 0.125 / 0.1875 = 1/3, so A = (1 + 1/3)(R − 0.75) = (1/3, −1, 1/3, 1/3).
    # GiGPO (ω = 1) on the same rows: 2(R − 0.75).
    rewards, actions = [1.0, 0.0, 1.0, 1.0], ["a", "a", "b", "b"]
    rows = torch.tensor([encode_facts(r, ["S0"], [a], [False], ONE)
                         for r, a in zip(rewards, actions)])
    mask, index = torch.tensor([ONE] * 4), np.array([7] * 4)
    ada, _ = step_estimator("adastep")(rows, mask, index)
    per_row = torch.tensor([1 / 3, -1.0, 1 / 3, 1 / 3])
    assert torch.allclose(ada, per_row[:, None] * torch.tensor(ONE), atol=1e-6)
    gi, _ = step_estimator("gigpo")(rows, mask, index)
    assert torch.allclose(gi, 2 * (torch.tensor(rewards) - 0.75)[:, None] * torch.tensor(ONE),
                          atol=1e-6)
