"""Agents: what decides the commands of an episode.

An agent implements ``run(env)``; ``env.step(command)`` runs one command in the traced shell and
returns its ``CommandRecord``. Built-ins: ``oracle`` (the task's solution/solve.sh as one step),
``nop`` (nothing), ``replay:FILE`` (each non-empty line of FILE is one step). Any other agent is
named ``module:Class`` or ``path/to/file.py:Class`` and built with no arguments (the trainer's
policy agent plugs in the same way).
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from pathlib import Path
from typing import Any, Callable, Protocol

from ..records import CommandRecord, Step, Trajectory
from ..sandbox import Sandbox
from ..tasks import Task
from .observe import StepObserver

DEFAULT_COMMAND_TIMEOUT = 120.0


class AgentTimeout(Exception):
    """The agent's total time ([agent].timeout_sec) is used up."""


class AgentEnv:
    """The agent's handle on one episode: the instruction and a traced ``step``."""

    def __init__(self, sandbox: Sandbox, task: Task, trajectory: Trajectory, trial_dir: Path,
                 *, command_timeout: float = DEFAULT_COMMAND_TIMEOUT, output_cap: int = 65536):
        self.sandbox = sandbox
        self.task = task
        self.trajectory = trajectory
        self.trial_dir = trial_dir
        self.command_timeout = command_timeout
        self.output_cap = output_cap
        self.deadline = time.monotonic() + task.agent_timeout_sec
        self.observer = StepObserver(sandbox.shell, trial_dir=trial_dir,
                                     image_added=sandbox.added_paths)

    @property
    def instruction(self) -> str:
        return self.task.instruction

    def finalize(self) -> None:
        """Per-step accesses from the whole session trace (call once the agent is done), and
        the episode's integrity: every tampering reason of its steps and of the session."""
        steps = [s for s in self.trajectory.steps if s.command is not None]
        shell = self.sandbox.shell
        session = self.observer.finalize([s.command for s in steps], "".join(shell.session_trace))
        reasons = [f"step {s.index}: {r}" for s in steps for r in s.command.integrity]
        reasons += session + shell.integrity
        self.trajectory.integrity += [r for r in reasons if r not in self.trajectory.integrity]

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def step(self, command: str, *, action: str | None = None, timeout: float | None = None,
             **info: Any) -> CommandRecord:
        """Run one command; its record (and raw trace, on disk at once) joins the trajectory."""
        left = self.time_left()
        if left <= 0:
            raise AgentTimeout(f"agent time of {self.task.agent_timeout_sec:g}s used up")
        limit = min(timeout or self.command_timeout, left)
        rec = self.sandbox.run(command, timeout=limit, output_cap=self.output_cap)
        index = len(self.trajectory.steps)
        rel = f"trace/step-{index:03d}.strace"
        path = self.trial_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rec.trace)
        rec.trace_file = rel
        self.observer.after_step(rec)
        self.trajectory.steps.append(
            Step(index=index, action=action if action is not None else command, command=rec,
                 info=dict(info))
        )
        return rec


class Agent(Protocol):
    name: str

    def run(self, env: AgentEnv) -> None: ...


class NopAgent:
    name = "nop"

    def run(self, env: AgentEnv) -> None:
        return None


class OracleAgent:
    """Copies solution/ to /solution (the oracle alone may see it) and runs solve.sh."""

    name = "oracle"

    def run(self, env: AgentEnv) -> None:
        if not env.task.has_solution:
            raise FileNotFoundError(f"{env.task.solution_dir / 'solve.sh'}: missing (oracle)")
        env.sandbox.put_dir(env.task.solution_dir, "/solution")
        exports = "".join(f"export {k}={_sh_quote(v)}; " for k, v in env.task.solution_env.items())
        env.step(f"{exports}bash /solution/solve.sh", timeout=env.time_left())


class ReplayAgent:
    """Replays a file of commands, one per non-empty line."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: replay file not found")
        self.commands = [ln for ln in self.path.read_text().splitlines() if ln.strip()]
        self.name = f"replay:{self.path}"

    def run(self, env: AgentEnv) -> None:
        for cmd in self.commands:
            env.step(cmd)


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _import_class(spec: str) -> Callable[[], Any]:
    target, _, cls_name = spec.rpartition(":")
    if target.endswith(".py"):
        mod_spec = importlib.util.spec_from_file_location(Path(target).stem, target)
        if mod_spec is None or mod_spec.loader is None or not Path(target).is_file():
            raise ValueError(f"agent file not found: {target}")
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    try:
        return getattr(module, cls_name)
    except AttributeError as exc:
        raise ValueError(f"{target} has no class {cls_name!r}") from exc


def make_agent_factory(name: str) -> Callable[[], Agent]:
    """Validate an agent name now (so bad names fail before any container starts)."""
    if name == "oracle":
        return OracleAgent
    if name == "nop":
        return NopAgent
    if name.startswith("replay:"):
        path = name.split(":", 1)[1]
        ReplayAgent(path)
        return lambda: ReplayAgent(path)
    if ":" in name:
        cls = _import_class(name)
        return cls
    raise ValueError(f"unknown agent {name!r}: use oracle, nop, replay:FILE or module:Class")
