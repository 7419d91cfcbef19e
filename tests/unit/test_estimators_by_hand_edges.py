"""Edges of the estimator registry and the shared helpers, found by mutation testing
(`make mutants`): error messages, defaults, tolerances, empty and degenerate inputs."""

from __future__ import annotations

import math

import pytest

from termcredit import estimators
from termcredit.depgpo.advantage import step_weights
from termcredit.estimators.group import group_advantages, group_std
from termcredit.records import Step, TokenLayout, Trajectory, VerifierReport, step_token_counts


def traj(reward: float, n_steps: int = 1, tokens: TokenLayout | None = None) -> Trajectory:
    return Trajectory(task="t", instruction="", agent="x", tokens=tokens,
                      steps=[Step(index=i, action="a") for i in range(n_steps)],
                      verifier=VerifierReport(reward=reward))


def test_an_estimator_taking_any_setting_gets_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    class Open:
        def __init__(self, **kw: float):
            self.kw = kw

        def __call__(self, group):  # pragma: no cover - never called
            raise AssertionError

    monkeypatch.setitem(estimators.REGISTRY, "open14", Open)
    assert estimators.build("open14", a=1.0, b=2.0).kw == {"a": 1.0, "b": 2.0}


def test_unknown_estimator_message_lists_the_choices() -> None:
    choices = ", ".join(estimators.names())
    with pytest.raises(ValueError) as err:
        estimators.build("nope")
    assert str(err.value) == f"unknown estimator 'nope': choose from {choices} (combine with +)"


def test_step_token_counts() -> None:
    assert step_token_counts(traj(1, 3)) == [1, 1, 1]  # no tokens: one per step
    tok = TokenLayout(token_ids=[0, 1, 2, 3], loss_mask=[0, 1, 0, 1], logprobs=[0.0] * 4,
                      step_spans=[[0, 1], [1, 4]])
    assert step_token_counts(traj(1, 2, tok)) == [0, 2]


def test_group_std_is_the_population_std() -> None:
    assert group_std([1.0, 0.0]) == 0.5
    assert group_std([1.0, 0.0, 0.0]) == pytest.approx(math.sqrt(2) / 3)
    assert group_std([3.0]) == 0.0 and group_std([]) == 0.0


def test_group_advantages_defaults_to_grpo_with_eps_1e6() -> None:
    r2 = math.sqrt(2)
    assert group_advantages([1.0, 0.0, 0.0]) == pytest.approx([r2, -1 / r2, -1 / r2], abs=1e-5)
    # std 0.5 + 1e-6: 0.5 / 0.500001
    assert group_advantages([1.0, 0.0]) == pytest.approx([0.5 / 0.500001, -0.5 / 0.500001],
                                                         rel=1e-12)


def test_grpo_zero_advantage_tolerance_is_strict() -> None:
    # rewards 0 and 2e-12, Dr.GRPO: Â = ±1e-12 exactly, which is not below 1e-12
    out = estimators.build("grpo", std=False)([traj(0.0), traj(2e-12)])
    assert out.stats["zero_advantage_group"] == 0.0
    half = estimators.build("grpo", std=False)([traj(1.0), traj(0.0)])  # ±0.5: not zero either
    assert half.stats["zero_advantage_group"] == 0.0


@pytest.mark.parametrize("credits,n,message", [
    ([1.0], [1, 2], "1 step credits but 2 token counts"),
    ([-1.0, 1.0], [1, 1], "step credits must be finite and >= 0: [-1.0, 1.0]"),
    ([0.0, 1.0], [-1, 1], "token counts must be >= 0: [-1, 1]"),
])
def test_step_weights_messages(credits: list[float], n: list[int], message: str) -> None:
    with pytest.raises(ValueError) as err:
        step_weights(credits, n)
    assert str(err.value) == message


@pytest.mark.parametrize("credits,tied", [
    ([0.0, 1e-12], True),  # spread 1e-12 = 1e-12 · max(1, hi): tied
    ([0.0, 1.5e-12], False),  # above 1e-12 · 1
    ([2.0, 2.0 + 1.5e-12], True),  # relative: within 1e-12 · 2
])
def test_tie_tolerance_is_relative_to_max_1_hi(credits: list[float], tied: bool) -> None:
    w = step_weights(credits, [1, 1])
    assert (w.fallback == "tied-credits") is tied
    assert w.f == ((1.0, 1.0) if tied else (0.0, 2.0))


def test_steps_without_tokens_still_normalise() -> None:
    # credits [0, 1], tokens [0, 1]: f = [0, 2]; Σn = 1, Σ n·f = 2 -> w = [0, 1]
    w = step_weights([0.0, 1.0], [0, 1])
    assert w.fallback is None and w.w == pytest.approx((0.0, 1.0))
    # credits [0, 1, 2], tokens [0, 1, 0]: f = 3·C/3 = [0, 1, 2]; Σn = 1 = Σ n·f -> w = f
    w = step_weights([0.0, 1.0, 2.0], [0, 1, 0])
    assert w.fallback is None and w.w == pytest.approx((0.0, 1.0, 2.0))
