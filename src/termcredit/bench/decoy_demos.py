"""Warm-start demonstrations with decoys, for the horizon tier (issue #34).

The credit tier's noisy demonstrations (demos.py) fail by a garbled command; a policy trained
on them fails the same way, and no per-step credit can tell a garbled token from a right one
(docs/credit-tier.md). Here a failure is a *choice*: a task declares, in its task.toml, the
commands a demonstration may add to the oracle's, each before the oracle's command ``before``
(0-based)::

    [metadata.demos]
    harmless = [{before = 1, command = "ls inbox"}, ...]          # look-around: changes nothing
    breaking = [{before = 4, command = "rm -f /tmp/batch.csv"}, ...]  # breaks a later step

and the mix (``MIX``, eight copies per task) is four solved copies with one or two harmless
look-arounds and four failed ones with one breaking decoy (two of them with a look-around
too). Every command is the oracle's or a declared one, written out whole, so the start policy
learns well-formed commands and where it may go wrong: at a branch point it follows the
demonstrations' mix of the right command, a look-around and a decoy. Harmless commands rotate
over the declared list, breaking ones likewise, so each appears. Observations are synthetic
as in demos.py ("exit code: 0"; a look-around's output elided).
"""

from __future__ import annotations

from ..tasks import Task
from ..tasks.demos import Insert, declared, has_decoys, inserts
from ..trainer.sft import Demo
from .demos import OK, _action, _commands

__all__ = ["LOOKED", "MIX", "declared", "decoy_demos", "has_decoys"]

LOOKED = "exit code: 0\nstdout:\n..."

# per copy: (harmless look-arounds, one breaking decoy?)
MIX = [(1, False), (1, False), (2, False), (1, False), (0, True), (1, True), (0, True), (1, True)]


def decoy_demos(task: Task) -> list[Demo]:
    """The ``MIX`` of one task (see the module doc); needs ``has_decoys(task)``."""
    oracle = _commands(task)
    harmless, breaking = inserts(task, "harmless"), inserts(task, "breaking")
    if not harmless or not breaking:
        raise ValueError(f"{task.path}/task.toml: [metadata.demos] needs both harmless and "
                         "breaking commands")
    demos, h, b = [], 0, 0
    for n_harmless, broken in MIX:
        extra: list[tuple[Insert, str]] = []
        for _ in range(n_harmless):
            extra.append((harmless[h % len(harmless)], LOOKED))
            h += 1
        if broken:
            extra.append((breaking[b % len(breaking)], OK))
            b += 1
        demos.append(Demo(task.instruction, _turns(oracle, extra) + [("done", "")]))
    return demos


def _turns(oracle: list[str], extra: list[tuple[Insert, str]]) -> list[tuple[str, str]]:
    """The oracle's commands with each extra command before its ``before``; extras that go
    before the same command keep their order."""
    turns: list[tuple[str, str]] = []
    for i in range(len(oracle) + 1):
        turns += [(_action(ins.command), obs) for ins, obs in extra if ins.before == i]
        if i < len(oracle):
            turns.append((_action(oracle[i]), OK))
    return turns

