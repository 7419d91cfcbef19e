"""`termcredit tasks list|check|new|import`: thin argparse layer over the task tooling.

The main CLI adds the verb with ``add_tasks_parser(sub)`` and handles its errors.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..show import shown  # task names, paths, errors, notes: printed as text, never markup

console = Console(stderr=True, soft_wrap=True)  # errors carry paths: never wrap them


def _out() -> Console:
    """stdout for tables; wide enough for them when it is a pipe or a file."""
    out = Console()
    return out if out.is_terminal else Console(width=max(out.width, 120))


def _cmd_list(args: argparse.Namespace) -> int:
    from .check import discover, oracle_steps
    from ..tasks.model import TaskError

    table = Table(title="termcredit tasks")
    for col in ("name", "category", "difficulty", "parametrized", "oracle steps"):
        table.add_column(col, justify="right" if col == "oracle steps" else "left")
    errors = []
    n = 0
    for folder, task in discover(args.paths or ["tasks"]):
        if isinstance(task, TaskError):
            errors.append(str(task))
            table.add_row(shown(folder.name, "red"), Text("does not load", style="red"),
                          "", "", "")
            continue
        n += 1
        meta = task.metadata
        steps = oracle_steps(task.path)
        table.add_row(shown(task.name), shown(meta.get("category", "-")),
                      shown(meta.get("difficulty", "-")),
                      "yes" if task.parametrized else "no", "-" if steps is None else str(steps))
    _out().print(table)
    for e in errors:
        console.print(Text("error:", style="red") + Text(" ") + shown(e))
    console.print(f"{n} task(s)" + (f", {len(errors)} that do not load" if errors else ""))
    return 1 if errors else 0


def _cmd_check(args: argparse.Namespace) -> int:
    from .check import check_tasks, render

    t0 = time.monotonic()
    checks = check_tasks(args.paths or ["tasks"], concurrency=args.concurrency,
                         out=Path(args.out) if args.out else None, image_map=args.image_map,
                         force_build=args.force_build, console=console, verbose=args.verbose,
                         solution=args.solution)
    render(checks, _out(), elapsed=time.monotonic() - t0,
           solution="oracle" if args.solution in (None, "oracle") else "replay")
    return 0 if checks and all(c.ok for c in checks) else 1


def _cmd_new(args: argparse.Namespace) -> int:
    from .scaffold import new_task

    root = new_task(args.name, args.dir, parametrized=args.parametrized)
    console.print(shown(f"created {root}/ — edit instruction.md, environment/, solution/solve.sh "
                        f"and tests/, then: termcredit tasks check {root}"))
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from .tb_dataset import import_dataset, is_dataset
    from .tb_import import import_tb1

    if is_dataset(Path(args.path)):
        return _import_dataset(args, import_dataset)
    report = import_tb1(args.path, args.out, force=args.force)
    for note in report.notes:
        console.print(Text("note:", style="yellow") + Text(" ") + shown(note))
    for warning in report.warnings:
        console.print(Text("warning:", style="bold yellow") + Text(" ") + shown(warning))
    console.print(shown(f"imported {args.path} → {report.path}/ — now: termcredit tasks check "
                        f"{report.path}"))
    return 0


def _import_dataset(args: argparse.Namespace, import_dataset) -> int:  # type: ignore[no-untyped-def]
    out = Path(args.out or "tasks")
    rows = import_dataset(args.path, out, force=args.force)
    table = Table(title=f"termcredit tasks import {args.path}")
    for col in ("folder", "task", "result", "warnings", "why skipped"):
        table.add_column(col, justify="right" if col == "warnings" else "left")
    for r in rows:
        table.add_row(shown(r.source.name), shown(r.name),
                      Text(r.status, style="green" if r.status == "imported" else "red"),
                      str(len(r.warnings)) if r.status == "imported" else "-", shown(r.why))
    _out().print(table)
    for r in rows:
        for warning in r.warnings:
            console.print(Text("warning: ", style="bold yellow") + shown(r.name, "yellow")
                          + Text(": ") + shown(warning))
    n = sum(r.status == "imported" for r in rows)
    console.print(shown(f"{n} imported, {len(rows) - n} skipped, "
                        f"{sum(len(r.warnings) for r in rows)} warning(s) → {out}/ — now: "
                        f"termcredit tasks check {out}"))
    return 0 if n == len(rows) else 1


def add_subverbs(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="tasks_verb", required=True, metavar="SUBVERB")

    ls = sub.add_parser("list", help="table of tasks: name, category, difficulty, ...",
                        description="List task folders with their metadata and the number of "
                        "oracle steps (non-empty, non-comment lines of solution/solve.sh, or "
                        "the lines of solution/commands.txt).")
    ls.add_argument("paths", nargs="*", metavar="PATH",
                    help="task folder or folder of tasks (default tasks/)")
    ls.set_defaults(func=_cmd_list)

    ck = sub.add_parser("check", help="build each task, oracle must score 1 (not suspect: the "
                        "agent_may_modify it needs is printed) and nop 0",
                        description="For each task: load it, build its image (instances 0 and 1 "
                        "for parametrised tasks; the table names the base image its FROM "
                        "became), run the oracle (solution/solve.sh, else solution/commands.txt "
                        "replayed; or --solution replay:FILE) (reward must be 1) and the nop "
                        "agent (reward must be 0), and require the verifier to inspect at least "
                        "one file. Exits 1 on any failure.")
    ck.add_argument("paths", nargs="*", metavar="PATH",
                    help="task folder or folder of tasks (default tasks/)")
    ck.add_argument("--concurrency", "-n", type=int, default=2,
                    help="image builds and trials at once (default 2)")
    ck.add_argument("--out", help="where the check's runs go (default runs/check-<stamp>)")
    ck.add_argument("--image-map", help="TOML file with an [image_map] table for FROM lines")
    ck.add_argument("--solution", metavar="oracle|replay:FILE",
                    help="the known-good solution that must score 1: oracle (default: "
                    "solution/solve.sh, else solution/commands.txt replayed) or replay:FILE "
                    "(one command per line, one step each; for tasks without an oracle)")
    ck.add_argument("--force-build", action="store_true", help="rebuild task images")
    ck.add_argument("--verbose", "-v", action="store_true", help="show every trial as it ends")
    ck.set_defaults(func=_cmd_check)

    nw = sub.add_parser("new", help="scaffold a working task folder",
                        description="Write DIR/NAME: a small working task with comments in "
                        "every file. It passes `termcredit tasks check` as generated.")
    nw.add_argument("name", metavar="NAME", help="lower-case letters, digits and dashes")
    nw.add_argument("--dir", default="tasks", help="parent folder (default tasks/)")
    nw.add_argument("--parametrized", action="store_true",
                    help="seed the data from TC_INSTANCE (a generator in environment/ and tests/)")
    nw.set_defaults(func=_cmd_new)

    im = sub.add_parser("import", help="convert a Terminal-Bench-1 task (or a folder of them) "
                        "to Harbor format",
                        description="Convert a TB1 task folder (task.yaml, Dockerfile, "
                        "run-tests.sh, solution.sh, tests/) into a Harbor-format task; test-time "
                        "downloads become the preinstalled pytest. A rewrite that may not do "
                        "what the authors' script did is printed as a warning and kept in "
                        "task.toml ([metadata] import_warnings), which `tasks check` repeats. "
                        "PATH may be a dataset folder (task folders inside): each is imported "
                        "into --out/<name> and a table says what was imported, with how many "
                        "warnings, and what was skipped and why. A folder named by a number "
                        "gets its dataset's name in front (evoeval/51 -> evoeval-51).")
    im.add_argument("path", metavar="PATH", help="the TB1 task folder, or a folder of them")
    im.add_argument("--out", help="the new task folder (default tasks/<name>); for a folder "
                    "of tasks, the folder to put them in (default tasks/)")
    im.add_argument("--force", action="store_true", help="replace --out if it exists")
    im.set_defaults(func=_cmd_import)


def add_tasks_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `tasks` with its sub-verbs to the main CLI's subparsers (sets ``func``)."""
    p = subparsers.add_parser("tasks", help="list, check, scaffold and import tasks",
                              description="Work with task folders: list, check, new, import.")
    add_subverbs(p)
    return p
