"""Agents: what decides the commands of an episode.

An agent implements ``run(env)``; ``env.step(command)`` runs one command in the traced shell and
returns its ``CommandRecord``. Built-ins: ``oracle`` (the task's solution/solve.sh as one step,
or its solution/commands.txt replayed), ``nop`` (nothing), ``replay:FILE`` (each non-empty
line of FILE is one step). Packages above the harness register kinds of their own with
``register_agent_kind`` (``openai:MODEL``, a model behind an OpenAI-compatible endpoint:
termcredit.llm). Any other agent is named
``module:Class`` or ``path/to/file.py:Class`` and built with no arguments (the trainer's policy
agent plugs in the same way). An agent that stops for a reason of its own sets ``termination``
(e.g. ``"max_turns"``); otherwise a returning agent's episode ends as ``done``.

A command that cannot be run as given (it contains a NUL byte, which no shell can receive) is an
invalid action: ``env.step`` refuses it with ``InvalidAction`` before anything runs, and
``env.record_invalid`` puts it in the trajectory as a step with ``invalid`` set and no command,
like a model's unparseable reply (actions.py, textenv.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import shlex
import time
from pathlib import Path
from typing import Any, Callable, Protocol

from ..rawtext import write_text
from ..records import CommandRecord, Step, Trajectory
from ..sandbox import Sandbox
from ..tasks import Task
from ..trialdir import TrialPaths
from .actions import invalid_reason
from .hooks import NO_HOOKS, Hooks, run_step_hooks
from .observe import StepObserver
from .steplog import StepLog

DEFAULT_COMMAND_TIMEOUT = 120.0


class AgentTimeout(Exception):
    """The agent's total time ([agent].timeout_sec) is used up."""


class AgentFailure(Exception):
    """The agent broke its own episode (its files, processes or resource use): the episode ends
    with ``termination`` and this reason (``info[termination]``), and is scored, never masked."""

    termination = "agent_failure"


class ResourceLimit(AgentFailure):
    """The episode used more than the task allows ([environment] storage_mb): it ends here."""

    termination = "resource_limit"


class ShellLost(AgentFailure):
    """The shell ended and could not be started again (the agent removed its program, took
    every pid, ...): nothing more can run, the episode ends here."""

    termination = "shell_lost"


class InvalidAction(ValueError):
    """A command that cannot be run as given; nothing ran. ``reason`` says why."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"invalid action: {reason}")


class AgentEnv:
    """The agent's handle on one episode: the instruction and a traced ``step``."""

    def __init__(self, sandbox: Sandbox, task: Task, trajectory: Trajectory, trial_dir: Path,
                 *, command_timeout: float = DEFAULT_COMMAND_TIMEOUT, output_cap: int = 65536,
                 hooks: Hooks = NO_HOOKS):
        self.sandbox = sandbox
        self.hooks = hooks  # their step hooks run after each recorded step
        self.task = task
        self.trajectory = trajectory
        self.trial_dir = trial_dir
        self.command_timeout = command_timeout
        self.output_cap = output_cap
        self.deadline = time.monotonic() + task.agent_timeout_sec
        self.observer = StepObserver(sandbox.shell, trial_dir=trial_dir,
                                     image_added=sandbox.added_paths)
        self.steplog = StepLog(trial_dir)  # each finished step on disk at once (append-only)

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
        """Run one command; its record (and raw trace, on disk at once) joins the trajectory.
        Raises ``InvalidAction`` (nothing runs, nothing is recorded) for a command that cannot
        be run as given, see ``invalid_reason``."""
        reason = invalid_reason(command)
        if reason is not None:
            raise InvalidAction(reason)
        left = self.time_left()
        if left <= 0:
            raise AgentTimeout(f"agent time of {self.task.agent_timeout_sec:g}s used up")
        limit = min(timeout or self.command_timeout, left)
        rec = self.sandbox.run(command, timeout=limit, output_cap=self.output_cap)
        index = len(self.trajectory.steps)
        rel = TrialPaths(self.trial_dir).step_trace_rel(index)
        path = self.trial_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, rec.trace)
        rec.trace_file = rel
        self.observer.after_step(rec)
        self.trajectory.steps.append(
            Step(index=index, action=action if action is not None else command, command=rec,
                 info=dict(info))
        )
        self.steplog.append(self.trajectory.steps[-1])
        run_step_hooks(self.hooks, self.trajectory)
        lost = getattr(self.sandbox.shell, "lost", None)  # the shell could not be restarted
        if lost:
            raise ShellLost(lost)
        self._check_storage(rec)
        return rec

    def _check_storage(self, rec: CommandRecord) -> None:
        """storage_mb: the container's writable layer, after a step that wrote files (or every
        tenth step, for background writers); over it, the episode ends (the step is kept)."""
        if not rec.files and len(self.trajectory.steps) % 10:
            return
        used = self.sandbox.writable_bytes()
        if used > self.task.storage_mb * (1 << 20):
            raise ResourceLimit(f"the sandbox holds {used / (1 << 20):.0f} MB of new files, "
                                f"over storage_mb = {self.task.storage_mb}")

    def record(self, action: str, *, info: dict[str, Any] | None = None, **fields: Any) -> Step:
        """Record a step that ran nothing (an invalid action, ``done``, a command the episode
        could not run): it joins the trajectory and the step log as a command step does."""
        step = Step(index=len(self.trajectory.steps), action=action, info=dict(info or {}),
                    **fields)
        self.trajectory.steps.append(step)
        self.steplog.append(step)
        return step

    def record_invalid(self, action: str, reason: str, **info: Any) -> Step:
        """Record an action that ran nothing: an invalid step, its observation the error a
        model would see (``error: <reason>``, actions.py ``invalid_observation``)."""
        return self.record(action, invalid=True, observation=f"error: {reason}", info=info)

    def record_done(self, action: str, **info: Any) -> Step:
        """Record the reply that ended the episode (``done``): a step that ran nothing, kept for
        its text and what it cost (token usage in ``info``)."""
        return self.record(action, action_key="<done>", info=info)


class Agent(Protocol):
    name: str

    def run(self, env: AgentEnv) -> None: ...


class NopAgent:
    name = "nop"

    def run(self, env: AgentEnv) -> None:
        return None


class OracleAgent:
    """Copies solution/ to /solution (the oracle alone may see it) and runs solve.sh; a task
    with no solve.sh but a ``solution/commands.txt`` has it replayed, one step per line."""

    name = "oracle"

    def run(self, env: AgentEnv) -> None:
        commands = env.task.solution_commands
        if not env.task.has_solution and commands is None:
            raise FileNotFoundError(f"{env.task.solution_dir / 'solve.sh'}: missing, and no "
                                    "solution/commands.txt (oracle)")
        exports = put_solution(env)
        if env.task.has_solution:
            env.step(f"{exports}bash /solution/solve.sh", timeout=env.time_left())
            return
        if exports:  # the shell persists: one step sets them for every command after it
            env.step(exports.rstrip("; "))
        ReplayAgent(commands).run(env)


def put_solution(env: AgentEnv) -> str:
    """Copy solution/ to /solution (what the oracle alone may see); the ``export K=V; ``
    prefix that sets the task's [solution.env] (values quoted, any character kept)."""
    env.sandbox.put_dir(env.task.solution_dir, "/solution")
    return "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.task.solution_env.items())


class CommandsAgent:
    """The one replay agent: a fixed list of commands, one step each (a multi-line command
    stays one step). An invalid command (a NUL byte) is recorded as an invalid step and the
    replay goes on. ``solution``: copy solution/ to /solution first and run every command
    with the task's [solution.env] exported, as the oracle has them (a split solve.sh)."""

    name = "commands"

    def __init__(self, commands: list[str], *, name: str | None = None, solution: bool = False):
        self.commands, self.solution = list(commands), solution
        self.name = name if name is not None else type(self).name

    def run(self, env: AgentEnv) -> None:
        exports = put_solution(env) if self.solution and env.task.has_solution else ""
        for cmd in self.commands:
            try:
                env.step(exports + cmd)
            except InvalidAction as exc:
                env.record_invalid(cmd, exc.reason)


class ReplayAgent(CommandsAgent):
    """``replay:FILE``: the commands of a file, one per non-empty line (lines end at LF, CRLF
    or CR; other characters, form feeds included, belong to the command)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: replay file not found")
        super().__init__([ln for ln in _replay_lines(self.path) if ln.strip()],
                         name=f"replay:{self.path}")


_LINE_END = re.compile(rb"\r\n|\r|\n")


def _replay_lines(path: Path) -> list[str]:
    """The lines of a replay file; one that is not UTF-8 is an error naming the line."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        ends = list(_LINE_END.finditer(data, 0, exc.start))
        start = ends[-1].end() if ends else 0
        col = len(data[start:exc.start].decode("utf-8")) + 1
        raise ValueError(f"{path}: line {len(ends) + 1}: not UTF-8 text (byte "
                         f"0x{data[exc.start]:02x} at column {col})") from None
    return re.split(r"\r\n|\r|\n", text)


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


# kind -> make(rest of the name, options) -> factory; e.g. "openai" (termcredit.llm)
AgentKind = Callable[[str, dict[str, Any]], Callable[[], Agent]]
_KINDS: dict[str, AgentKind] = {}


def register_agent_kind(kind: str, make: AgentKind) -> None:
    """Agents named ``KIND:REST``, built by ``make(REST, options)``."""
    _KINDS[kind] = make


def make_agent_factory(name: str, options: dict[str, Any] | None = None
                       ) -> Callable[[], Agent]:
    """Validate an agent name and its options now (so bad ones fail before any container
    starts). ``options`` (``--base-url``, ``--max-turns``, ...) are for registered kinds."""
    options = {k: v for k, v in (options or {}).items() if v is not None}
    kind, _, rest = name.partition(":")
    if kind in _KINDS:
        return _KINDS[kind](rest, options)
    if kind == "openai":
        raise ValueError("openai:MODEL agents come with the termcredit.llm package: import it "
                         "first (termcredit run does)")
    if options:
        flags = ", ".join("--" + k.replace("_", "-") for k in sorted(options))
        raise ValueError(f"{flags}: only for --agent openai:MODEL, not {name!r}")
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
    raise ValueError(f"unknown agent {name!r}: use oracle, nop, replay:FILE, openai:MODEL or "
                     "module:Class")
