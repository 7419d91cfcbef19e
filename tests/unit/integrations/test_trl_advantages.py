"""The TRL adapter's [B, T] advantage: each group's per-token advantages from our estimator,
cut after each row's prompt and right-padded; worked out by hand on a GRPO group."""

from __future__ import annotations

import pytest
import torch

from termcredit import estimators
from termcredit.harness.infra import INFRA_ERROR
from termcredit.integrations.trl import completion_advantages
from termcredit.records import Step, TokenLayout, Trajectory, VerifierReport


def row(reward: float, prompt: int, action: int, obs: int) -> Trajectory:
    """prompt ids (mask 0), one action (mask 1), its observation (mask 0)."""
    n = prompt + action + obs
    tok = TokenLayout(token_ids=list(range(n)), loss_mask=[0] * prompt + [1] * action + [0] * obs,
                      logprobs=[0.0] * n, step_spans=[[prompt, prompt + action]])
    return Trajectory(task="t", instruction="", agent="x", steps=[Step(index=0, action="a")],
                      tokens=tok, verifier=VerifierReport(reward=reward))


def test_groups_cut_after_the_prompt_and_padded() -> None:
    # group 1: R = 1, 0 -> Â = ±0.5 / (0.5 + 1e-6); group 2: R = 1, 1 -> 0
    trajs = [row(1.0, 2, 3, 1), row(0.0, 3, 2, 0), row(1.0, 2, 1, 1), row(1.0, 2, 1, 1)]
    adv = completion_advantages(trajs, estimators.build("grpo"), 2, [2, 3, 2, 2], width=5)
    a = 0.5 / (0.5 + 1e-6)
    expected = torch.tensor([[a, a, a, 0, 0], [-a, -a, 0, 0, 0], [0] * 5, [0] * 5])
    assert torch.allclose(adv, expected)


def test_rows_must_be_whole_groups() -> None:
    with pytest.raises(ValueError, match="whole groups of 2"):
        completion_advantages([row(1.0, 1, 1, 0)] * 3, estimators.build("grpo"), 2, [1] * 3, 4)


def test_an_infrastructure_failure_is_out_of_the_baseline() -> None:
    # group: R = 1, 0 and a row whose sandbox failed (reward 0 but infra): without it
    # Â = ±0.5 / (0.5 + 1e-6) as for two rows; the failed row gets 0
    broken = row(0.0, 1, 1, 0)
    broken.termination = INFRA_ERROR
    trajs = [row(1.0, 1, 1, 0), row(0.0, 1, 1, 0), broken]
    adv = completion_advantages(trajs, estimators.build("grpo"), 3, [1, 1, 1], width=1)
    a = 0.5 / (0.5 + 1e-6)
    assert torch.allclose(adv, torch.tensor([[a], [-a], [0.0]]))
    # one row left of two: nothing to compare with, all 0
    lone = completion_advantages([trajs[0], broken], estimators.build("grpo"), 2, [1, 1], 1)
    assert not lone.any()
