"""One episode's lifecycle, the only one: `termcredit run`'s agents and the trainer's batched
rollout both drive it, so both leave the same files in a trial directory.

    ep = Episode(task, pool, spec, trial_dir, agent="oracle", hooks=default_hooks())
    ep.start()               # phase "start": a fresh sandbox, the shell's start-up trace
    ep.env.step("ls") ...    # phase "agent": traced steps, under the task's agent timeout
    ep.end("done")           # the agent is finished (its termination)
    result = ep.finish()     # phases "finalize", "verify", "hooks"; trajectory and result files

Each phase has its own limit: the sandbox start ``start_timeout``, the agent the task's
``[agent] timeout_sec`` (and each command ``command_timeout``), the verifier the task's
``[verifier] timeout_sec``. Each phase's wall time lands in ``trajectory.info["phases"]``.

Failures are recorded, never raised: an exception escaping the agent is the agent's crash
(``termination = "error"``); one from the sandbox or engine, or anywhere after the agent, is an
infrastructure failure (masked in training, see ``infra.py``). Either way every finished step
stays on disk (``steps.jsonl`` at once, the trajectory file at the end) and the sandbox is
released.
"""

from __future__ import annotations

import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..rawtext import write_text
from ..records import Trajectory, TrialResult, VerifierReport
from ..sandbox import Sandbox, SandboxPool, SandboxSpec
from ..tasks import Task
from ..trialdir import TrialPaths, save_result, save_trajectory
from .agents import DEFAULT_COMMAND_TIMEOUT, AgentEnv
from .hooks import NO_HOOKS, Hooks, run_trial_hooks
from .infra import is_infra, is_infra_exception, mark_infra
from .network import agent_network, network_info, verifier_network
from .verify import verify_episode

START_TIMEOUT = 600.0  # seconds for a sandbox to be ready (container, namespaces, shells)


def task_spec(task: Task, image: str, network: str | None = None,
              tracer: str = "strace") -> SandboxSpec:
    """``network``: the one the user granted (joined only if the task permits one);
    ``tracer``: the resolved backend (tracer/choice.py)."""
    return SandboxSpec(
        image=image, cpus=task.cpus, memory_mb=task.memory_mb,
        env=tuple(sorted(task.env.items())), labels=(("termcredit.task", task.name),),
        workdir=task.workdir, network=agent_network(task, network), tracer=tracer,
    )


class Episode:
    def __init__(self, task: Task, pool: SandboxPool, spec: SandboxSpec, trial_dir: str | Path,
                 *, agent: str, attempt: int = 0, instance: int = 0,
                 command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
                 start_timeout: float = START_TIMEOUT, info: dict[str, Any] | None = None,
                 network: str | None = None, hooks: Hooks = NO_HOOKS):
        self.task, self.pool, self.spec = task, pool, spec
        self.hooks = hooks  # the application's (hooks.py): the harness adds none of its own
        self.paths = TrialPaths(trial_dir)
        self.attempt, self.instance = attempt, instance
        self.command_timeout, self.start_timeout = command_timeout, start_timeout
        self.traj = Trajectory(task=task.name, instruction=task.instruction, agent=agent,
                               trial_dir=str(self.paths.root),
                               info={"instance": instance, **network_info(task, network),
                                     **(info or {})})
        self.verifier_net = verifier_network(task, network)
        self.sandbox: Sandbox | None = None
        self.env: AgentEnv | None = None
        self.error: str | None = None  # the first exception recorded (TrialResult.error)
        self.phases: dict[str, float] = {}
        self._t0 = time.monotonic()
        self._agent_t0: float | None = None

    @property
    def done(self) -> bool:
        """The agent part is over (ended, crashed, or the sandbox failed)."""
        return bool(self.traj.termination)

    @contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.monotonic() - t0

    # ---------------------------------------------------------------- the agent's part
    def start(self) -> bool:
        """Acquire the sandbox and open the agent's environment. False (recorded as an
        infrastructure failure) when the sandbox could not be had."""
        self.paths.root.mkdir(parents=True, exist_ok=True)
        try:
            with self._phase("start"):
                self.sandbox = self.pool.acquire(self.spec, timeout=self.start_timeout)
                self.traj.info["container"] = self.sandbox.id[:12]
                self.traj.info["image"] = self.spec.image
                self.paths.trace_dir.mkdir(exist_ok=True)
                write_text(self.paths.shell_start_trace, self.sandbox.shell.session_trace[0])
                self.env = AgentEnv(self.sandbox, self.task, self.traj, self.paths.root,
                                    command_timeout=self.command_timeout, hooks=self.hooks)
        except Exception as exc:
            self.fail(exc, "start")
            return False
        self._agent_t0 = time.monotonic()
        return True

    def end(self, termination: str, **info: Any) -> None:
        """The agent is finished: why (done, max_turns, agent_timeout, resource_limit, ...)."""
        if self.traj.termination:
            return
        self.traj.termination = termination
        self.traj.info.update(info)
        if self._agent_t0 is not None:
            self.phases["agent"] = time.monotonic() - self._agent_t0

    def fail(self, exc: BaseException, where: str, *, by_agent: bool = False) -> None:
        """Record an exception. ``by_agent``: it escaped the agent's own code, so unless the
        sandbox layer raised it, it is the agent's crash; anything else is infrastructure."""
        if by_agent and not is_infra_exception(exc) and not self.traj.termination:
            self.end("error")
        else:
            if self._agent_t0 is not None and "agent" not in self.phases:
                self.phases["agent"] = time.monotonic() - self._agent_t0
            mark_infra(self.traj, exc, where)
        if self.error is None:
            self.error = f"{type(exc).__name__}: {exc}"
            try:
                self.paths.root.mkdir(parents=True, exist_ok=True)
                write_text(self.paths.error, "".join(traceback.format_exception(exc)))
            except OSError as err:  # the error stays in the trial's result all the same
                self.traj.info["error_file"] = f"not written: {err}"

    # ---------------------------------------------------------------- after the agent
    def finish(self) -> TrialResult:
        """Finalize the steps' accesses, verify, run the end-of-trial hooks, write the trial's
        files; the sandbox is released. Never raises."""
        self.end("done")  # a caller that never said why: the agent returned
        try:
            if self.env is not None and not is_infra(self.traj):
                with self._phase("finalize"):
                    self.env.finalize()
                save_trajectory(self.traj)  # the agent part is safe before verifying
                with self._phase("verify"):
                    if self.spec.network != self.verifier_net:  # the verifier's, not the agent's
                        self.sandbox.set_network(self.verifier_net)
                    self.traj.verifier = verify_episode(self.sandbox, self.task, self.traj,
                                                        self.paths.root, instance=self.instance)
        except Exception as exc:  # a harness crash is an infrastructure failure, not reward 0
            self.traj.verifier = VerifierReport(reward=0.0, error=f"{type(exc).__name__}: {exc}")
            self.fail(exc, "verification")
        finally:
            if self.sandbox is not None:
                self.pool.release(self.sandbox)
                self.sandbox = None
        with self._phase("hooks"):
            run_trial_hooks(self.hooks, self.traj, self.paths)
        self.traj.info["phases"] = {k: round(v, 4) for k, v in self.phases.items()}
        try:
            save_trajectory(self.traj)
        except Exception as exc:  # this trial's failure, recorded in its result: the run goes on
            self.fail(exc, "saving the trajectory")
        result = self.result()
        try:
            save_result(result, self.paths.root)  # last: its presence means the trial finished
        except Exception as exc:  # the run's result.json still lists it; a resume redoes it
            result.error = result.error or f"result.json not written: {type(exc).__name__}: {exc}"
        return result

    def abandon(self) -> None:
        """The run is being torn down (Ctrl-C, SIGTERM) before ``finish``: keep the steps so
        far in the trajectory file, release the sandbox; no verdict, no result file (a resumed
        run redoes the trial)."""
        try:
            if self.paths.root.is_dir():
                save_trajectory(self.traj)
        except Exception:  # noqa: BLE001 the steps are in steps.jsonl; the teardown goes on
            pass
        finally:
            if self.sandbox is not None:
                self.pool.release(self.sandbox)
                self.sandbox = None

    def result(self) -> TrialResult:
        v = self.traj.verifier
        reward = v.reward if v else 0.0
        # a suspect reward is reported as it is, flagged, unless the task says zero
        suspect = bool(v and v.suspect)
        if suspect and v is not None and v.on_suspect == "zero":
            reward = 0.0
        return TrialResult(task=self.task.name, reward=reward, trial_dir=str(self.paths.root),
                           error=self.error or (v.error if v else None), attempt=self.attempt,
                           duration_s=time.monotonic() - self._t0, n_steps=len(self.traj.steps),
                           suspect=suspect, integrity=list(self.traj.integrity))
