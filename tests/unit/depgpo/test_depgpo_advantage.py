"""Step weights from step credits, and the advantages they spread, with property tests."""

from __future__ import annotations

import math

import pytest
from depgpo_testutil import untraced, worked_example
from hypothesis import given, settings
from hypothesis import strategies as st

from termcredit.depgpo import DepGPOConfig, EpisodeFacts, depgpo_step_weights
from termcredit.depgpo.advantage import step_weights

SETTINGS = settings(max_examples=500, deadline=None, database=None)


def test_min_max_scaling_mean_one_over_traced():
    w = step_weights([0.75, 1.0, 1.0], [1, 1, 1])
    assert w.f == pytest.approx((0.0, 1.5, 1.5)) and w.w == pytest.approx((0.0, 1.5, 1.5))
    assert w.fallback is None


def test_untraced_steps_weight_one_and_token_normalisation():
    w = step_weights([0.0, None, 2.0], [10, 5, 30])
    assert w.f == pytest.approx((0.0, 1.0, 2.0))
    scale = (10 + 5 + 30) / (5 * 1.0 + 30 * 2.0)
    assert w.w == pytest.approx((0.0, scale, 2.0 * scale))
    assert math.fsum(n * x for n, x in zip([10, 5, 30], w.w)) == pytest.approx(45)


def test_without_min_subtraction():
    w = step_weights([1.0, 3.0], [1, 1], subtract_min=False)
    assert w.f == pytest.approx((0.5, 1.5))


@pytest.mark.parametrize("credits,n,kw,reason", [
    ([None, None], [3, 4], {}, "no-traced-steps"),
    ([], [], {}, "no-traced-steps"),
    ([0.0, 1.0], [1, 1], {"has_resources": False}, "no-verifier-resources"),
    ([0.5, 0.5, None], [1, 2, 3], {}, "tied-credits"),
    ([0.7], [5], {}, "tied-credits"),
    ([0.0, 0.0], [1, 1], {"subtract_min": False}, "tied-credits"),
    ([0.0, 1.0], [5, 0], {}, "zero-denominator"),  # the only positive weight has no tokens
])
def test_fallbacks_give_unit_weights(credits, n, kw, reason):
    w = step_weights(credits, n, **kw)
    assert w.fallback == reason and w.w == (1.0,) * len(credits) and w.f == w.w


def test_bad_inputs():
    with pytest.raises(ValueError):
        step_weights([1.0], [1, 2])
    with pytest.raises(ValueError):
        step_weights([-1.0, 1.0], [1, 1])
    with pytest.raises(ValueError):
        step_weights([float("nan"), 1.0], [1, 1])
    with pytest.raises(ValueError):
        step_weights([0.0, 1.0], [-1, 1])


# ---------------------------------------------------------------- properties
CREDIT = st.one_of(st.none(), st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False),
                   st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))
STEPS = st.integers(1, 30).flatmap(
    lambda k: st.tuples(st.lists(CREDIT, min_size=k, max_size=k),
                        st.lists(st.integers(1, 100_000), min_size=k, max_size=k)))
ADV = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@SETTINGS
@given(STEPS, ADV, st.booleans(), st.booleans())
def test_token_weighted_mean_preserved_and_sign_kept(steps, adv_hat, subtract_min, has_res):
    credits, n = steps
    w = step_weights(credits, n, has_resources=has_res, subtract_min=subtract_min)
    adv = [adv_hat * x for x in w.w]  # A_t = Â · w_t, as the estimator spreads it
    mean = math.fsum(k * a for k, a in zip(n, adv)) / math.fsum(n)
    assert math.isclose(mean, adv_hat, rel_tol=1e-9, abs_tol=1e-12)
    assert all(a * adv_hat >= 0 for a in adv)
    assert all(x >= 0 for x in w.w)


@SETTINGS
@given(STEPS, st.booleans())
def test_f_mean_one_over_traced_steps(steps, subtract_min):
    credits, n = steps
    w = step_weights(credits, n, subtract_min=subtract_min)
    traced = [f for f, c in zip(w.f, credits) if c is not None]
    if traced:
        assert math.isclose(math.fsum(traced) / len(traced), 1.0, rel_tol=1e-9)
    assert all(f == 1.0 for f, c in zip(w.f, credits) if c is None)
    if w.fallback is None and subtract_min:
        lo = min(c for c in credits if c is not None)
        assert all(f == 0.0 for f, c in zip(w.f, credits) if c == lo)


# ---------------------------------------------------------------- the untraced-step weight u
def test_untraced_weight_zero_gives_untraced_steps_nothing():
    # traced f as before: K = 2, min 0, Σ 2 -> (0, ·, 2); the untraced step gets u = 0
    w = step_weights([0.0, None, 2.0], [10, 5, 30], untraced_weight=0.0)
    assert w.f == pytest.approx((0.0, 0.0, 2.0)) and w.fallback is None
    # Σn = 45, Σ n·f = 60 -> scale 3/4: the traced step carries all the tokens' weight
    assert w.w == pytest.approx((0.0, 0.0, 1.5))


def test_untraced_weight_half():
    w = step_weights([0.0, None, 2.0], [10, 5, 30], untraced_weight=0.5)
    assert w.f == pytest.approx((0.0, 0.5, 2.0))
    # Σ n·f = 2.5 + 60 = 62.5 -> scale 45/62.5 = 0.72; Σ n·w = 1.8 + 43.2 = 45
    assert w.w == pytest.approx((0.0, 0.36, 1.44)) and w.fallback is None


def test_untraced_weight_zero_with_tokens_only_on_untraced_steps_falls_back():
    # f = (0, 2, 0): the only positive weight has no tokens -> nothing to normalise by
    w = step_weights([0.0, 1.0, None], [3, 0, 4], untraced_weight=0.0)
    assert w.fallback == "zero-denominator" and w.w == (1.0, 1.0, 1.0)
    assert step_weights([0.0, 1.0, None], [3, 0, 4]).fallback is None  # u = 1: w = (0, 0, 1)


def test_fallback_keeps_unit_weights_whatever_untraced_weight():
    w = step_weights([0.5, 0.5, None], [1, 2, 3], untraced_weight=0.0)
    assert w.fallback == "tied-credits" and w.w == (1.0, 1.0, 1.0) and w.f == w.w


@pytest.mark.parametrize("u", [-0.1, float("nan"), float("inf")])
def test_untraced_weight_must_be_finite_and_nonnegative(u):
    with pytest.raises(ValueError, match=r"^untraced_weight must be finite and >= 0, got"):
        step_weights([0.0, None], [1, 1], untraced_weight=u)
    with pytest.raises(ValueError, match=r"^DepGPOConfig\.untraced_weight must be finite and "
                                         r">= 0, got"):
        DepGPOConfig(untraced_weight=u)


@pytest.mark.parametrize("u,expected", [
    (1.0, (0.0, 1.5, 1.5, 1.0)),  # the default: Σ n·f = 4 = Σn, scale 1
    (0.5, (0.0, 12 / 7, 12 / 7, 4 / 7)),
    (0.0, (0.0, 2.0, 2.0, 0.0)),
])
def test_untraced_weight_through_the_training_path(u, expected):
    """The worked example (credits 0.75, 1, 1) and a `done` step, one token each:
    f = (0, 1.5, 1.5, u), Σn = 4, Σ n·f = 3 + u -> w = f · 4 / (3 + u)."""
    ex = worked_example()
    facts = EpisodeFacts(instruction=ex.instruction, commands=[*ex.commands, untraced(3)],
                         resources=ex.resources)
    cfg = DepGPOConfig() if u == 1.0 else DepGPOConfig(untraced_weight=u)
    sw = depgpo_step_weights(facts, cfg)
    assert sw.credit == pytest.approx((0.75, 1.0, 1.0, None))
    assert sw.f == pytest.approx((0.0, 1.5, 1.5, u))
    assert sw.w == pytest.approx(tuple(f * 4 / (3 + u) for f in (0.0, 1.5, 1.5, u)))
    assert sw.w == pytest.approx(expected)


@SETTINGS
@given(STEPS, ADV, st.floats(0.0, 10.0, allow_nan=False))
def test_any_untraced_weight_keeps_the_mean_at_adv_hat(steps, adv_hat, u):
    credits, n = steps
    w = step_weights(credits, n, untraced_weight=u)
    mean = math.fsum(k * adv_hat * x for k, x in zip(n, w.w)) / math.fsum(n)
    assert math.isclose(mean, adv_hat, rel_tol=1e-9, abs_tol=1e-12)
    assert all(x >= 0 for x in w.w)
    if w.fallback is None:
        assert all(f == u for f, c in zip(w.f, credits) if c is None)
