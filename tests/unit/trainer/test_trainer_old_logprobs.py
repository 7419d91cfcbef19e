"""π_old when sampling changed the distribution: tempered or top-p behaviour log-probs are not
the policy's own; the trainer re-scores once, and OPD and the loss both use it."""

from __future__ import annotations

import pytest

from termcredit import estimators
from termcredit.records import Step, TokenLayout, Trajectory, VerifierReport
from termcredit.trainer.config import TrainConfig
from termcredit.trainer.train import Trainer


class Scorer:
    def __init__(self) -> None:
        self.calls = 0

    def score(self, seqs, masks):
        self.calls += 1
        return [[-0.5 * m for m in mask] for mask in masks]  # the plain policy: -0.5 per token


def traj() -> Trajectory:
    tok = TokenLayout(token_ids=[1, 2, 3], loss_mask=[0, 1, 1], logprobs=[0.0, -2.0, -0.1],
                      step_spans=[[1, 3]], teacher_logprobs=[0.0, -1.0, -1.0])
    return Trajectory(task="t", instruction="", agent="p", steps=[Step(index=0, action="x")],
                      verifier=VerifierReport(reward=1.0), tokens=tok)


def trainer(**rollout) -> tuple[Trainer, Scorer]:
    tr = Trainer.__new__(Trainer)
    tr.cfg, tr.policy = TrainConfig(rollout=rollout), Scorer()
    return tr, tr.policy


@pytest.mark.parametrize(("rollout", "rescored"), [
    ({"temperature": 1.0, "top_p": 1.0}, False),
    ({"temperature": 0.5}, True),
    ({"top_p": 0.9}, True),
])
def test_old_logprobs_are_rescored_only_when_sampling_changed_the_distribution(
        rollout, rescored) -> None:
    tr, scorer = trainer(**rollout)
    group = [traj()]
    tr.score_old(group)
    assert scorer.calls == int(rescored)
    tok = group[0].tokens
    assert tok.old_logprobs == ([0.0, -0.5, -0.5] if rescored else [])
    # OPD by hand, κ = 2: -2·(old - teacher) on sampled tokens
    opd = estimators.build("opd", kappa=2.0)(group).advantages[0]
    expected = [0.0, -2 * (-0.5 + 1.0), -2 * (-0.5 + 1.0)] if rescored else \
        [0.0, -2 * (-2.0 + 1.0), -2 * (-0.1 + 1.0)]
    assert opd == pytest.approx(expected)
