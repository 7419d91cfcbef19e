"""One `termcredit run` trial: an agent drives one ``Episode`` (see episode.py)."""

from __future__ import annotations

from pathlib import Path

from ..records import TrialResult
from ..sandbox import SandboxPool, SandboxSpec
from ..tasks import Task
from .agents import Agent, AgentFailure, AgentTimeout
from .episode import Episode, task_spec
from .hooks import NO_HOOKS, Hooks

__all__ = ["run_trial", "task_spec"]


def run_trial(task: Task, agent: Agent, pool: SandboxPool, spec: SandboxSpec, trial_dir: Path,
              *, attempt: int = 0, command_timeout: float = 120.0,
              instance: int = 0, network: str | None = None,
              hooks: Hooks = NO_HOOKS) -> TrialResult:
    """Run one episode end to end. Errors are recorded, never raised: a failed trial still
    leaves its trajectory (with every step that ran) on disk. ``hooks``: the application's
    (``depgpo.trial_hook.default_hooks``), passed to the episode."""
    ep = Episode(task, pool, spec, trial_dir, agent=agent.name, attempt=attempt,
                 instance=instance, command_timeout=command_timeout, network=network,
                 hooks=hooks)
    if ep.start():
        assert ep.env is not None
        try:
            agent.run(ep.env)
            ep.end(getattr(agent, "termination", None) or "done")
        except AgentTimeout:
            ep.end("agent_timeout")
        except AgentFailure as exc:  # resource_limit, shell_lost: the agent's, scored
            ep.end(exc.termination, **{exc.termination: str(exc)})
        except Exception as exc:  # recorded per trial; the run goes on
            ep.fail(exc, "agent", by_agent=True)
        except BaseException:  # interrupted: keep what ran, give the sandbox back
            ep.abandon()
            raise
    return ep.finish()
