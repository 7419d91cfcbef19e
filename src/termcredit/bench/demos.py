"""Demonstrations for the warm start (noisy) and the OPD teacher (clean), from task oracles.

Recipe (documented in the README): for each task, the oracle's commands (solution/solve.sh
split into its top-level commands by bash's grammar, `split.split_commands`: multi-line
quotes, here-documents and continued lines kept whole, comments dropped; a multi-line command
is the action as a ```bash block, which `parse_action` reads whole) make a clean demonstration
ending in `done`. The noisy set mixes, per task: clean copies, copies with exploration commands
before the work (`ls`, `cat`, `find` of the task's folder), copies with a distractor write after it
(`echo ... > /tmp/debug.log`), and wrong copies (the answer written to the wrong file, or a
pipeline with its last stage dropped). Observations are short synthetic ones ("exit code: 0"):
the policy learns the shape of a solution, not any instance's data.
"""

from __future__ import annotations

import random
import re

from ..tasks import Task
from ..trainer.sft import Demo
from .split import split_commands

EXPLORE = ["ls -la /app", "ls /app/*", "find /app -maxdepth 2 -type f", "pwd"]
DISTRACT = ["echo checking > /tmp/debug.log", "date > /tmp/when.txt", "ls /tmp"]
OK = "exit code: 0"


def oracle_commands(task: Task) -> list[str]:
    """The oracle's commands as action texts (see `_action`)."""
    return [_action(c) for c in _commands(task)]


def _commands(task: Task) -> list[str]:
    return split_commands((task.solution_dir / "solve.sh").read_text())


def _action(command: str) -> str:
    """The action text of a command: itself, or a fenced block when it spans lines (the first
    line alone would be what a policy's plain reply runs)."""
    return f"```bash\n{command}\n```" if "\n" in command else command


def wrong_variant(cmd: str, rng: random.Random) -> str:
    if ">" in cmd and rng.random() < 0.5:
        return re.sub(r">\s*(\S+)\s*$", "> /tmp/out.txt", cmd)  # the answer in the wrong place
    if "|" in cmd:
        return cmd.rsplit("|", 1)[0].rstrip()  # the last stage of the pipeline dropped
    return cmd.replace("/app", "/ap", 1)  # a typo in the path


def clean_demos(task: Task) -> list[Demo]:
    cmds = oracle_commands(task)
    return [Demo(task.instruction, [(c, OK) for c in cmds] + [("done", "")])]


def noisy_demos(task: Task, rng: random.Random, copies: int = 6) -> list[Demo]:
    cmds = _commands(task)
    demos = []
    for k in range(copies):
        kind = k % 4
        turns = [(c, OK) for c in cmds]
        if kind == 1:
            turns = [(rng.choice(EXPLORE), "exit code: 0\nstdout:\n...")] + turns
        elif kind == 2:
            turns = turns + [(rng.choice(DISTRACT), OK)]
        elif kind == 3:
            i = rng.randrange(len(turns))
            turns[i] = (wrong_variant(turns[i][0], rng), OK)
        turns = [(_action(c), obs) for c, obs in turns]
        demos.append(Demo(task.instruction, turns + [("done", "")]))
    return demos
