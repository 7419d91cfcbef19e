"""`termcredit audit RUN_DIR`: the trials of a run whose reward should not be trusted.

A trial is listed when its verifier was *suspect* (the provenance audit found toolchain files
the verifier ran or loaded that an agent process made, see tasks/audit.py), or when tampering
was recorded: agent writes during verification, or integrity problems in the episode's trace.
Trial folders are found by their result or trajectory file (``trialdir.TrialPaths``) anywhere
under RUN_DIR (``termcredit run`` and training rollouts alike).

Every string shown comes from files an agent could influence (paths it chose, task names,
trace complaints), so each is printed as plain text, never as Rich markup, with control
characters made visible.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..trialdir import RESULT, TRAJECTORY, TrialPaths

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def plain(value: Any) -> str:
    """One line of text: control characters (ESC, CR, newlines, ...) shown as escapes."""
    s = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], s)


@dataclass
class AuditRow:
    """One trial of a run, as far as the audit is concerned."""

    trial_dir: str  # relative to the run directory
    task: str = "?"
    reward: float | None = None
    suspect: bool = False
    suspect_files: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    tampering: list[str] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable files

    @property
    def listed(self) -> bool:
        return bool(self.suspect or self.suspect_files or self.tampering or self.integrity
                    or self.problems)


def _load(path: Path, problems: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError, RecursionError) as exc:
        problems.append(f"{path.name} unreadable: {type(exc).__name__}")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path.name} is not a JSON object")
        return {}
    return data


def _strings(value: Any) -> list[str]:
    return [v if isinstance(v, str) else json.dumps(v) for v in value] if isinstance(
        value, list) else []


def _add(out: list[str], items: list[str]) -> None:
    out.extend(i for i in items if i not in out)


def read_trial(run_dir: Path, trial: Path) -> AuditRow:
    """The audit facts of one trial folder (its result and trajectory files)."""
    row = AuditRow(trial_dir=os.path.relpath(trial, run_dir))
    paths = TrialPaths(trial)
    res = _load(paths.result, row.problems)
    traj = _load(paths.trajectory, row.problems)
    ver = traj.get("verifier") if isinstance(traj.get("verifier"), dict) else {}
    task = traj.get("task", res.get("task"))
    row.task = task if isinstance(task, str) else "?"
    for reward in (res.get("reward"), ver.get("reward")):
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            row.reward = float(reward)
            break
    row.suspect = ver.get("suspect") is True or res.get("suspect") is True
    files = ver.get("suspect_files")
    for item in files if isinstance(files, list) else []:
        if isinstance(item, dict):
            row.suspect_files.append((str(item.get("path", "?")), str(item.get("reason", "?"))))
        else:
            row.suspect_files.append((str(item), "?"))
    _add(row.tampering, _strings(ver.get("tampering")))
    _add(row.integrity, _strings(traj.get("integrity")))
    _add(row.integrity, _strings(res.get("integrity")))
    steps = traj.get("steps") if isinstance(traj.get("steps"), list) else []
    for i, step in enumerate(steps):
        cmd = step.get("command") if isinstance(step, dict) else None
        if isinstance(cmd, dict):
            _add(row.integrity, [f"step {step.get('index', i)}: {s}"
                                 for s in _strings(cmd.get("integrity"))])
    return row


def find_trials(run_dir: Path) -> list[Path]:
    """Folders under ``run_dir`` holding a trial's trajectory file, or the result file of one
    trial (the run's own result file, with its "trials" list, is not one)."""
    found = []
    for root, dirs, files in os.walk(run_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        here = Path(root)
        if TRAJECTORY in files:
            found.append(here)
            dirs[:] = []  # its verifier/ and trace/ hold the task's files, not trials
        elif RESULT in files and here != run_dir:
            data = _load(TrialPaths(here).result, [])
            if "trials" not in data and ("reward" in data or "task" in data):
                found.append(here)
                dirs[:] = []
    return found


def audit_run(run_dir: str | Path) -> tuple[list[AuditRow], int]:
    """(listed trials, trials seen): the suspect, tampered or unreadable trials of a run."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    rows = [read_trial(run_dir, t) for t in find_trials(run_dir)]
    return [r for r in rows if r.listed], len(rows)


def render_audit(run_dir: str | Path, rows: list[AuditRow], seen: int, console: Console) -> None:
    if not rows:
        console.print(Text(f"no suspect trials in {plain(run_dir)} ({seen} trial(s) read)"))
        return
    table = Table(title=Text(f"termcredit audit: {plain(run_dir)}"), show_lines=True)
    for col in ("task", "trial dir", "reward", "suspect files", "tampering", "integrity"):
        table.add_column(col, overflow="fold")
    for r in rows:
        files = [f"{plain(p)}: {plain(why)}" for p, why in r.suspect_files]
        if r.suspect and not files:
            files = ["(suspect; no files listed)"]
        table.add_row(
            Text(plain(r.task)), Text(plain(r.trial_dir)),
            Text("–" if r.reward is None else f"{r.reward:g}"),
            Text("\n".join(files) or "–", style="red" if files else ""),
            Text("\n".join(plain(t) for t in r.tampering) or "–"),
            Text("\n".join(plain(t) for t in r.integrity + r.problems) or "–"),
        )
    console.print(table)
    n_sus = sum(1 for r in rows if r.suspect or r.suspect_files)
    console.print(Text(f"{len(rows)} of {seen} trial(s) listed: {n_sus} suspect, "
                       f"{len(rows) - n_sus} with tampering or integrity problems only"))


def _cmd_audit(args: argparse.Namespace) -> int:
    rows, seen = audit_run(args.run_dir)
    out = Console()
    render_audit(args.run_dir, rows, seen,
                 out if out.is_terminal else Console(width=max(out.width, 160)))
    return 0


def add_audit_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `audit` verb to the main CLI's subparsers (sets ``func``)."""
    p = subparsers.add_parser(
        "audit", help="list a run's trials with a suspect reward or recorded tampering",
        description="Read every trial under RUN_DIR (its result and trajectory files) and print a "
        "table of the trials whose verifier reward is suspect (it ran or loaded toolchain "
        "files an agent process made: the path and why each is toolchain), or that recorded "
        "tampering or integrity problems. Prints one line when there are none; exits 0 "
        "either way.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (termcredit run, train)")
    p.set_defaults(func=_cmd_audit)
    return p
