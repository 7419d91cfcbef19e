"""Menu sampling on real rollouts (Docker, the traced shell, the verifier): the untrained micro
model, which says anything without a menu, says only tally-orders' declared commands and
`done` with one, and each of those commands ran in the sandbox."""

from pathlib import Path

import pytest

from termcredit.sandbox import SandboxPool, gc
from termcredit.tasks import load_task
from termcredit.tasks.build import build_image
from termcredit.trainer.menu import menu_commands
from termcredit.trainer.policy import load_policy
from termcredit.trainer.rollout import RolloutConfig, rollout_group

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASK = Path(__file__).resolve().parents[2] / "tasks" / "tally-orders"


def _group(client, base_ref, run_id, out: Path, menu: bool):
    task = load_task(TASK)
    policy = load_policy("micro", seed=0)
    image = build_image(client, task, base_ref=base_ref)
    pool = SandboxPool(client, run_id, ahead=3)
    cfg = RolloutConfig(max_turns=4, max_new_tokens=24, command_timeout=20, temperature=1.0,
                        menu=menu)
    try:
        return rollout_group(policy, policy.chat(), task, image, pool, 3, out, cfg, seed=5)
    finally:
        pool.close()
        gc(client, run_id=run_id)


def test_menu_rollouts_say_only_declared_commands(client, base_ref, run_id, tmp_path):
    allowed = menu_commands(load_task(TASK))
    free = _group(client, base_ref, run_id, tmp_path / "free", menu=False)
    assert any(s.action.strip() not in allowed for t in free for s in t.steps)
    group = _group(client, base_ref, run_id, tmp_path / "menu", menu=True)
    steps = [s for t in group for s in t.steps]
    assert steps and all(s.action in allowed for s in steps)
    assert not any(s.invalid for s in steps)
    ran = [s for s in steps if s.action != "done"]
    assert ran and all(s.command is not None and s.command.command == s.action for s in ran)
    assert all(t.verifier is not None and t.verifier.reward in (0.0, 1.0) for t in group)
