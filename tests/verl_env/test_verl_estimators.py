"""termcredit's estimators inside verl: registered by the plugin entry point when verl is
imported, and run by verl's own ``compute_advantage`` on a DataProto batch (expected values by
hand). Runs in .venv-verl (`make venv-verl`); the main venv has no verl."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("verl", reason="verl lives in its own venv: `make venv-verl`, then "
                    ".venv-verl/bin/python -m pytest tests/verl_env")

import torch  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402

from termcredit.integrations.step_facts import encode_facts  # noqa: E402
from termcredit.integrations.token_rewards import encode  # noqa: E402

MASK = [1, 1, 0, 0, 1, 1, 1]  # DepGPO rows: replies of 2 and 3 tokens, an observation between
FACTS = [1, 1, 0, 0, 0, 0]  # step-facts rows: one reply, its closing observation (4 slots)


def batch(rows: list[list[float]], mask: list[int], uids: list[str]) -> DataProto:
    return DataProto.from_dict(
        tensors={"token_level_rewards": torch.tensor(rows, dtype=torch.float32),
                 "response_mask": torch.tensor([mask] * len(rows))},
        non_tensors={"uid": np.array(uids, dtype=object)})


def test_importing_verl_registers_them_through_the_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sys, verl\n"
         "from verl.trainer.ppo.core_algos import get_adv_estimator_fn as get\n"
         "print(get('depgpo').__module__, get('gigpo').__name__, get('adastep').__name__)"],
        capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["termcredit.integrations.token_rewards", "gigpo_advantage",
                                  "adastep_advantage"]


def test_depgpo_through_compute_advantage() -> None:
    # group a: R = 1 with weights (0.25, 1.5), R = 0 with unit weights: Â = ±0.5 / (0.5 + 1e-6);
    # group b: one row, Â = 0. A = Â · w_t on turn t's tokens, 0 on the observation.
    data = batch([encode(1.0, [0.25, 1.5], MASK), encode(0.0, [1.0, 1.0], MASK),
                  encode(1.0, [1.0, 1.0], MASK)], MASK, ["a", "a", "b"])
    out = compute_advantage(data, adv_estimator="depgpo")
    a = 0.5 / (0.5 + 1e-6)
    expected = torch.tensor([[0.25 * a] * 2 + [0, 0] + [1.5 * a] * 3,
                             [-a] * 2 + [0, 0] + [-a] * 3,
                             [0.0] * 7])
    assert torch.allclose(out.batch["advantages"], expected, atol=1e-6)
    assert torch.equal(out.batch["returns"], out.batch["advantages"])
    # the rows still sum to R: verl's own GRPO reads them as outcome rewards (R = 1, 0; verl's
    # std is the sample std, √0.5: ±0.5 / √0.5 = ±0.7071 on every loss token)
    grpo = compute_advantage(batch([encode(1.0, [0.25, 1.5], MASK), encode(0.0, [1.0, 1.0], MASK)],
                                   MASK, ["a", "a"]), adv_estimator="grpo")
    a = 0.5 / (0.5 ** 0.5 + 1e-6)
    assert torch.allclose(grpo.batch["advantages"],
                          torch.tensor([[a], [-a]]) * torch.tensor(MASK), atol=1e-5)


def test_gigpo_and_adastep_through_compute_advantage() -> None:
    # one anchor, actions a, a, b, b with R = 1, 0, 1, 1 (by hand in
    # tests/unit/integrations/test_step_facts.py): GiGPO 2(R − 0.75); AdaStep ŵ = 1/3, so
    # (4/3)(R − 0.75) = (1/3, −1, 1/3, 1/3); on the reply's two tokens only.
    rewards = [1.0, 0.0, 1.0, 1.0]
    rows = [encode_facts(r, ["S0"], [a], [False], FACTS) for r, a in zip(rewards, "aabb")]
    on = torch.tensor(FACTS, dtype=torch.float32)
    gigpo = compute_advantage(batch(rows, FACTS, ["u"] * 4), adv_estimator="gigpo")
    assert torch.allclose(gigpo.batch["advantages"],
                          (2 * (torch.tensor(rewards) - 0.75))[:, None] * on, atol=1e-6)
    ada = compute_advantage(batch(rows, FACTS, ["u"] * 4), adv_estimator="adastep")
    assert torch.allclose(ada.batch["advantages"],
                          torch.tensor([1 / 3, -1.0, 1 / 3, 1 / 3])[:, None] * on, atol=1e-6)


def test_an_invalid_step_pays_its_penalty_in_verl() -> None:
    # two rows of one group, both R = 0, the first one's step invalid: A^E = (−0.1 − 0, 0 − 0),
    # centred over R only (mean 0); returns −0.1 and 0 share the anchor: A^S = (−0.05, 0.05).
    rows = [encode_facts(0.0, ["S0"], ["??"], [True], FACTS),
            encode_facts(0.0, ["S0"], ["ls"], [False], FACTS)]
    out = compute_advantage(batch(rows, FACTS, ["u", "u"]), adv_estimator="gigpo")
    on = torch.tensor(FACTS, dtype=torch.float32)
    assert torch.allclose(out.batch["advantages"],
                          torch.tensor([-0.15, 0.05])[:, None] * on, atol=1e-6)
