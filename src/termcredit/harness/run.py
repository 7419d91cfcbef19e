"""`termcredit run`: many trials, concurrently, into one predictable run directory.

Layout: ``OUT/config.toml``, ``OUT/result.json`` (rewritten after every finished trial, so a
crash keeps what finished), ``OUT/<task>/attempt-<k>/`` per trial, whose ``steps.jsonl`` holds
each step as soon as it finished and whose ``result.json`` is written last.

Resume (``RunConfig.resume``, ``termcredit run --resume OUT``): the run's settings come from
``OUT/config.toml``; a trial with a ``result.json`` is kept as it is; the folder of one without
(killed mid-way) is moved aside to ``attempt-<k>.killed-<n>`` (its finished steps stay there)
and the trial runs again. ``OUT/.run.lock`` (flock) keeps two processes out of one run folder.

A task that asks for a Harbor feature termcredit lacks (``Task.unsupported``) does not stop the
run: its trials are skipped, each listed under ``skipped`` in ``OUT/result.json`` with the
reason, and left out of the trial counts and the mean. ``RunConfig.network`` grants the user's
Docker network to tasks that permit one (network.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import signal
import time
import tomllib
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import tomli_w
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from ..records import TrialResult
from ..sandbox import ImageBuildError
from ..tasks import Task, load_task
from ..tracer.choice import DEFAULT_TRACER, check_choice, for_backend, resolve_tracer
from ..trialdir import load_result
from .agents import make_agent_factory
from .backend import BackendSettings
from .hooks import NO_HOOKS, Hooks
from .network import check_network, offline_warning
from .results import Results, print_summary, skip_unsupported
from .runner import RunnerSettings, TrialRunner


@dataclass
class RunConfig:
    tasks: list[Task]
    agent: str = "oracle"
    attempts: int = 1
    concurrency: int = 2
    out: Path | None = None
    command_timeout: float = 120.0
    image_map: str | None = None
    force_build: bool = False
    instance: int = 0  # instance seed of parametrised tasks (all attempts share it)
    extra: dict[str, Any] = field(default_factory=dict)
    resume: bool = False  # ``out`` is an earlier run: keep its finished trials, run the rest
    # the agent's own settings (``openai:MODEL``: base_url, max_turns, ...), [run.agent_options]
    agent_options: dict[str, Any] = field(default_factory=dict)
    backend: str = "local"  # local | ray (harness/backend.py)
    ray_address: str | None = None  # ray: the cluster (None: $RAY_ADDRESS, else the local one)
    registry: str | None = None  # ray: pull task images from here before building them
    network: str | None = None  # a Docker network granted to tasks that permit one (--network)
    tracer: str = DEFAULT_TRACER  # [sandbox] tracer: auto | ebpf | strace (tracer/choice.py)
    # passed to every trial's episode (harness/hooks.py); not a setting of the run's files
    hooks: Hooks = NO_HOOKS


# settings that decide what the trials are: a resumed run must keep them
_TRIAL_SETTINGS = ("agent", "attempts", "instance", "command_timeout")
_CONFIG_KEYS = {"run_id", "earlier_run_ids", "tasks", "concurrency", "image_map",
                "agent_options", "backend", "registry", "network", *_TRIAL_SETTINGS}


def default_out(name: str) -> Path:
    return Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-{name}"


def write_config(cfg: RunConfig, out: Path, run_id: str,
                 earlier_run_ids: list[str] | None = None) -> None:
    items = {
        "run_id": run_id, "agent": cfg.agent, "attempts": cfg.attempts,
        "concurrency": cfg.concurrency, "command_timeout": cfg.command_timeout,
        "instance": cfg.instance, "image_map": cfg.image_map,
        "tasks": [str(t.path) for t in cfg.tasks],
        "earlier_run_ids": earlier_run_ids or None,
        "agent_options": {k: v for k, v in cfg.agent_options.items() if v is not None} or None,
        **cfg.extra,
        "backend": cfg.backend if cfg.backend != "local" else None, "registry": cfg.registry,
        "network": cfg.network,
    }
    tables: dict[str, Any] = {"run": {k: v for k, v in items.items() if v is not None}}
    if cfg.tracer != DEFAULT_TRACER:  # auto: no table, as before the setting existed
        tables["sandbox"] = {"tracer": cfg.tracer}
    tmp = out / "config.toml.tmp"
    tmp.write_text(tomli_w.dumps(tables))
    tmp.replace(out / "config.toml")


def read_config(out: Path) -> dict[str, Any]:
    """The [run] table of ``out/config.toml``."""
    path = out / "config.toml"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing, not a termcredit run folder to resume")
    try:
        data = tomllib.loads(path.read_text())["run"]
        if not isinstance(data.get("tasks"), list) or not isinstance(data.get("agent"), str):
            raise ValueError("no tasks or no agent")
    except (tomllib.TOMLDecodeError, KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a termcredit run config ({exc})") from exc
    return data


def read_tracer(out: Path) -> str:
    """The [sandbox] tracer of ``out/config.toml`` (auto where the run set none)."""
    try:
        table = tomllib.loads((out / "config.toml").read_text()).get("sandbox", {})
    except (OSError, tomllib.TOMLDecodeError):
        return DEFAULT_TRACER
    value = table.get("tracer", DEFAULT_TRACER) if isinstance(table, dict) else DEFAULT_TRACER
    return check_choice(value, f"{out / 'config.toml'}: [sandbox] tracer")


def resume_config(out: Path, given: RunConfig | None = None) -> RunConfig:
    """The config to resume the run in ``out``, from its config.toml.

    ``given`` holds what the caller asked for (the command line): a trial setting (tasks, agent,
    attempts, instance, command timeout) left at its default takes the run's value, one given
    with another value is an error (the kept trials would not match the new ones); concurrency,
    image map, force_build, agent options given (a model server's new URL) and the backend
    given apply to the rest of the run (the backend left at local takes the run's: trials
    are the same on either; so does the tracer left at auto); the network given replaces the
    run's, else the run's is kept.
    """
    data = read_config(out)
    given = given or RunConfig(tasks=[])
    if given.out is not None and Path(given.out).resolve() != out.resolve():
        raise ValueError(f"--out {given.out} and --resume {out} name different folders")
    tasks = [load_task(p, lenient=True) for p in data["tasks"]]
    if given.tasks and [t.path for t in given.tasks] != [t.path for t in tasks]:
        raise ValueError(f"{out}: resuming runs its tasks ({', '.join(t.name for t in tasks)}); "
                         "--task names others (leave it out)")
    defaults = RunConfig(tasks=[])
    values: dict[str, Any] = {}
    for name in _TRIAL_SETTINGS:
        mine, theirs = getattr(given, name), data.get(name, getattr(defaults, name))
        if mine != getattr(defaults, name) and mine != theirs:
            raise ValueError(f"{out}: the run's {name} is {theirs!r}, not {mine!r} "
                             "(a resumed run keeps the settings of its trials)")
        values[name] = theirs
    concurrency = (given.concurrency if given.concurrency != defaults.concurrency
                   else int(data.get("concurrency", defaults.concurrency)))
    extra = {k: v for k, v in data.items() if k not in _CONFIG_KEYS}
    stored = data.get("agent_options")
    options = {**(stored if isinstance(stored, dict) else {}),
               **{k: v for k, v in given.agent_options.items() if v is not None}}
    backend = given.backend if given.backend != defaults.backend else \
        str(data.get("backend", defaults.backend))
    return RunConfig(tasks=tasks, concurrency=concurrency, out=out, agent_options=options,
                     image_map=given.image_map or data.get("image_map"),
                     force_build=given.force_build, extra={**extra, **given.extra}, resume=True,
                     backend=backend, ray_address=given.ray_address,
                     registry=given.registry or data.get("registry"),
                     network=given.network or data.get("network"), hooks=given.hooks,
                     tracer=given.tracer if given.tracer != DEFAULT_TRACER else read_tracer(out),
                     **values)


def _lock_run_dir(out: Path) -> int:
    """Hold ``out/.run.lock`` for this process's life (the kernel drops it when we die)."""
    fd = os.open(out / ".run.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ValueError(f"{out}: another termcredit run is writing this folder") from None
    return fd


def _finished(trial_dir: Path, task: Task, attempt: int) -> TrialResult | None:
    """The trial's result when it finished (its result.json is written last), else None."""
    try:
        r = load_result(trial_dir)
    except (OSError, ValueError, TypeError):
        return None
    if r.task != task.name or r.attempt != attempt:
        return None
    r.trial_dir = str(trial_dir)  # where it is now, should the run folder have moved
    return r


def _move_aside(trial_dir: Path) -> Path:
    """Keep a killed trial's folder (its steps.jsonl, traces) as attempt-<k>.killed-<n>."""
    n = 1
    while (dest := trial_dir.with_name(f"{trial_dir.name}.killed-{n}")).exists():
        n += 1
    trial_dir.rename(dest)
    return dest


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(cfg: RunConfig, console: Console | None = None) -> dict[str, Any]:
    console = console or Console(stderr=True, soft_wrap=True)
    # fail on a bad agent (or agent option) before any container
    agent_factory = make_agent_factory(cfg.agent, cfg.agent_options)
    tracer, note = resolve_tracer(cfg.tracer)  # ebpf where it cannot run: an error, now
    tracer, note = for_backend(cfg.tracer, tracer, note, cfg.backend)
    if note:
        console.print(Text(note, style="dim"))
    if cfg.network is not None:
        if cfg.backend != "local":
            raise ValueError("--network works with the local backend only")
        from ..sandbox import docker_client

        check_network(docker_client(), cfg.network)
    out = cfg.out or default_out(cfg.agent.split(":")[0])
    if cfg.resume and not (out / "config.toml").is_file():
        raise FileNotFoundError(f"{out / 'config.toml'}: missing, not a termcredit run to resume")
    out.mkdir(parents=True, exist_ok=True)
    lock = _lock_run_dir(out)
    try:
        return _run(cfg, out, console, agent_factory, tracer)
    finally:
        os.close(lock)


def _run(cfg: RunConfig, out: Path, console: Console, agent_factory: Any,
         tracer: str = "strace") -> dict[str, Any]:
    run_id = f"{out.name}-{secrets.token_hex(3)}"
    earlier: list[str] = []
    previous: dict[str, Any] = {}
    if cfg.resume:
        old = read_config(out)
        earlier = [*old.get("earlier_run_ids", []), old.get("run_id", "?")]
        try:
            previous = json.loads((out / "result.json").read_text())
        except (OSError, ValueError):
            previous = {}
    write_config(cfg, out, run_id, earlier)
    results = Results(out, run_id, cfg.agent, len(cfg.tasks) * cfg.attempts)
    jobs: list[tuple[Task, int]] = [(t, k) for t in cfg.tasks for k in range(cfg.attempts)]
    if cfg.resume:
        jobs = _resume_jobs(out, jobs, results, previous, console)
    jobs = skip_unsupported(jobs, results, console, tracer)
    warning = offline_warning([t for t, _ in jobs], cfg.network)
    if warning:
        console.print(Text(warning, style="yellow"))

    def dim(message: str) -> None:
        console.print(Text(message, style="dim"))

    runner = TrialRunner(RunnerSettings(
        BackendSettings(cfg.backend, cfg.ray_address, cfg.registry), cfg.concurrency,
        cfg.command_timeout, cfg.image_map, cfg.force_build, cfg.network, cfg.hooks, tracer),
        run_id,
        log=dim)
    old_handler = signal.signal(signal.SIGTERM, _sigterm)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)  # even if inherited as ignored
    complete = False
    try:
        try:
            stale = runner.gc()
        except Exception as exc:  # another run's cleanup under way: not a reason to stop this one
            stale = []
            dim(f"gc skipped ({type(exc).__name__}: {exc})")
        if stale:
            dim(f"gc: removed {len(stale)} container(s) left by dead runs")
        images = _build_images(cfg, runner, {t.name for t, _ in jobs}, console)
        _trials(cfg, out, jobs, images, runner, results, agent_factory, console)
        complete = True
    except KeyboardInterrupt:
        console.print(Text("interrupted: removing this run's containers; finished trials "
                           f"stay in {out}", style="yellow"))
        runner.cancel()
        raise
    finally:
        runner.close()
        signal.signal(signal.SIGTERM, old_handler)
        signal.signal(signal.SIGINT, old_int)
        summary = results.write(complete=complete)
    print_summary(console, summary, out)
    return summary


def _resume_jobs(out: Path, jobs: list[tuple[Task, int]], results: Results,
                 previous: Any, console: Console) -> list[tuple[Task, int]]:
    """The trials a resumed run still has to run; the finished ones join ``results``."""
    if isinstance(previous, dict) and isinstance(previous.get("started"), str):
        results.started = previous["started"]
        earlier_resumes = previous.get("resumed")
        if isinstance(earlier_resumes, list):
            results.resumed = [str(t) for t in earlier_resumes]
    results.resumed.append(datetime.now().isoformat(timespec="seconds"))
    todo, moved = [], []
    for task, k in jobs:
        trial_dir = out / task.name / f"attempt-{k}"
        kept = _finished(trial_dir, task, k)
        if kept is not None:
            results.add(kept, write=False)
            continue
        if trial_dir.exists():
            moved.append(_move_aside(trial_dir))
        todo.append((task, k))
    console.print(Text(f"resume {out}: {len(results.trials)} finished trial(s) kept, "
                       f"{len(todo)} to run" + ("; unfinished folders moved aside: "
                       + ", ".join(str(m.relative_to(out)) for m in moved) if moved else "")))
    results.write(complete=False)
    return todo


def _build_images(cfg: RunConfig, runner: TrialRunner, needed: set[str],
                  console: Console) -> dict[str, str | Exception]:
    """Each task's image (a resumed run builds only what it still runs); a failed build is
    that task's trials' error, not the run's."""
    images: dict[str, str | Exception] = {}
    for task in cfg.tasks:
        if task.name not in needed or task.name in images:
            continue
        try:
            images[task.name] = runner.image(task, cfg.instance)
        except ImageBuildError as exc:
            images[task.name] = exc
            console.print(Text.assemble((f"image build failed for {task.name}:", "red"),
                                        f" {exc}"))
    return images


def _trials(cfg: RunConfig, out: Path, jobs: list[tuple[Task, int]],
            images: dict[str, str | Exception], runner: TrialRunner,
            results: Results, agent_factory: Any, console: Console) -> None:
    """Run the trials, ``cfg.concurrency`` at a time, each result on disk as it finishes."""
    progress = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                        TextColumn("mean reward {task.fields[mean]:.3f}"), TimeElapsedColumn(),
                        console=console, transient=False)
    with progress:
        kept = [t.reward for t in results.trials]
        bar = progress.add_task(f"run {cfg.agent}", total=results.total,
                                completed=len(kept),
                                mean=sum(kept) / len(kept) if kept else 0.0)
        runner.plan(runner.spec(t, cfg.instance) for t, _ in jobs
                    if isinstance(images[t.name], str))
        futures: dict[Future[TrialResult], tuple[Task, int]] = {}
        for task, k in jobs:
            trial_dir = out / task.name / f"attempt-{k}"
            image = images[task.name]
            if isinstance(image, Exception):
                r = TrialResult(task=task.name, reward=0.0, trial_dir=str(trial_dir),
                                error=f"image build failed: {image}", attempt=k)
                results.add(r)
                progress.advance(bar)
                continue
            fut = runner.submit(task, agent_factory(), trial_dir, attempt=k,
                                instance=cfg.instance)
            futures[fut] = (task, k)
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                try:
                    r = fut.result()
                except Exception as exc:  # run_trial records its errors; this is a last net
                    task, k = futures[fut]
                    r = TrialResult(task=task.name, reward=0.0, attempt=k,
                                    trial_dir=str(out / task.name / f"attempt-{k}"),
                                    error=f"harness: {type(exc).__name__}: {exc}")
                results.add(r)
                mark = (("✓", "green") if r.reward >= 1.0 else ("✗", "red") if r.error
                        else ("·", ""))
                flags = ("suspect " if r.suspect else "") + ("tampering" if r.integrity
                                                             else "")
                console.print(Text.assemble(
                    mark, f" {r.task} #{r.attempt} reward={r.reward:.2f} steps={r.n_steps} "
                    f"{r.duration_s:.1f}s", (f" {flags.strip()}" if flags else "", "yellow"),
                    (f" {r.error}" if r.error else "", "red")))
                progress.advance(bar)
                done_r = [t.reward for t in results.trials]
                progress.update(bar, mean=sum(done_r) / len(done_r))
