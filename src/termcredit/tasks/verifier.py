"""Run a task's verifier in the sandbox, traced, after the agent has finished.

Only now are the task's ``tests/`` copied to ``/tests`` (the agent never sees them). The verifier
runs as ``bash /tests/test.sh`` in a fresh traced shell (its own strace session, so its trace is
cleanly separated from the agent's) under the verifier timeout. Reward comes from
``/logs/verifier/reward.txt``, else ``reward.json``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable

from ..records import VerifierReport
from ..sandbox import Sandbox
from .model import Task
from .build import instance_env
from .resources import verifier_resources

VERIFIER_COMMAND = "bash /tests/test.sh"


def read_reward(verifier_dir: Path) -> tuple[float, dict[str, float], str | None]:
    """(reward, metrics, error). reward.json: its "reward" key, else the mean of its numbers."""
    txt, js = verifier_dir / "reward.txt", verifier_dir / "reward.json"
    try:
        if txt.is_file():
            value = float(txt.read_text().strip())
            if not math.isfinite(value):
                raise ValueError(value)
            return value, {}, None
        if js.is_file():
            data = json.loads(js.read_text())
            if isinstance(data, (int, float)) and not isinstance(data, bool):
                return float(data), {}, None
            metrics = {k: float(v) for k, v in data.items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if "reward" in metrics:
                return metrics["reward"], metrics, None
            if metrics:
                return sum(metrics.values()) / len(metrics), metrics, None
            return 0.0, {}, f"{js.name} holds no numeric reward"
    except (ValueError, AttributeError, json.JSONDecodeError) as exc:
        return 0.0, {}, f"unreadable reward file: {exc}"
    return 0.0, {}, "the verifier wrote neither reward.txt nor reward.json"


def run_verifier(sandbox: Sandbox, task: Task, trial_dir: Path, *,
                 agent_written: Iterable[str] = (), instance: int = 0) -> VerifierReport:
    sandbox.put_dir(task.tests_dir, "/tests")
    shell = sandbox.open_shell(env={**task.verifier_env, **instance_env(task, instance)})
    try:
        rec = shell.run(VERIFIER_COMMAND, timeout=task.verifier_timeout_sec,
                        output_cap=1 << 20)
        shell.finish(grace=1.0)  # the verifier's leftover children: their reads count too
    finally:
        shell.close()
    trace_text = "".join(shell.session_trace)
    trace_dir = trial_dir / "trace"
    trace_dir.mkdir(parents=True, exist_ok=True)
    (trace_dir / "verifier.strace").write_text(trace_text)
    vdir = trial_dir / "verifier"
    sandbox.get_dir("/logs/verifier", vdir)
    resources = verifier_resources(trace_text, agent_written=agent_written)
    (vdir / "resources.json").write_text(json.dumps(resources, indent=2) + "\n")
    (vdir / "test-stdout.txt").write_text(rec.stdout)
    (vdir / "test-stderr.txt").write_text(rec.stderr)
    reward, metrics, error = read_reward(vdir)
    if rec.timed_out:
        error = f"verifier timed out after {task.verifier_timeout_sec:g}s"
        reward = 0.0
    return VerifierReport(
        reward=reward, rewards=metrics, exit_code=rec.exit_code, timed_out=rec.timed_out,
        duration_s=rec.duration_s, stdout=rec.stdout[-4000:], stderr=rec.stderr[-4000:],
        trace_file="trace/verifier.strace", error=error, resources=resources["cleaned"],
    )
