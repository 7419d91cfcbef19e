"""`termcredit run`: many trials, concurrently, into one predictable run directory.

Layout: ``OUT/config.toml``, ``OUT/result.json`` (rewritten after every finished trial, so a
crash keeps what finished), ``OUT/<task>/attempt-<k>/`` per trial.
"""

from __future__ import annotations

import json
import secrets
import signal
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..records import TrialResult, to_dict
from ..tomlw import toml_table
from ..sandbox import ImageBuildError, ImageMap, SandboxPool, docker_client, ensure_base_image, gc
from ..tasks import Task
from ..tasks.build import build_image
from .agents import make_agent_factory
from .trial import run_trial, task_spec


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


def default_out(name: str) -> Path:
    return Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-{name}"


def write_config(cfg: RunConfig, out: Path, run_id: str) -> None:
    items = {
        "run_id": run_id, "agent": cfg.agent, "attempts": cfg.attempts,
        "concurrency": cfg.concurrency, "command_timeout": cfg.command_timeout,
        "instance": cfg.instance,
        "tasks": [str(t.path) for t in cfg.tasks], **cfg.extra,
    }
    (out / "config.toml").write_text("[run]\n" + toml_table(items))


class _Results:
    def __init__(self, out: Path, run_id: str, agent: str, total: int):
        self.out, self.run_id, self.agent, self.total = out, run_id, agent, total
        self.trials: list[TrialResult] = []
        self.started = datetime.now().isoformat(timespec="seconds")

    def add(self, r: TrialResult) -> None:
        self.trials.append(r)
        self.write(complete=False)

    def summary(self, complete: bool) -> dict[str, Any]:
        rewards = [t.reward for t in self.trials]
        return {
            "run_id": self.run_id, "agent": self.agent, "complete": complete,
            "started": self.started, "finished": datetime.now().isoformat(timespec="seconds"),
            "n_trials": len(self.trials), "n_planned": self.total,
            "n_errors": sum(t.error is not None for t in self.trials),
            "mean_reward": sum(rewards) / len(rewards) if rewards else 0.0,
            "trials": [to_dict(t) for t in sorted(self.trials, key=lambda t: t.trial_dir)],
        }

    def write(self, complete: bool) -> dict[str, Any]:
        data = self.summary(complete)
        tmp = self.out / "result.json.tmp"
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.out / "result.json")
        return data


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(cfg: RunConfig, console: Console | None = None) -> dict[str, Any]:
    console = console or Console(stderr=True, soft_wrap=True)
    agent_factory = make_agent_factory(cfg.agent)  # fail on a bad agent before any container
    out = cfg.out or default_out(cfg.agent.split(":")[0])
    out.mkdir(parents=True, exist_ok=True)
    run_id = f"{out.name}-{secrets.token_hex(3)}"
    write_config(cfg, out, run_id)
    client = docker_client()
    stale = gc(client)
    if stale:
        console.print(f"[dim]gc: removed {len(stale)} container(s) left by dead runs[/]")
    results = _Results(out, run_id, cfg.agent, len(cfg.tasks) * cfg.attempts)

    base = ensure_base_image(client, log=lambda m: console.print(f"[dim]{m}[/]"))
    image_map = ImageMap.load(cfg.image_map)
    images: dict[str, str | Exception] = {}
    for task in cfg.tasks:
        try:
            images[task.name] = build_image(
                client, task, base_ref=base, instance=cfg.instance, image_map=image_map,
                force=cfg.force_build, log=lambda m: console.print(f"[dim]{m}[/]"))
        except ImageBuildError as exc:
            images[task.name] = exc
            console.print(f"[red]image build failed for {task.name}:[/] {exc}")

    pool = SandboxPool(client, run_id, ahead=max(1, cfg.concurrency))
    old_handler = signal.signal(signal.SIGTERM, _sigterm)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)  # even if inherited as ignored
    executor = ThreadPoolExecutor(max_workers=max(1, cfg.concurrency), thread_name_prefix="trial")
    jobs: list[tuple[Task, int]] = [(t, k) for t in cfg.tasks for k in range(cfg.attempts)]
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("mean reward {task.fields[mean]:.3f}"), TimeElapsedColumn(),
                        console=console, transient=False)
    complete = False
    try:
        with progress:
            bar = progress.add_task(f"run {cfg.agent}", total=len(jobs), mean=0.0)
            pool.plan(task_spec(t, images[t.name]) for t, _ in jobs
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
                fut = executor.submit(run_trial, task, agent_factory(), pool,
                                      task_spec(task, image), trial_dir, attempt=k,
                                      command_timeout=cfg.command_timeout,
                                      instance=cfg.instance)
                futures[fut] = (task, k)
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    r = fut.result()
                    results.add(r)
                    mark = "[green]✓[/]" if r.reward >= 1.0 else ("[red]✗[/]" if r.error else "·")
                    console.print(f"{mark} {r.task} #{r.attempt} reward={r.reward:.2f} "
                                  f"steps={r.n_steps} {r.duration_s:.1f}s"
                                  + (f" [red]{r.error}[/]" if r.error else ""))
                    progress.advance(bar)
                    done_r = [t.reward for t in results.trials]
                    progress.update(bar, mean=sum(done_r) / len(done_r))
        complete = True
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: removing this run's containers; finished trials "
                      f"stay in {out}[/]")
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.close()
        executor.shutdown(wait=True, cancel_futures=True)
        signal.signal(signal.SIGTERM, old_handler)
        signal.signal(signal.SIGINT, old_int)
        summary = results.write(complete=complete)
    _print_summary(console, summary, out)
    return summary


def _print_summary(console: Console, summary: dict[str, Any], out: Path) -> None:
    table = Table(title=f"termcredit run → {out}")
    for col in ("task", "trials", "mean reward", "errors"):
        table.add_column(col)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for t in summary["trials"]:
        by_task.setdefault(t["task"], []).append(t)
    for name, ts in by_task.items():
        table.add_row(name, str(len(ts)), f"{sum(t['reward'] for t in ts) / len(ts):.3f}",
                      str(sum(t["error"] is not None for t in ts)))
    console.print(table)
    console.print(f"mean reward {summary['mean_reward']:.3f} over {summary['n_trials']} trials")
