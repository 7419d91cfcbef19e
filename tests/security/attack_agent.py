"""The red-team agent of tests/security: runs the commands its plan gives for its trial.

`termcredit run --agent tests/security/attack_agent.py:AttackAgent` builds it with no arguments;
the plan is the JSON file named by $TC_SECURITY_PLAN: {task name: {attempt: [step, ...]}}, where a
step is {"cmd": str, "timeout": seconds} or {"oracle": true} (the task's own solution/solve.sh).
The trial is found from the episode (task name, attempt-<k> trial folder). What each command
printed is in the trajectory (steps[i].command.stdout/stderr/exit_code); exceptions propagate,
so a wedged or broken shell shows as the trial's error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PLAN_ENV = "TC_SECURITY_PLAN"


class AttackAgent:
    name = "security-attacks"

    def run(self, env) -> None:
        plan = json.loads(Path(os.environ[PLAN_ENV]).read_text())
        attempt = Path(env.trial_dir).name.removeprefix("attempt-")
        steps = plan.get(env.task.name, {}).get(attempt)
        if steps is None:
            raise LookupError(f"no plan for {env.task.name} attempt {attempt}")
        for step in steps:
            if step.get("oracle"):
                from termcredit.harness.agents import OracleAgent

                OracleAgent().run(env)
            else:
                env.step(step["cmd"], timeout=step.get("timeout", 30.0))
