"""What GiGPO and AdaStep call "the same state": the anchor key of each step, and the
anchor groups (rows of a group that share a key) their step advantages compare within.

* ``state`` (default): the terminal's real state before the step, which the sandbox knows: the
  shell's working directory and, for every task path written or deleted by an earlier step, its
  last content hash (or that it is gone). In a terminal the last output says little:
  ``echo 42 > answer`` and ``rm -rf /app`` both print nothing and exit 0, but leave different
  states. Every trajectory of a group starts from the same instance, so step 0 shares one key.
* ``observation``: the previous observation's text (the GiGPO paper's key).
* ``history``: the instruction and every action and observation so far.
"""

from __future__ import annotations

import difflib
import hashlib
import json

from ..records import Trajectory
from .group import Group

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


def check_anchor(anchor: str, similarity: float | None) -> None:
    if anchor not in ANCHORS:
        raise ValueError(f"anchor must be one of {', '.join(ANCHORS)}, not {anchor!r}")
    if similarity is not None and anchor != "observation":
        raise ValueError("similarity grouping compares observation text: it needs "
                         f"anchor = 'observation', not {anchor!r}")


def anchor_counts(group: Group) -> dict[str, float]:
    """How many anchor groups each key gives on these rollouts (exact matching)."""
    return {f"anchor_groups/{a}": float(len({k for t in group for k in anchor_keys(t, a)}))
            for a in ANCHORS}


def anchor_groups(group: Group, similarity: float | None, anchor: str = "state",
                  ) -> dict[int, list[tuple[int, int]]]:
    """(traj, step) rows clustered by their anchor key: exact match, or for observations with
    `similarity` a greedy clustering on difflib ratio >= threshold (first member represents)."""
    clusters: list[tuple[str, list[tuple[int, int]]]] = []
    exact: dict[str, int] = {}
    for i, traj in enumerate(group):
        for t, key in enumerate(anchor_keys(traj, anchor)):
            if key in exact:
                clusters[exact[key]][1].append((i, t))
                continue
            hit = None
            if similarity is not None:
                hit = next((c for c, (rep, _) in enumerate(clusters)
                            if difflib.SequenceMatcher(None, rep, key).ratio() >= similarity), None)
            if hit is None:
                hit = len(clusters)
                clusters.append((key, []))
            exact[key] = hit
            clusters[hit][1].append((i, t))
    return {c: rows for c, (_, rows) in enumerate(clusters)}
