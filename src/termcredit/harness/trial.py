"""One trial: a fresh sandbox, the agent's episode, the verifier, files on disk."""

from __future__ import annotations

import time
import traceback
from pathlib import Path

from ..depgpo import analyse
from ..depgpo.load import facts_from_trajectory
from ..depgpo.report import write_graph_json
from ..records import Trajectory, TrialResult, save_json
from ..sandbox import SandboxPool, SandboxSpec
from ..tasks import Task
from .agents import Agent, AgentEnv, AgentTimeout, ResourceLimit
from .infra import is_infra_exception, mark_infra
from .verify import verify_episode


def task_spec(task: Task, image: str) -> SandboxSpec:
    return SandboxSpec(
        image=image, cpus=task.cpus, memory_mb=task.memory_mb,
        env=tuple(sorted(task.env.items())), labels=(("termcredit.task", task.name),),
    )


def run_trial(task: Task, agent: Agent, pool: SandboxPool, spec: SandboxSpec, trial_dir: Path,
              *, attempt: int = 0, command_timeout: float = 120.0,
              instance: int = 0) -> TrialResult:
    """Run one episode end to end. Errors are recorded, never raised: a failed trial still
    leaves its trajectory (with every step that ran) on disk."""
    t0 = time.monotonic()
    trial_dir.mkdir(parents=True, exist_ok=True)
    traj = Trajectory(task=task.name, instruction=task.instruction, agent=agent.name,
                      trial_dir=str(trial_dir))
    error: str | None = None
    sandbox = None
    try:
        sandbox = pool.acquire(spec)
        traj.info["container"] = sandbox.id[:12]
        traj.info["image"] = spec.image
        traj.info["instance"] = instance
        (trial_dir / "trace").mkdir(exist_ok=True)
        (trial_dir / "trace" / "shell-start.strace").write_text(sandbox.shell.session_trace[0])
        env = AgentEnv(sandbox, task, traj, trial_dir, command_timeout=command_timeout)
        try:
            agent.run(env)
            traj.termination = "done"
        except AgentTimeout:
            traj.termination = "agent_timeout"
        except ResourceLimit as exc:
            traj.termination = "resource_limit"
            traj.info["resource_limit"] = str(exc)
        env.finalize()
        save_json(traj, trial_dir / "trajectory.json")  # agent part is safe before verifying
        traj.verifier = verify_episode(sandbox, task, traj, trial_dir, instance=instance)
        error = traj.verifier.error
        # the dependency graph, credit on its command nodes, from the trajectory in memory
        write_graph_json(trial_dir, analyse(facts_from_trajectory(traj)))
    except Exception as exc:  # recorded per trial; the run goes on
        if traj.termination or is_infra_exception(exc):  # after the agent, or the sandbox's
            mark_infra(traj, exc, "trial")
        else:
            traj.termination = "error"  # the agent's own crash
        error = f"{type(exc).__name__}: {exc}"
        (trial_dir / "error.txt").write_text(traceback.format_exc())
    finally:
        save_json(traj, trial_dir / "trajectory.json")
        if sandbox is not None:
            pool.release(sandbox)
    reward = traj.verifier.reward if traj.verifier else 0.0
    # `termcredit run` reports a suspect reward as it is, flagged, unless the task says zero
    suspect = bool(traj.verifier and traj.verifier.suspect)
    if suspect and traj.verifier and traj.verifier.on_suspect == "zero":
        reward = 0.0
    result = TrialResult(task=task.name, reward=reward, trial_dir=str(trial_dir), error=error,
                         attempt=attempt, duration_s=time.monotonic() - t0,
                         n_steps=len(traj.steps), suspect=suspect,
                         integrity=list(traj.integrity))
    save_json(result, trial_dir / "result.json")
    return result
