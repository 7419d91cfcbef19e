"""What GiGPO and AdaStep call "the same state": the anchor key of each step.

* ``state`` (default): the terminal's real state before the step, which the sandbox knows: the
  shell's working directory and, for every task path written or deleted by an earlier step, its
  last content hash (or that it is gone). In a terminal the last output says little:
  ``echo 42 > answer`` and ``rm -rf /app`` both print nothing and exit 0, but leave different
  states. Every trajectory of a group starts from the same instance, so step 0 shares one key.
* ``observation``: the previous observation's text (the GiGPO paper's key).
* ``history``: the instruction and every action and observation so far.
"""

from __future__ import annotations

import hashlib
import json

from ..records import Trajectory

ANCHORS = ("state", "observation", "history")


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:32]


def state_keys(traj: Trajectory) -> list[str]:
    files: dict[str, str] = {}
    cwd: str | None = None
    keys = []
    for step in traj.steps:
        keys.append("state:" + _digest([cwd, files]))
        rec = step.command
        if rec is None:  # an invalid action or `done` changes nothing
            continue
        for f in rec.files:
            files[f.path] = "deleted" if f.kind == "missing" else f"{f.kind}:{f.sha256}"
        for p in rec.accesses.deleted if rec.accesses else ():
            files[p] = "deleted"
        cwd = rec.cwd if rec.cwd is not None else cwd
    return keys


def history_keys(traj: Trajectory) -> list[str]:
    parts: list[object] = [traj.instruction]
    keys = []
    for step in traj.steps:
        keys.append("history:" + _digest(parts))
        parts.append([step.action, step.observation])
    return keys


def anchor_keys(traj: Trajectory, anchor: str) -> list[str]:
    """One key per step of ``traj``."""
    if anchor == "state":
        return state_keys(traj)
    if anchor == "history":
        return history_keys(traj)
    if anchor == "observation":
        return [s.anchor_obs for s in traj.steps]
    raise ValueError(f"anchor must be one of {', '.join(ANCHORS)}, not {anchor!r}")
