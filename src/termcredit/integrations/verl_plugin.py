"""termcredit's advantage estimators in verl, registered with verl's ``register_adv_est``.

verl imports every ``verl.plugins`` entry point when ``verl`` itself is imported (in the driver
and in every Ray worker); termcredit's pyproject names this module there, so in an environment
with termcredit installed, ``algorithm.adv_estimator=depgpo`` (or ``gigpo``, ``adastep``) works
without importing anything by hand. Importing it directly registers them too.

- ``depgpo``: rows whose token rewards carry DepGPO's step weights (``token_rewards.encode``;
  sums to R, so the row reads as an ordinary outcome reward elsewhere);
- ``gigpo``, ``adastep``: rows whose token rewards carry each step's anchor, action and validity
  (``step_facts.encode_facts``), estimated by termcredit's own GiGPO and AdaStep (their default
  settings: γ = 0.95, mean_norm, invalid penalty 0.1).

``TermcreditAgentLoop`` (``integrations/verl_agent.py``) writes the encoding the configured
estimator reads. Needs the ``verl`` extra (its own venv)."""

from __future__ import annotations

from typing import Any, Callable

from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

from .step_facts import step_estimator
from .token_rewards import depgpo_advantage

ESTIMATORS: dict[str, Callable[..., Any]] = {
    "depgpo": depgpo_advantage,
    "gigpo": step_estimator("gigpo"),
    "adastep": step_estimator("adastep"),
}

for _name, _fn in ESTIMATORS.items():
    if _name not in ADV_ESTIMATOR_REGISTRY:  # verl refuses a second, different function
        register_adv_est(_name)(_fn)
