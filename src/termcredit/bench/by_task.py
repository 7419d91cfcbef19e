"""Each algorithm against GRPO task by task (summary.json ``comparisons.by_task``; the
report's "Against grpo, task by task" section): a tier's mean can hide a task where credit
wins and one where it loses (issue #34's horizon tier: +0.17 on one task, −0.30 on another).
The same two-stage paired bootstrap as the report's other comparisons, on one task's slots."""

from __future__ import annotations

from typing import Any

from .stats import FLOOR, PairedDiff, Run, pair_many, paired_bootstrap


def task_diffs(runs: dict[str, dict[int, Run]], floor: str = FLOOR,
               n_boot: int = 10_000) -> dict[str, dict[str, dict[str, Any]]]:
    """``{task: {algo: PairedDiff.as_dict()}}`` of algo − ``floor`` final success on that
    task's slots, paired per seed; empty without ``floor``'s final evaluations."""
    if floor not in runs:
        return {}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    tasks = sorted({str(e["task"]) for r in runs[floor].values() if r.final for e in r.final})
    for task in tasks:
        for algo, seeds in runs.items():
            if algo == floor:
                continue
            xs, ys = [], []
            for s, run in seeds.items():
                base = runs[floor].get(s)
                if run.final and base is not None and base.final:
                    x, y = pair_many([e for e in run.final if e["task"] == task],
                                     [e for e in base.final if e["task"] == task])
                    xs.append(x)
                    ys.append(y)
            if any(len(x) for x in xs):
                out.setdefault(task, {})[algo] = paired_bootstrap(xs, ys, n_boot=n_boot).as_dict()
    return out


def by_task_lines(diffs: dict[str, dict[str, dict[str, Any]]], floor: str = FLOOR) -> list[str]:
    """Markdown: one row an algorithm, one column a task (empty when there is nothing)."""
    if not diffs:
        return []
    tasks = sorted(diffs)
    algos = list(dict.fromkeys(a for t in tasks for a in diffs[t]))
    rows = []
    for a in algos:
        cells = []
        for t in tasks:
            d = diffs[t].get(a)
            cells.append(PairedDiff(**{k: d[k] for k in ("estimate", "lo", "hi", "se", "seeds",
                                                         "units", "level")}).text()
                         if d else "—")
        rows.append(f"| {a} | " + " | ".join(cells) + " |")
    return (["", f"## Against {floor}, task by task", "",
             f"Final success, algorithm − {floor} on each task's held-out slots, paired per "
             "seed [95% CI, the same two-stage bootstrap].", "",
             "| algorithm | " + " | ".join(tasks) + " |",
             "|---|" + "---|" * len(tasks)] + rows)
