"""Demonstrations for the warm start (noisy) and the OPD teacher (clean), from task oracles.

Recipe (documented in docs/bench.md): for each task, the oracle's commands (solution/solve.sh
split into its top-level commands by bash's grammar, `split.split_commands`: multi-line
quotes, here-documents and continued lines kept whole, comments dropped; a multi-line command
is the action as a ```bash block, which `parse_action` reads whole) make a clean demonstration
ending in `done`. The noisy set (``MIX``, eight copies per task) mixes: correct copies with a
distractor write after the work (`echo checking > /tmp/debug.log`), one of them with an
exploration command first (`find /app -maxdepth 2 -type f`), and three wrong chains (one
command broken: the answer written to the wrong file, a pipeline's last stage dropped, or a
path typo; the others as written), two of them with the distractor. Observations are short synthetic ones ("exit code: 0"):
the policy learns the shape of a solution, not any instance's data.
"""

from __future__ import annotations

import random
import re

from ..tasks import Task
from ..trainer.sft import Demo
from ..tasks.split import split_commands

EXPLORE = "find /app -maxdepth 2 -type f"  # a look around: reads nothing the work needs
DISTRACT = "echo checking > /tmp/debug.log"  # a stray write nothing inspects
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
    """A broken copy of ``cmd`` (never ``cmd`` itself)."""
    if ">" in cmd and rng.random() < 0.5:
        out = re.sub(r">\s*(\S+)\s*$", "> /tmp/out.txt", cmd)  # the answer in the wrong place
        if out != cmd:
            return out
    if "|" in cmd:
        return cmd.rsplit("|", 1)[0].rstrip()  # the last stage of the pipeline dropped
    if "/app" in cmd:
        return cmd.replace("/app", "/ap", 1)  # a typo in the path
    # a typo in the first path: its last character dropped
    return re.sub(r"(/[\w.-]*[\w.-])[\w.-]", r"\1", cmd, count=1) if "/" in cmd else cmd + "x"


def clean_demos(task: Task) -> list[Demo]:
    cmds = oracle_commands(task)
    return [Demo(task.instruction, [(c, OK) for c in cmds] + [("done", "")])]


# The noisy mix, per task, as (exploration first, wrong chain, distractor after). Nearly every
# copy ends with a stray write that nothing inspects, so a solved episode usually holds steps
# of different credit (the chain's own steps tie: each feeds the next); one copy looks around
# first (a small policy loses the task after a long generic opening, so only one); three wrong
# chains (one command broken, the others run as written) fail.
MIX = [(False, False, True), (False, False, True), (False, False, True), (False, False, True),
       (True, False, True), (False, True, True), (False, True, True), (False, True, False)]


def noisy_demos(task: Task, rng: random.Random, copies: int = len(MIX)) -> list[Demo]:
    cmds = _commands(task)
    demos = []
    for k in range(copies):
        explore, wrong, distract = MIX[k % len(MIX)]
        turns = [(c, OK) for c in cmds]
        if wrong:
            i = rng.randrange(len(turns))
            turns[i] = (wrong_variant(turns[i][0], rng), OK)
        if explore:
            turns = [(EXPLORE, "exit code: 0\nstdout:\n...")] + turns
        if distract:
            turns = turns + [(DISTRACT, OK)]
        turns = [(_action(c), obs) for c, obs in turns]
        demos.append(Demo(task.instruction, turns + [("done", "")]))
    return demos
