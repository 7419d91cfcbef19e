"""The trainer's credit metrics on hand-built traced trajectories (the builders of the DepGPO
estimator's by-hand tests), every expected value worked out by hand.

Group used throughout:
  S (R=1, success): cat /etc/hostname | echo > stage | sed stage > answer     tokens [3, 3, 4]
     credits [0, 1, 1] (the hostname read feeds nothing) -> DepGPO weights, 1 zero of 3 traced
  F (R=0, failure): `true` | done (untraced)                                  tokens [2, 1]
     credits [0, None]: one traced step -> tied-credits fallback, 1 zero of 1 traced
  I (infrastructure failure, verifier said R=1 before the harness failed): `true` | `true`
     credits [0, 0] -> tied-credits, 2 zeros of 2 traced; counted in infra_rate only
"""

from __future__ import annotations

import pytest
from test_estimators_by_hand_depgpo import ANSWER, STAGE, step, traj, traj_b, traj_c

from termcredit import estimators
from termcredit.depgpo import DepGPOConfig, StepWeights
from termcredit.depgpo import analysis as an
from termcredit.estimators.depgpo import summarize_weights
from termcredit.harness.infra import INFRA_ERROR
from termcredit.records import Step, Trajectory
from termcredit.trainer.credit_metrics import credit_metrics, credit_metrics_for


def success() -> Trajectory:
    return traj(1.0, [step(0, "cat /etc/hostname", read=("/etc/hostname",), stdout="box\n"),
                      step(1, STAGE[0], write=STAGE[1]),
                      step(2, ANSWER[0], read=ANSWER[1], write=ANSWER[2])], [3, 3, 4])


def failure() -> Trajectory:
    return traj(0.0, [step(0, "true"), Step(index=1, action="done")], [2, 1])


def infra() -> Trajectory:
    t = traj(1.0, [step(0, "true"), step(1, "true")], [5, 5])
    t.termination = INFRA_ERROR
    return t


def test_success_failure_and_infra_by_hand() -> None:
    assert credit_metrics([success(), failure(), infra()]) == pytest.approx({
        "credit/infra_rate": 1 / 3,
        "credit/zero_credit_step_frac": (1 + 1) / (3 + 1),  # not (1 + 1 + 2) / (3 + 1 + 2)
        "credit/fallback_rate": 1 / 2,
        "credit/fallback/none": 1 / 2,
        "credit/fallback/tied-credits": 1 / 2,
        "credit/steps_per_success": 3.0,  # I's "success" is no success: not (3 + 2) / 2
        "credit/tokens_per_success": 10.0,
        "credit/errored_command_frac": 0 / 4,  # S's three and F's `true` all exit 0
    })


def test_means_over_successes_and_tokens_only_where_there_are_tokens() -> None:
    s2 = traj(1.0, [step(0, "true")], [7])
    bare = traj(1.0, [step(0, "true"), step(1, "true"), step(2, "true"), step(3, "true")], [1])
    bare.tokens = None  # a harness run: steps but no sampled tokens
    out = credit_metrics([success(), s2, bare, failure()])
    assert out["credit/steps_per_success"] == pytest.approx((3 + 1 + 4) / 3)
    assert out["credit/tokens_per_success"] == pytest.approx((10 + 7) / 2)
    assert out["credit/infra_rate"] == 0.0
    alone = credit_metrics([bare])  # successes, none with tokens: no token mean
    assert alone["credit/steps_per_success"] == 4.0 and "credit/tokens_per_success" not in alone


def test_keys_absent_without_successes_or_episodes() -> None:
    out = credit_metrics([failure(), traj_c(0.0)])
    assert "credit/steps_per_success" not in out and "credit/tokens_per_success" not in out
    assert out["credit/fallback/tied-credits"] == 1.0 and out["credit/fallback_rate"] == 1.0
    assert "credit/fallback/none" not in out
    assert credit_metrics([infra()]) == {"credit/infra_rate": 1.0}
    assert credit_metrics([]) == {}


def test_cfg_is_depgpos_settings() -> None:
    # traj_b: C = [0.75, 1, 1] (its read supports the stage write); with β = 0 the read has 0
    assert credit_metrics([traj_b()])["credit/zero_credit_step_frac"] == 0.0
    zero_beta = credit_metrics([traj_b()], DepGPOConfig(beta=0.0))
    assert zero_beta["credit/zero_credit_step_frac"] == pytest.approx(1 / 3)


def _sentinel(n_steps: int, fallback: str | None) -> StepWeights:
    zeros = (0.0,) * n_steps
    return StepWeights(tuple(range(n_steps)), zeros, zeros, zeros, (1,) * n_steps,
                       ((),) * n_steps, fallback, frozenset())


def test_a_kept_analysis_is_reused_for_the_same_trajectory_only() -> None:
    s, f = success(), failure()
    an.analysis_of(s).weights = _sentinel(3, "sentinel")  # what S keeps (DepGPO's defaults)
    an.analysis_of(success()).weights = _sentinel(3, "other")  # a look-alike's: not S's
    out = credit_metrics([s, f])
    # S's weights are the sentinel's (3 zero credits); F's are computed (1 zero of 1 traced)
    assert out["credit/fallback/sentinel"] == 0.5
    assert out["credit/zero_credit_step_frac"] == pytest.approx((3 + 1) / (3 + 1))


def test_the_estimators_stats_and_the_metrics_are_one_summary(monkeypatch) -> None:
    group = [success(), failure(), traj_b(0.0)]
    est = estimators.build("depgpo", beta=0.0)
    out = est(group)
    summary = summarize_weights([est.weights_of(t) for t in group])
    assert {k: out.stats[k] for k in summary} == summary
    # S 1 zero of 3, F 1 of 1, B (β = 0) 1 of 3; fallbacks: F only
    assert out.stats["zero_credit_step_frac"] == pytest.approx(3 / 7)
    assert out.stats["fallback_rate"] == pytest.approx(1 / 3)

    def no_recompute(*_a, **_k):
        raise AssertionError("weights computed twice")

    monkeypatch.setattr(an, "analyse_graph", no_recompute)
    metrics = credit_metrics_for(group, est)  # the estimator's weights, its β
    assert {k.removeprefix("credit/"): v for k, v in metrics.items()
            if k.removeprefix("credit/") in summary} == summary
    both = estimators.build("depgpo+opd", beta=0.0)
    both(group)
    assert credit_metrics_for(group, both)["credit/zero_credit_step_frac"] == pytest.approx(3 / 7)


def test_an_updates_groups_are_all_reused(monkeypatch) -> None:
    """Several groups per update, one estimator call each: the metrics over all of them
    compute nothing again; a trajectory the estimator never saw (an infra failure, or one
    that only looks the same) is computed; each trajectory keeps its own analysis."""
    est = estimators.build("depgpo", beta=0.0)
    g1, g2 = [success(), failure()], [traj_b(0.0), traj_c(1.0)]
    est(g1)
    est(g2)
    assert est.weights_of(success()) is None and est.weights_of(g1[0]) is not None
    calls = []
    real = an.analyse_graph
    monkeypatch.setattr(an, "analyse_graph", lambda *a: calls.append(a) or real(*a))
    # zeros: S 1 of 3, F 1 of 1, B (β = 0) 1 of 3, C 1 of 1; fallbacks: F and C (tied)
    out = credit_metrics_for([*g1, *g2, infra()], est)
    assert calls == []
    assert out["credit/zero_credit_step_frac"] == pytest.approx(4 / 8)
    assert out["credit/fallback_rate"] == pytest.approx(2 / 4)
    assert out["credit/infra_rate"] == pytest.approx(1 / 5)
    credit_metrics_for([g1[0], success()], est)
    assert len(calls) == 1
    est(g2)  # weighed again: nothing computed again
    assert len(calls) == 1


def test_other_algorithms_get_depgpos_defaults_from_the_traces() -> None:
    group = [success(), failure(), traj_b(0.0)]
    grpo = estimators.build("grpo")
    grpo(group)
    # β = 0.5: B's read has credit 0.75 -> zeros: S 1, F 1 of 3 + 1 + 3 traced
    assert credit_metrics_for(group, grpo)["credit/zero_credit_step_frac"] == pytest.approx(2 / 7)
    dep = estimators.build("depgpo", beta=0.0)  # not called yet: no weights to reuse, its β
    assert credit_metrics_for(group, dep)["credit/zero_credit_step_frac"] == pytest.approx(3 / 7)


def test_errored_command_frac_by_hand() -> None:
    """Commands that exit non-zero or time out, over the commands of non-infra episodes:
    S's 3 clean, F2's `false` (exit 1) and a timed-out one, `done` not a command: 2 / 5."""
    f2 = traj(0.0, [step(0, "false"), step(1, "sleep 99"), Step(index=2, action="done")],
              [1, 1, 1])
    f2.steps[0].command.exit_code = 1
    f2.steps[1].command.timed_out = True
    out = credit_metrics([success(), f2, infra()])
    assert out["credit/errored_command_frac"] == pytest.approx(2 / 5)
