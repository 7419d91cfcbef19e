"""DepGPO's ``floor``: GRPO's unit weight mixed into every step's weight, by hand (#34)."""

from __future__ import annotations

import math

import pytest

from termcredit import estimators
from termcredit.depgpo import StepWeights
from termcredit.records import Step, Trajectory, VerifierReport


def _traj(reward: float, n: int) -> Trajectory:
    return Trajectory(task="t", instruction="", agent="x",
                      steps=[Step(index=i, action="done") for i in range(n)],
                      verifier=VerifierReport(reward=reward))


def _weights(w: tuple[float, ...]) -> StepWeights:
    k = len(w)
    return StepWeights(tuple(range(k)), (None,) * k, w, w, (1,) * k, ((),) * k, None,
                       frozenset())


def assert_two_steps(monkeypatch, est, want: list[list[float]]) -> None:
    """``est`` on [solved, failed], two steps each, with graph weights [0, 2] and [1.5, 0.5]:
    its step advantages are ``want``."""
    given = {0: _weights((0.0, 2.0)), 1: _weights((1.5, 0.5))}
    group = [_traj(1.0, 2), _traj(0.0, 2)]
    monkeypatch.setattr(est, "step_weights", lambda t: given[group.index(t)])
    out = est(group)
    assert all(math.isclose(x, y, rel_tol=1e-5) for got, w in zip(out.step_advantages, want)
               for x, y in zip(got, w)), out.step_advantages


def test_floor_by_hand(monkeypatch) -> None:
    # rewards [1, 0]: mean 0.5, population std 0.5 -> Â = [+1, −1] (up to eps); graph weights
    # [0, 2] and [1.5, 0.5]; floor 0.25: w' = 0.25 + 0.75·w -> [0.25, 1.75] and [1.375, 0.625]
    assert_two_steps(monkeypatch, estimators.build("depgpo", floor=0.25),
                     [[0.25, 1.75], [-1.375, -0.625]])
    with pytest.raises(ValueError, match=r"depgpo: floor must be in \[0, 1\]"):
        estimators.build("depgpo", floor=-0.1)


def test_positive_uniform_by_hand(monkeypatch) -> None:
    # Â = [+1, −1]; graph weights [0, 2] and [1.5, 0.5]; positive=uniform: the solved one
    # gets [1, 1], the failed one keeps its graph blame [−1.5, −0.5]
    assert_two_steps(monkeypatch, estimators.build("depgpo", positive="uniform"),
                     [[1.0, 1.0], [-1.5, -0.5]])
    with pytest.raises(ValueError, match="depgpo: positive must be one of 'graph', 'uniform'"):
        estimators.build("depgpo", positive="errors")


def test_scale_peak_by_hand(monkeypatch) -> None:
    # weights over their largest: [0, 2] -> [0, 1]; [1.5, 0.5] -> [1, 1/3]; with floor 0.5
    # after it: [0.5, 1] and [1, 2/3]
    assert_two_steps(monkeypatch, estimators.build("depgpo", scale="peak"),
                     [[0.0, 1.0], [-1.0, -1 / 3]])
    assert_two_steps(monkeypatch, estimators.build("depgpo", scale="peak", floor=0.5),
                     [[0.5, 1.0], [-1.0, -2 / 3]])
