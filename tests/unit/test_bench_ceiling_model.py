"""The tabular model of the menu tier (bench/ceiling_model.py): outcomes, weights and the
loss gradient computed by hand on chains small enough to enumerate."""

from __future__ import annotations

import numpy as np
import pytest

from termcredit.bench.ceiling_model import (Batch, Chain, Protocol, exact_outcomes, loss_grad,
                                            step_weights, train)

# one necessary command, one action of each other class, a budget of 2 turns
SMALL = Chain(k=1, looks=1, decoys=1, wrong=1, extra_turns=1, p_next=0.5, p_look=0.2,
              p_decoy=0.1, p_wrong=0.1, p_done=0.1, p_done_at_k=0.6)
NEXT, LOOK, DECOY, WRONG, DONE = range(5)


def test_exact_outcomes_enumerated_by_hand() -> None:
    # success: next then anything but the decoy 0.5 * 0.9, or look/wrong then next 0.3 * 0.5
    # decoy: at turn 1 0.1, after next 0.5 * 0.1, after look/wrong 0.3 * 0.1
    # errored (no decoy, not solved): wrong then done/look/wrong 0.1 * 0.4, look then wrong
    # 0.2 * 0.1; omission: done at turn 1 0.1, look then look/done 0.2 * 0.3
    o = exact_outcomes(SMALL, SMALL.start_logits()[None])
    assert o.success[0] == pytest.approx(0.60)
    assert o.decoy[0] == pytest.approx(0.18)
    assert o.errored[0] == pytest.approx(0.06)
    assert o.omission[0] == pytest.approx(0.16)


def _batch(actions: list[list[int]], reward: list[float]) -> Batch:
    a = np.array([actions])
    return Batch(states=np.where(a >= 0, 0, -1), actions=a, reward=np.array([reward]))


def test_step_weights_by_hand() -> None:
    # failed: next, decoy, next, done (8 + 8 + 8 + 2 = 26 tokens): the decoy's 8 tokens carry
    # all 26 (3.25), or 1 at peak; an omission (next, look, done: 18 tokens) blamed on done's 2
    b = _batch([[NEXT, DECOY, NEXT, DONE], [NEXT, LOOK, DONE, -1]], [0.0, 0.0])
    adv = np.array([[-1.0, -1.0]])
    got = step_weights(SMALL, b, adv, "oracle")[0]
    assert got[0].tolist() == [0.0, 3.25, 0.0, 0.0] and got[1].tolist() == [1.0, 1.0, 1.0, 0.0]
    assert step_weights(SMALL, b, adv, "oracle-peak")[0][0].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert step_weights(SMALL, b, adv, "oracle-done")[0][1].tolist() == [0.0, 0.0, 9.0, 0.0]
    assert step_weights(SMALL, b, adv, "grpo")[0][0].tolist() == [1.0, 1.0, 1.0, 1.0]
    # oracle-also: the decoy and the done said at state 0 < k share the 26 tokens (10 blamed:
    # 2.6 each); the omission's done alone as before
    also = step_weights(SMALL, b, adv, "oracle-also")[0]
    assert also[0] == pytest.approx([0.0, 2.6, 0.0, 2.6]) and also[1].tolist() == [0, 0, 9, 0]
    # a solved episode (Â > 0) keeps unit weights under every weighting
    assert step_weights(SMALL, b, -adv, "oracle")[0][0].tolist() == [1.0, 1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="weighting must be one of"):
        step_weights(SMALL, b, adv, "oracel")


def test_loss_gradient_by_hand() -> None:
    # one failed episode (Â = -1): look (8 tokens), done (2) at state 0, uniform policy over
    # 5 actions; coefficients -Â·n/Σn = 0.8 and 0.2; grad = 0.8 (e_look - 0.2) + 0.2 (e_done - 0.2)
    b = _batch([[LOOK, DONE]], [0.0])
    logits = np.zeros((1, 2, 5))
    g = loss_grad(SMALL, logits, b, np.array([[-1.0]]), np.ones((1, 1, 2)))
    assert g[0, 0] == pytest.approx([-0.2, 0.6, -0.2, -0.2, 0.0])
    assert not g[0, 1].any()


def test_training_lowers_the_decoy_and_same_stream_same_start() -> None:
    h = train(Chain(), Protocol(lr=10.0, optimizer="sgd"), "oracle", seeds=64)
    assert h[0].success.mean() == pytest.approx(0.2527, abs=1e-3)
    assert h[-1].decoy.mean() < h[0].decoy.mean() - 0.2


def test_a_shared_bias_moves_every_state_by_the_sum_of_the_states_steps() -> None:
    # one SGD update from the same stream: the table moves by -lr·g per state either way, and
    # the shared bias by -lr·Σ_states g, so every state moves by its own step plus the sum
    proto = dict(updates=1, lr=5.0, optimizer="sgd")
    plain = train(Chain(), Protocol(**proto), "grpo", seeds=2, rng_seed=3)
    shared = train(Chain(), Protocol(**proto, shared=True), "grpo", seeds=2, rng_seed=3)
    start = plain[0].logits
    finite = np.isfinite(start)  # `next` at state K stays −inf whatever the bias
    with np.errstate(invalid="ignore"):
        own = np.where(finite, plain[-1].logits - start, 0.0)
        got = shared[-1].logits - start
    assert np.abs(own).max() > 0
    want = own + own.sum(1, keepdims=True)
    assert got[finite] == pytest.approx(want[finite])
