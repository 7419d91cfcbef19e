"""Loading a run for the viewer: its trial directories (found by their trajectory), one
:class:`TrialRow` per trial, the trials a run's summary lists without a trajectory, and a
training run's per-step metrics."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..jsonl import read_jsonl
from ..records import Trajectory
from ..trialdir import TRAJECTORY, TrialPaths, load_trajectory


@dataclass
class TrialRow:  # one line of the index; rel: the trial dir relative to the run dir
    rel: str
    dir: Path | None
    task: str
    label: str  # attempt-<k> / g<k>
    step: int | None  # training step, from step-N in the path
    reward: float | None = None
    n_steps: int | None = None
    termination: str = ""
    error: str | None = None
    traj: Trajectory | None = None
    page: str | None = None  # relative to OUT
    suspect: bool = False  # the verifier ran or loaded toolchain files the agent made
    tampered: bool = False  # tampering or integrity problems were recorded

    @property
    def paths(self) -> TrialPaths:
        assert self.dir is not None
        return TrialPaths(self.dir)


def natural(s: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def find_trial_dirs(run_dir: Path, skip: Path | None = None) -> list[Path]:
    """Every directory under run_dir holding a trajectory (not inside ``skip``, nor inside
    another trial dir: its verifier/ output is the task's, not a trial)."""
    found = []
    skip_r = skip.resolve() if skip else None
    for root, dirs, files in os.walk(run_dir):
        here = Path(root)
        dirs[:] = [] if TRAJECTORY in files else [
            d for d in dirs if not d.startswith(".") and d != "__pycache__"
            and (skip_r is None or (here / d).resolve() != skip_r)]
        if TRAJECTORY in files:
            found.append(here)
    return sorted(found, key=lambda p: natural(p.relative_to(run_dir).as_posix()))


def integrity(t: Trajectory) -> list[str]:
    """The episode's integrity problems, then each step's (prefixed with the step)."""
    out = list(t.integrity)
    for s in t.steps:
        out += [f"step {s.index}: {x}" for x in (s.command.integrity if s.command else [])
                if f"step {s.index}: {x}" not in out]
    return out


def _trial_error(paths: TrialPaths, result: Any, traj: Trajectory | None) -> str | None:
    if isinstance(result, dict) and result.get("error"):
        return str(result["error"])
    if traj is not None and traj.verifier is not None and traj.verifier.error:
        return traj.verifier.error
    if paths.error.is_file():
        lines = [ln for ln in paths.error.read_text(errors="replace").splitlines() if ln]
        return lines[-1] if lines else "error"
    return None


def load_trial(run_dir: Path, d: Path) -> TrialRow:
    rel = d.relative_to(run_dir).as_posix() if d != run_dir else "."
    m = re.search(r"(?:^|/)step-(\d+)(?:/|$)", rel)
    row = TrialRow(rel=rel, dir=d, task=d.parent.name, label=d.name,
                   step=int(m.group(1)) if m else None)
    try:
        traj = load_trajectory(d)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        row.error = f"unreadable {TRAJECTORY}: {exc}"
        return row
    result = read_json(row.paths.result)
    row.traj, row.task, row.n_steps = traj, traj.task, len(traj.steps)
    row.termination = traj.termination
    row.reward = traj.verifier.reward if traj.verifier else None
    if row.reward is None and isinstance(result, dict) and isinstance(result.get("reward"),
                                                                      (int, float)):
        row.reward = float(result["reward"])
    row.error = _trial_error(row.paths, result, traj)
    v = traj.verifier
    row.suspect = bool(v and (v.suspect or v.suspect_files)) or (
        isinstance(result, dict) and result.get("suspect") is True)
    row.tampered = bool(integrity(traj) or (v and v.tampering))
    return row


def summary_rows(run_dir: Path, result: Any, listed: list[TrialRow]) -> list[TrialRow]:
    """Rows for the trials a run's result.json lists that have no trajectory (an image that
    failed to build, a trial that crashed before its first step)."""
    seen = {r.dir.resolve() for r in listed if r.dir}
    rows = []
    for t in result.get("trials", []) if isinstance(result, dict) else []:
        td = Path(t.get("trial_dir") or "-")  # as written: relative to where `run` ran
        if td.name and any(p.resolve() in seen for p in (td, run_dir / td.parent.name / td.name)):
            continue  # already listed through its trajectory
        rows.append(TrialRow(rel=f"{t.get('task')}/{td.name}", dir=None, task=str(t.get("task")),
                             label=td.name, step=None, reward=t.get("reward"),
                             n_steps=t.get("n_steps"), error=t.get("error"),
                             suspect=t.get("suspect") is True,
                             tampered=bool(t.get("integrity"))))
    return rows


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """A training run's metrics.jsonl rows (a half-written or corrupt line is skipped: the
    viewer shows what can be read)."""
    path = run_dir / "metrics.jsonl"
    rows = read_jsonl(path, skip_bad=True) if path.is_file() else []
    return [r for r in rows if isinstance(r.get("step"), int)]
