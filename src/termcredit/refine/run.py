"""`termcredit refine RUN_DIR`: successful trials in, a replay-checked SFT dataset out.

Trials: every trial folder under RUN_DIR (a `termcredit run` folder, a `termcredit train` run
with its rollouts/ and eval folders, a bench folder with every run in it: whatever holds
``trajectory.json``) whose training reward is 1 (verifier passed, no tampering, not
suspect). Their tasks are found from the run's own config (``config.toml``'s tasks, a bench's
``bench.json``, those of the runs inside it) and the ``tasks`` folders given.

For each: ``select.decide`` on its dependency graph, then the kept commands are replayed, one
step each, in a fresh sandbox of the task's image at the trial's instance
(the harness's ``CommandsAgent``: one step per command, so multi-line commands stay whole;
``harness.runner.TrialRunner``, on the backend asked for, local or ray). Only a replay the
verifier gives 1 becomes a line of the dataset; the report (``<out>.report.json``) lists
every trial, kept or not, and why.
"""

from __future__ import annotations

import json
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..depgpo.trial_hook import default_hooks
from ..estimators.rewards import training_reward
from ..harness.agents import CommandsAgent
from ..harness.audit_cli import find_trials
from ..harness.backend import BackendSettings
from ..harness.runner import RunnerSettings, TrialRunner
from ..jsonl import write_jsonl
from ..records import Trajectory
from ..tasks import Task, find_tasks
from ..trialdir import load_trajectory
from .dataset import record, token_counter
from .select import RefineOptions, decide, refined_commands


class StepsAgent(CommandsAgent):
    """The harness's replay agent under refine's name."""

    name = "refine-replay"  # refine's own replays: never taken as input trials


@dataclass
class Source:
    """A successful trial to refine."""

    traj: Trajectory
    task: Task

    @property
    def instance(self) -> int:
        inst = self.traj.info.get("instance", 0)
        return inst if isinstance(inst, int) else 0


def _config_tasks(run_dir: Path) -> list[str]:
    """Task paths named by the run's configs (run, train, bench, and the runs in a bench)."""
    paths: list[str] = []
    for cfg in [run_dir / "config.toml", *sorted(run_dir.glob("*/seed-*/config.toml"))]:
        try:
            data = tomllib.loads(cfg.read_text())
        except (OSError, tomllib.TOMLDecodeError):
            continue
        tasks = data.get("run", data).get("tasks", [])
        paths += [t for t in tasks if isinstance(t, str)]
    try:
        bench = json.loads((run_dir / "bench.json").read_text())
        paths += [t for t in bench.get("tasks", []) if isinstance(t, str)]
    except (OSError, ValueError, AttributeError):
        pass
    return paths


def task_index(run_dir: Path, extra: list[str]) -> dict[str, Task]:
    index: dict[str, Task] = {}
    for p in [*extra, *_config_tasks(run_dir)]:
        if Path(p).exists():
            for t in find_tasks([p]):
                index.setdefault(t.name, t)
    return index


def find_sources(run_dir: Path, tasks: dict[str, Task], skip: Path | None = None
                 ) -> tuple[list[Source], list[dict[str, str]]]:
    """(successful trials with a known task, skipped trials with why)."""
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    sources, skipped = [], []
    for d in find_trials(run_dir):
        if skip is not None and d.resolve().is_relative_to(skip.resolve()):
            continue  # refine's own replays
        try:
            traj = load_trajectory(d)
        except Exception as exc:  # unreadable trial: say so, go on
            skipped.append({"trial": str(d), "why": f"unreadable: {exc}"})
            continue
        if traj.agent == StepsAgent.name:
            skipped.append({"trial": str(d), "why": "a refine replay (an earlier refine's output)"})
        elif training_reward(traj) < 1.0:
            skipped.append({"trial": str(d), "why": "not successful"})
        elif traj.task not in tasks:
            skipped.append({"trial": str(d), "why": f"task {traj.task!r} not found (--tasks)"})
        else:
            sources.append(Source(traj, tasks[traj.task]))
    return sources, skipped


def replay(jobs: list[tuple[Task, int, list[str]]], out_dir: Path, *, concurrency: int = 2,
           command_timeout: float = 120.0, log: Callable[[str], None] = lambda m: None,
           agent: str = StepsAgent.name, backend: BackendSettings = BackendSettings()
           ) -> list[Trajectory | None]:
    """Each job's commands, one step each, in a fresh sandbox (``out_dir/<k>``) on
    ``backend``, recorded as agent ``agent``; the replayed trajectories (None where the
    replay left none)."""
    if not jobs:
        return []
    settings = RunnerSettings(backend, concurrency, command_timeout, hooks=default_hooks())
    with TrialRunner(settings, f"refine-{secrets.token_hex(3)}", log=log) as runner:
        for task, inst, _ in jobs:  # every image before the first trial
            runner.image(task, inst)
        futures = [runner.submit(task, StepsAgent(cmds, name=agent),
                                 out_dir / f"{k:04d}-{task.name}", instance=inst)
                   for k, (task, inst, cmds) in enumerate(jobs)]
        return [_trajectory(f.result().trial_dir) for f in futures]


def _trajectory(trial_dir: str) -> Trajectory | None:
    try:
        return load_trajectory(trial_dir)
    except Exception:  # the replay left no readable trajectory
        return None


def refine_sources(sources: list[Source], out: Path, opts: RefineOptions = RefineOptions(), *,
                   concurrency: int = 2, command_timeout: float = 120.0, obs_chars: int = 600,
                   log: Callable[[str], None] = lambda m: None,
                   backend: BackendSettings = BackendSettings()) -> dict[str, Any]:
    """Decide, replay, keep what still passes; writes ``out`` (JSONL) and returns the report
    (written to ``<out>.report.json`` by ``refine_run``)."""
    decisions = [decide(s.traj, opts=opts) for s in sources]
    jobs = [(s.task, s.instance, refined_commands(d)) for s, d in zip(sources, decisions)]
    replays = replay(jobs, out.with_name(out.stem + "-replays"), concurrency=concurrency,
                     command_timeout=command_timeout, log=log, backend=backend)
    rows, trajs = [], []
    for s, d, rep in zip(sources, decisions, replays):
        reward = training_reward(rep) if rep is not None else 0.0
        entry = {"source": s.traj.trial_dir, "task": s.task.name,
                 "steps": len(s.traj.steps), "dropped": sum(not x.keep for x in d),
                 "replay": rep.trial_dir if rep is not None else None, "replay_reward": reward}
        if rep is not None and reward >= 1.0:
            rows.append(record(s.traj, rep, d, reward, obs_chars))
            entry["kept"] = True
        else:
            entry["kept"] = False
            entry["why"] = ("the replay left no trajectory" if rep is None else
                            f"replay reward {reward:g} < 1: a dropped step mattered after all")
        trajs.append(entry)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(out, rows)  # commands keep their bytes (\udcXX), as in trajectory.json
    unit = rows[0]["token_unit"] if rows else token_counter()[0]
    return {"out": str(out), "trials_in": len(sources), "kept": len(rows),
            "rejected": len(sources) - len(rows),
            "steps_dropped": sum(len(r["steps_dropped"]) for r in rows),
            "tokens_saved": sum(r["tokens_saved"] for r in rows), "token_unit": unit,
            "options": {"keep_reads": opts.keep_reads, "min_credit": opts.min_credit,
                        "keep_writes": opts.keep_writes},
            "trajectories": trajs}


def refine_run(run_dir: Path, out: Path, opts: RefineOptions = RefineOptions(), *,
               tasks: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    index = task_index(run_dir, tasks if tasks is not None else
                       (["tasks"] if Path("tasks").is_dir() else []))
    sources, skipped = find_sources(run_dir, index, skip=out.with_name(out.stem + "-replays"))
    report = refine_sources(sources, out, opts, **kw)
    report["run_dir"] = str(run_dir)
    report["trials_seen"] = len(sources) + len(skipped)
    report["skipped"] = skipped
    out.with_name(out.name + ".report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def result_line(report: dict[str, Any]) -> str:
    return (f"RESULT refine trials_seen={report.get('trials_seen', report['trials_in'])} "
            f"successful={report['trials_in']} kept={report['kept']} "
            f"rejected={report['rejected']} steps_dropped={report['steps_dropped']} "
            f"tokens_saved={report['tokens_saved']} ({report['token_unit']})")
