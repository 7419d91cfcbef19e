"""Issue #34: the oracle estimator on real rollouts of a horizon task (Docker, the traced shell,
the verifier; a scripted policy says the tier's own demonstrations), labelled by the trainer's
provider from the task's task.toml. Expected advantages by hand.

close-ledger-period; one token per action, so every step has n = 1 loss token:
  solved  (demo 0): cd, ls inbox, P=, mkdir, cat >, cat >>, mv, wc, done
          credits [1, 0, 1, 1, 1, 1, 1, 1, None]; K 8, Σ 7 -> f = 8/7 on the seven, 0, and
          1 on `done`; Σn 9 = Σ n·f (7·8/7 + 1) -> w = f
  decoy   (demo 4): cd, P=, mkdir, cat >, cp batch ledger, cat >>, mv, wc, done: every
          command exits 0 (the ledger is the batch twice), blame on the cp alone:
          f = 8 there, 1 on `done`, Σ n·f = 9 -> w = f
  decoy   (demo 6): cd, P=, mkdir, cat >, cat >>, rm -rf archive, mv (fails: no archive), wc,
          done: blame on the rm and the failed mv, f = 4 each, 1 on `done` -> w = f
Rewards [1, 0, 0] -> Â = [√2, −1/√2, −1/√2].
"""

import math
from pathlib import Path

import pytest
from scripted_policy import Layout, ScriptedPolicy

from termcredit import estimators
from termcredit.bench.decoy_demos import decoy_demos
from termcredit.sandbox import SandboxPool, gc
from termcredit.tasks import load_task
from termcredit.tasks.build import build_image
from termcredit.trainer.config import TrainConfig
from termcredit.trainer.providers import providers_for
from termcredit.trainer.rollout import RolloutConfig, rollout_group

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASK = Path(__file__).resolve().parents[2] / "tasks" / "close-ledger-period"
R2 = math.sqrt(2.0)


def test_oracle_advantages_of_real_rollouts_by_hand(client, base_ref, run_id, tmp_path):
    task = load_task(TASK)
    demos = decoy_demos(task)
    scripts = [[a for a, _ in demos[k].turns] for k in (0, 4, 6)]
    image = build_image(client, task, base_ref=base_ref)
    pool = SandboxPool(client, run_id, ahead=len(scripts))
    try:
        group = rollout_group(ScriptedPolicy(scripts), Layout(), task, image, pool,
                              len(scripts), tmp_path, RolloutConfig(max_turns=10,
                                                                    command_timeout=30))
    finally:
        pool.close()
        gc(client, run_id=run_id)
    assert [t.verifier.reward for t in group] == [1.0, 0.0, 0.0]
    est = estimators.build("oracle")
    (provide,) = providers_for(est.needs, TrainConfig(algo="oracle", tasks=[str(TASK)]), None)
    provide(group)
    assert [t.info["oracle"]["breaking"] for t in group] == [[], [4], [5]]
    out = est(group)
    s = 8 / 7
    want = [[R2 * w for w in (s, 0, s, s, s, s, s, s, 1)],
            [-w / R2 for w in (0, 0, 0, 0, 8, 0, 0, 0, 1)],
            [-w / R2 for w in (0, 0, 0, 0, 0, 4, 4, 0, 1)]]
    for got, exp in zip(out.step_advantages, want):
        assert got == pytest.approx(exp, rel=1e-5, abs=1e-9)
