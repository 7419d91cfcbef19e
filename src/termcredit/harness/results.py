"""What a `termcredit run` has done so far: ``OUT/result.json`` (rewritten after every trial),
the trials it skips, and the closing table."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..records import TrialResult, to_dict
from ..tasks import Task
from ..tracer.choice import tracer_unsupported


class Results:
    def __init__(self, out: Path, run_id: str, agent: str, total: int):
        self.out, self.run_id, self.agent, self.total = out, run_id, agent, total
        self.trials: list[TrialResult] = []
        self.started = datetime.now().isoformat(timespec="seconds")
        self.resumed: list[str] = []  # when this run was resumed (its `started` is the first's)
        self.skipped: list[dict[str, Any]] = []  # {"task", "attempt", "reason"}: not run

    def add(self, r: TrialResult, write: bool = True) -> None:
        self.trials.append(r)
        if write:
            self.write(complete=False)

    def summary(self, complete: bool) -> dict[str, Any]:
        rewards = [t.reward for t in self.trials]
        return {
            "run_id": self.run_id, "agent": self.agent, "complete": complete,
            "started": self.started, "finished": datetime.now().isoformat(timespec="seconds"),
            "n_trials": len(self.trials), "n_planned": self.total,
            "n_skipped": len(self.skipped), "skipped": self.skipped,
            "n_errors": sum(t.error is not None for t in self.trials),
            "mean_reward": sum(rewards) / len(rewards) if rewards else 0.0,
            "trials": [to_dict(t) for t in sorted(self.trials, key=lambda t: t.trial_dir)],
            **({"resumed": self.resumed} if self.resumed else {}),
        }

    def write(self, complete: bool) -> dict[str, Any]:
        data = self.summary(complete)
        tmp = self.out / "result.json.tmp"
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.out / "result.json")
        return data


def skip_unsupported(jobs: list[tuple[Task, int]], results: Results,
                      console: Console, tracer: str = "strace") -> list[tuple[Task, int]]:
    """The jobs whose task asks for nothing termcredit (with ``tracer`` tracing its
    sandboxes) lacks; the others are recorded as skipped, with one line per task on the
    console."""
    todo, told = [], set()
    for task, k in jobs:
        missing = task.unsupported + tracer_unsupported(task.metadata, tracer)
        if not missing:
            todo.append((task, k))
            continue
        reason = "; ".join(missing)
        results.skipped.append({"task": task.name, "attempt": k, "reason": reason})
        if task.name not in told:
            told.add(task.name)
            console.print(Text.assemble((f"skipped {task.name}: ", "yellow"), reason))
    if len(todo) < len(jobs):
        results.write(complete=False)
    return todo


def print_summary(console: Console, summary: dict[str, Any], out: Path) -> None:
    table = Table(title=Text(f"termcredit run → {out}"))
    for col in ("task", "trials", "mean reward", "errors"):
        table.add_column(col)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for t in summary["trials"]:
        by_task.setdefault(t["task"], []).append(t)
    for name, ts in by_task.items():
        table.add_row(Text(name), str(len(ts)), f"{sum(t['reward'] for t in ts) / len(ts):.3f}",
                      str(sum(t["error"] is not None for t in ts)))
    console.print(table)
    console.print(f"mean reward {summary['mean_reward']:.3f} over {summary['n_trials']} trials")
