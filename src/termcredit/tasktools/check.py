"""`termcredit tasks check`: does each task work as a task?

For every task folder: it loads (loader errors are reported per task, the others go on), its
image builds (instances 0 and 1 for parametrised tasks; the table says which base image its
FROM became), the known-good solution scores 1.0 -- the oracle (``solution/solve.sh``, else
``solution/commands.txt`` replayed), or with ``--solution replay:FILE`` that replay, for a
task that has no oracle -- the ``nop`` agent scores 0.0, and the verifier of the oracle's trial inspected at
least one file the agent could have changed (the cleaned ``verifier.resources`` DepGPO walks
back from; empty means the tests check nothing the trace can see). A few static checks ride
along: a parametrised task must use ``TC_INSTANCE`` in its Dockerfile, and its oracle must not
read it (an oracle computes the answer from the data, as an agent must).

The oracle's verifier run must not be *suspect* either (``termcredit.tasks.audit``: the
verifier ran or loaded toolchain files the oracle made). When it is, either the oracle changes
what it should not, or the task's work is to change those files (a package to fix, a tool to
install): the check fails and prints the ``[verifier] agent_may_modify = [...]`` line that
declares the latter (``may_modify_proposal``), to paste into task.toml after a look at it.

Trials go through :func:`termcredit.harness.run.run` (one run per agent and instance, trials
concurrent inside it), so a check runs exactly what ``termcredit run`` runs; the run folders
stay in the output folder for a look at what failed. The outcome of each trial comes from the
run's summary (reward, error, suspect flag) and the verifier's small ``resources.json``; the
trial's trajectory is read only for a suspect trial, to list the files that made it suspect.
"""

from __future__ import annotations

import io
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

import tomli_w
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..show import shown
from ..tasks.audit import propose_may_modify
from ..tasks.model import Task, TaskError, load_task
from ..trialdir import TrialPaths, load_trajectory
from .task_scan import missing_copies, task_warnings

DEFAULT_INSTANCES = (0, 1)


@dataclass
class TaskCheck:
    """What `check` found for one task folder."""

    path: Path
    name: str
    task: Task | None = None
    problems: list[str] = field(default_factory=list)
    build: str = "-"  # "built", "cached", "failed" or "-" (not attempted)
    bases: list[str] = field(default_factory=list)  # the termcredit bases its FROMs became
    build_s: float = 0.0
    oracle: dict[int, float] = field(default_factory=dict)  # instance -> reward
    nop: dict[int, float] = field(default_factory=dict)
    resources: dict[int, int] = field(default_factory=dict)  # instance -> cleaned count
    suspect: dict[int, list[dict[str, str]]] = field(default_factory=dict)  # oracle's audit hits
    trial_s: float = 0.0
    warnings: list[str] = field(default_factory=list)  # task_scan: shown, the check still passes

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def seconds(self) -> float:
        return self.build_s + self.trial_s

    @property
    def instances(self) -> tuple[int, ...]:
        return DEFAULT_INSTANCES if self.task is not None and self.task.parametrized else (0,)


def discover(paths: Iterable[str | Path]) -> list[tuple[Path, Task | TaskError]]:
    """Task folders under ``paths``, each loaded or with the error that stopped it.

    A path is a task folder (it has a task.toml) or a folder of task folders; in the latter,
    a subfolder with any of task.toml, instruction.md, environment/ or tests/ counts as a
    task, so a task that lost its task.toml is reported rather than skipped.
    """
    found: list[tuple[Path, Task | TaskError]] = []
    markers = ("task.toml", "instruction.md", "environment", "tests")
    for p in map(Path, paths):
        if p.is_dir() and any((p / m).exists() for m in markers):
            folders = [p]
        elif p.is_dir():
            folders = sorted(d for d in p.iterdir()
                             if d.is_dir() and any((d / m).exists() for m in markers))
            if not folders:
                found.append((p, TaskError(p, "neither a task folder nor a folder of tasks "
                                              "(no task.toml)")))
        else:
            found.append((p, TaskError(p, "task folder not found")))
            continue
        for folder in folders:
            try:
                found.append((folder, load_task(folder)))
            except TaskError as exc:
                found.append((folder, exc))
    return found


def lint(task: Task, solution: str | None = None) -> list[str]:
    """Static problems, found without Docker. ``solution``: ``replay:FILE`` when the check
    replays FILE instead of the oracle."""
    problems = []
    dockerfile = task.environment_dir / "Dockerfile"
    docker_text = dockerfile.read_text(errors="replace") if dockerfile.is_file() else ""
    solve = task.solution_dir / "solve.sh"
    oracle = solve if task.has_solution else task.solution_commands
    if oracle is None and solution is None:
        problems.append(f"{solve}: missing, and no solution/commands.txt (the oracle runs one "
                        "of them; or check with --solution replay:FILE, one known-good command "
                        "per line)")
    if task.parametrized:
        if "TC_INSTANCE" not in docker_text:
            problems.append(f"{dockerfile}: [metadata] parametrized = true, but the Dockerfile "
                            "never uses TC_INSTANCE (declare ARG TC_INSTANCE=0 and seed the "
                            "data with it)")
        code = [ln for ln in (oracle.read_text(errors="replace").splitlines()
                              if oracle is not None else []) if not ln.lstrip().startswith("#")]
        if any("TC_INSTANCE" in ln for ln in code):
            problems.append(f"{oracle}: reads TC_INSTANCE; the oracle must compute the answer "
                            "from the data (the agent never gets the seed)")
    elif "TC_INSTANCE" in docker_text:
        problems.append(f"{dockerfile}: uses TC_INSTANCE, but task.toml lacks "
                        "[metadata] parametrized = true (every instance would be instance 0)")
    return problems


def oracle_steps(task_dir: Path) -> int | None:
    """Non-empty, non-comment lines of solution/solve.sh, else the steps of the replay
    solution/commands.txt (its non-empty lines); None when there is neither."""
    solve = Path(task_dir) / "solution" / "solve.sh"
    commands = Path(task_dir) / "solution" / "commands.txt"
    if solve.is_file():
        lines = solve.read_text(errors="replace").splitlines()
        return sum(1 for ln in lines if ln.strip() and not ln.strip().startswith("#"))
    if commands.is_file():
        return sum(1 for ln in commands.read_text(errors="replace").splitlines() if ln.strip())
    return None


def solution_agent(solution: str | None) -> str:
    """The agent that plays the known-good solution: ``oracle`` or ``replay:FILE``."""
    if solution in (None, "oracle"):
        return "oracle"
    if solution.startswith("replay:") and solution[7:]:
        from ..harness.agents import make_agent_factory

        make_agent_factory(solution)  # a missing or non-UTF-8 file fails now, named
        return solution
    raise ValueError(f"--solution {solution!r}: use oracle (the default) or replay:FILE")


def _build_all(client: Any, checks: list[TaskCheck], base: str, image_map: Any,
               concurrency: int, force: bool) -> None:
    from ..sandbox import ImageBuildError
    from ..tasks.build import build_image

    def one(check: TaskCheck, instance: int) -> tuple[TaskCheck, float, bool, str | None]:
        built: list[str] = []
        t0 = time.monotonic()
        try:
            build_image(client, check.task, base_ref=base, instance=instance,
                        image_map=image_map, force=force, log=built.append)
            error = None
        except ImageBuildError as exc:
            error = str(exc)
        return check, time.monotonic() - t0, bool(built), error

    jobs = [(c, i) for c in checks if c.task is not None for i in c.instances]
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="tc-build") as ex:
        for check, seconds, built, error in ex.map(lambda j: one(*j), jobs):
            check.build_s += seconds
            if error is not None:
                check.build = "failed"
                check.problems.append(f"image build failed: {error}")
            elif check.build != "failed":
                check.build = "built" if built or check.build == "built" else "cached"


def _ensure_bases(client: Any, checks: list[TaskCheck], base: str, image_map: Any,
                  log: Any) -> None:
    """Which base each task's FROM lines become (the table's base column), and those bases
    built before the task images, so a first-use build shows in the log, not inside one
    task's build time."""
    from ..sandbox import ImageBuildError, ensure_base_image
    from ..sandbox.images import map_dockerfile

    for check in checks:
        try:
            _, froms = map_dockerfile(check.task.environment_dir, image_map, base)
        except OSError:
            continue  # the build reports the missing Dockerfile
        check.bases = list(dict.fromkeys(f.base for f in froms if f.base))
    for name in dict.fromkeys(b for c in checks for b in c.bases):
        try:
            ensure_base_image(client, name=name, log=log)
        except ImageBuildError as exc:  # each task on it reports the failure as its build's
            log(f"base {name}: {exc}")


def may_modify_proposal(task: Task | None, hits: Iterable[dict[str, str]]) -> str:
    """The ``agent_may_modify = [...]`` line for task.toml's [verifier] table that exempts
    ``hits`` (the oracle's audit hits), keeping the globs the task already declares."""
    have = list(task.agent_may_modify) if task is not None else []
    globs = have + [g for g in propose_may_modify(hits) if g not in have]
    items = (tomli_w.dumps({"g": g}).removeprefix("g = ").rstrip("\n") for g in globs)
    return "agent_may_modify = [" + ", ".join(items) + "]"  # one line, to paste


def _suspect_files(trial_dir: Path) -> list[dict[str, str]]:
    """The audit hits of a trial the run flagged suspect, from its trajectory's verifier report
    (a suspect flag without listed files still counts: tampering alone makes a trial suspect)."""
    paths = TrialPaths(trial_dir)
    traj = load_trajectory(paths.root) if paths.is_trial() else None
    files = traj.verifier.suspect_files if traj is not None and traj.verifier else []
    hits = [{"path": str(f.get("path", "")), "reason": str(f.get("reason", ""))}
            for f in files if isinstance(f, dict)]
    return hits or [{"path": "", "reason": "suspect, no files listed"}]


def _trial_outcome(trial: dict[str, Any],
                   ) -> tuple[float, str | None, list[str] | None, list[dict[str, str]]]:
    """(reward, error, cleaned verifier resources, audit hits) of one trial of the summary
    ``run()`` returned. The resources come from ``verifier/resources.json`` (None when the
    verifier did not run); the hits are read back only when the summary says suspect."""
    paths = TrialPaths(trial["trial_dir"])
    resources = None
    if paths.resources.is_file():
        resources = json.loads(paths.resources.read_text()).get("cleaned")
    suspect = _suspect_files(paths.root) if trial.get("suspect") is True else []
    return float(trial["reward"]), trial.get("error"), resources, suspect


def check_tasks(paths: Iterable[str | Path], *, concurrency: int = 2, out: Path | None = None,
                image_map: str | None = None, force_build: bool = False,
                console: Console | None = None, verbose: bool = False,
                solution: str | None = None) -> list[TaskCheck]:
    """Check every task under ``paths``; returns one :class:`TaskCheck` per task folder.
    ``solution``: ``replay:FILE`` replays FILE in every task instead of its oracle."""
    from ..depgpo.trial_hook import default_hooks
    from ..harness.run import RunConfig, run
    from ..sandbox import ImageMap, docker_client, ensure_base_image

    solver = solution_agent(solution)
    label = "oracle" if solver == "oracle" else "replay"  # run folders: oracle-0, replay-0
    console = console or Console(stderr=True, soft_wrap=True)
    out = Path(out) if out else Path("runs") / f"check-{datetime.now():%Y%m%d-%H%M%S}"
    checks: list[TaskCheck] = []
    names: dict[str, Path] = {}
    for folder, loaded in discover(paths):
        if isinstance(loaded, TaskError):
            checks.append(TaskCheck(path=folder, name=folder.name, problems=[str(loaded)]))
            continue
        check = TaskCheck(path=folder, name=loaded.name, task=loaded,
                          problems=lint(loaded, None if solver == "oracle" else solver),
                          warnings=task_warnings(loaded))
        missing = missing_copies(loaded.environment_dir)
        if missing:  # said here, rather than as docker's bare message from a build
            check.problems += missing
            check.task = None
        if loaded.name in names:  # run folders and image tags are keyed by name
            check.problems.append(f"duplicate task name {loaded.name!r} (also {names[loaded.name]})")
            check.task = None
        names.setdefault(loaded.name, folder)
        checks.append(check)

    runnable = [c for c in checks if c.task is not None]
    if runnable:
        client = docker_client()
        log = lambda m: console.print(f"[dim]{escape(m)}[/]")  # noqa: E731
        base = ensure_base_image(client, log=log)
        imap = ImageMap.load(image_map)
        _ensure_bases(client, runnable, base, imap, log)
        t0 = time.monotonic()
        n_images = sum(len(c.instances) for c in runnable)
        console.print(f"[bold]building[/] {n_images} image(s) of {len(runnable)} task(s), "
                      f"{concurrency} at a time")
        _build_all(client, runnable, base, imap, concurrency, force_build)
        console.print(f"[dim]images ready in {time.monotonic() - t0:.1f}s[/]")

        quiet = Console(file=io.StringIO(), soft_wrap=True)
        by_name = {c.name: c for c in runnable}
        for instance in sorted({i for c in runnable for i in c.instances}):
            for agent in (solver, "nop"):
                todo = [c for c in runnable if instance in c.instances and c.build != "failed"
                        and (agent != "oracle" or c.task.has_solution
                             or c.task.solution_commands is not None)]
                if not todo:
                    continue
                t0 = time.monotonic()
                folder = out / f"{label if agent == solver else agent}-{instance}"
                cfg = RunConfig(tasks=[c.task for c in todo], agent=agent,
                                concurrency=concurrency, out=folder,
                                image_map=image_map, instance=instance,
                                hooks=default_hooks())
                summary = run(cfg, console if verbose else quiet)
                for trial in summary["trials"]:
                    check = by_name[trial["task"]]
                    check.trial_s += float(trial.get("duration_s") or 0.0)
                    reward, error, resources, suspect = _trial_outcome(trial)
                    where = f"{agent} (instance {instance}, {trial['trial_dir']})"
                    if agent == solver:
                        check.oracle[instance] = reward
                        check.resources[instance] = len(resources or [])
                        if reward != 1.0:
                            check.problems.append(f"{where}: reward {reward:g}, expected 1"
                                                  + (f" — {error}" if error else ""))
                        elif error:
                            check.problems.append(f"{where}: {error}")
                        if not resources:
                            check.problems.append(
                                f"{where}: the verifier inspected no file the agent could "
                                "change (cleaned verifier resources are empty)")
                        if suspect:
                            check.suspect[instance] = suspect
                            files = ", ".join(f"{h['path']} ({h['reason']})" for h in suspect)
                            check.problems.append(
                                f"{where}: the reward is suspect: the verifier ran or loaded "
                                f"toolchain files the {label} made: {files}. If changing them "
                                "is the task's work, declare it in the [verifier] table of "
                                f"{check.path / 'task.toml'}:\n    "
                                + may_modify_proposal(check.task, suspect))
                    else:
                        check.nop[instance] = reward
                        if reward != 0.0:
                            check.problems.append(f"{where}: reward {reward:g}, expected 0 "
                                                  "(the initial state already passes the tests)")
                        elif error:
                            check.problems.append(f"{where}: {error}")
                console.print("[dim]" + escape(
                    f"{agent} on instance {instance}: {len(todo)} task(s) in "
                    f"{time.monotonic() - t0:.1f}s → {folder}") + "[/]")
    return checks


def _rewards(values: dict[int, float], want: float, instances: tuple[int, ...]) -> str:
    if not values:
        return "-"
    cells = []
    for i in instances:
        if i in values:
            color = "green" if values[i] == want else "red"
            cells.append(f"[{color}]{values[i]:g}[/]")
        else:
            cells.append("-")
    return " ".join(cells)


def render(checks: list[TaskCheck], console: Console, *, title: str = "termcredit tasks check",
           elapsed: float | None = None, solution: str = "oracle") -> None:
    """The table; ``solution``: the known-good column's header (oracle, or replay)."""
    from ..sandbox import BASES

    table = Table(title=title)
    for col in ("task", "base", "build", solution, "nop", "resources", "time"):
        table.add_column(col, justify="right" if col in ("resources", "time") else "left",
                         no_wrap=col == "base")
    for c in checks:
        build = {"failed": "[red]failed[/]", "built": "[green]built[/]",
                 "cached": "[green]cached[/]"}.get(c.build, "-")
        res = " ".join(str(c.resources[i]) if i in c.resources else "-" for i in c.instances)
        name = f"[green]{escape(c.name)}[/]" if c.ok else f"[red]{escape(c.name)}[/]"
        bases = " + ".join(f"{b} ({BASES[b].python})" for b in c.bases) or "-"
        table.add_row(name, bases, build, _rewards(c.oracle, 1.0, c.instances),
                      _rewards(c.nop, 0.0, c.instances), res if c.resources else "-",
                      f"{c.seconds:.1f}s")
    console.print(table)
    for c in checks:
        for problem in c.problems:  # problems quote build output: text, control codes shown
            console.print(Text("✗ ", style="red") + shown(c.name, "red") + Text(": ", style="red")
                          + shown(problem),
                          soft_wrap=True)
        for warning in c.warnings:
            console.print(Text("⚠ ", style="yellow") + shown(c.name, "yellow")
                          + Text(": ", style="yellow") + shown(warning), soft_wrap=True)
    n_ok = sum(c.ok for c in checks)
    n_warn = sum(len(c.warnings) for c in checks)
    tail = f" in {elapsed:.0f}s" if elapsed is not None else ""
    color = "green" if n_ok == len(checks) else "red"
    console.print(f"[{color}]{n_ok}/{len(checks)} task(s) passed{tail}[/] "
                  + (f"[yellow]with {n_warn} warning(s)[/] " if n_warn else "")
                  + "(parametrised tasks: instances 0 and 1, in that order)", soft_wrap=True)
