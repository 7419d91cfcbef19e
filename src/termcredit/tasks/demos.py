"""The commands a task declares for its demonstrations (``[metadata.demos]`` in task.toml):
look-arounds that change nothing and decoys that break a later step, each inserted before the
solution's command ``before`` (0-based)::

    [metadata.demos]
    harmless = [{before = 1, command = "ls inbox"}, ...]
    breaking = [{before = 4, command = "rm -f /tmp/batch.csv"}, ...]

Read here once: the bench builds its decoy demonstrations from them (bench/decoy_demos.py),
and the oracle estimator counts them, with the solution's, as the task's well-formed commands
(blame inside a failed command, estimators/inside.py)."""

from __future__ import annotations

from dataclasses import dataclass

from .model import Task
from .split import split_commands

KEY = "demos"
KINDS = ("harmless", "breaking")


@dataclass(frozen=True)
class Insert:
    before: int  # the solution command's index it goes before (len(solution): after the last)
    command: str


def solution_commands(task: Task) -> list[str]:
    """The top-level commands of solution/solve.sh ([] without one)."""
    solve = task.solution_dir / "solve.sh"
    return split_commands(solve.read_text()) if solve.is_file() else []


def has_decoys(task: Task) -> bool:
    """The task declares its demonstrations' commands ([metadata.demos])."""
    return isinstance(task.metadata.get(KEY), dict)


def inserts(task: Task, kind: str) -> list[Insert]:
    """The declared commands of one kind, checked: each names its command and a ``before``
    within the solution's commands."""
    return _inserts(task, kind, len(solution_commands(task)))


def _inserts(task: Task, kind: str, n: int) -> list[Insert]:
    out = []
    for item in task.metadata.get(KEY, {}).get(kind, []):
        where = f"{task.path}/task.toml: [metadata.demos] {kind}"
        if not isinstance(item, dict) or "command" not in item or "before" not in item:
            raise ValueError(f"{where}: each entry is {{before = N, command = \"...\"}}, "
                             f"not {item!r}")
        ins = Insert(int(item["before"]), str(item["command"]))
        if not 0 <= ins.before <= n:
            raise ValueError(f"{where}: before = {ins.before} is outside 0..{n} (the "
                             "solution's commands)")
        out.append(ins)
    return out


def declared(task: Task) -> dict[str, list[str]]:
    """The declared commands, by kind."""
    n = len(solution_commands(task))
    return {k: [i.command for i in _inserts(task, k, n)] for k in KINDS}


def reference_commands(task: Task) -> list[str]:
    """A task's well-formed commands: its solution's and the declared ones."""
    solution = solution_commands(task)  # parsed once: it also bounds each ``before``
    return solution + [i.command for k in KINDS for i in _inserts(task, k, len(solution))]
