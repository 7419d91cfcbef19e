"""Counterfactual credit accuracy (`termcredit credit-audit`, benchmarks/credit_accuracy.py).

A successful trajectory is replayed once per step with that step left out, each replay in a
fresh sandbox of the task's image; the step is *necessary* when the verifier's reward drops
below the full trajectory's. Against DepGPO's per-step credit of the full trajectory (what
`termcredit credit --json` gives: `depgpo.report.credit_report`), per trajectory and overall
(pooled over steps):

* recall: necessary steps with credit > 0, over necessary steps;
* precision: credited steps (credit > 0) that are necessary, over credited steps.

A leave-one-out replay that errored (no verdict) decides nothing: the step is left out of
both counts and listed with its error. Every miss is listed: a necessary step without credit
(``uncredited``) and a credited step that was not necessary (``unnecessary``).

Trajectories come from a task's oracle (solution/solve.sh split into its top-level commands,
`split.split_commands`, with solution/ copied to /solution first, as the oracle has it), from a
`termcredit run` folder (each successful trial's commands), or from any list of commands.
"""

from __future__ import annotations

import json
import secrets
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from ..depgpo import DepGPOConfig
from ..depgpo.load import load_trajectory
from ..depgpo.report import credit_report
from ..depgpo.trial_hook import default_hooks
from ..harness.agents import CommandsAgent
from ..harness.backend import BackendSettings
from ..harness.runner import RunnerSettings, TrialRunner
from ..records import TrialResult
from ..tasks import Task, find_tasks, load_task
from ..tasks.split import split_commands


@dataclass
class AuditJob:
    """One trajectory to audit: ``commands`` run in order on ``task``'s image."""

    task: Task
    commands: list[str]
    label: str = ""  # how the trajectory is named in the report (default: the task's name)
    solution: bool = False  # copy solution/ to /solution first (oracle commands need it)
    trial_dir: Path | None = None  # an existing successful trial of these commands: not rerun

    @property
    def name(self) -> str:
        return self.label or self.task.name


def score(necessary: set[int], credited: set[int]) -> tuple[float | None, float | None]:
    """(recall, precision) of ``credited`` against ``necessary``; None where undefined (no
    necessary step, no credited step)."""
    hit = len(necessary & credited)
    return (hit / len(necessary) if necessary else None,
            hit / len(credited) if credited else None)


def summarise(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts, recall and precision over audited steps (those with a verdict)."""
    judged = [s for s in steps if s["necessary"] is not None]
    necessary = {i for i, s in enumerate(judged) if s["necessary"]}
    credited = {i for i, s in enumerate(judged) if (s["credit"] or 0) > 0}
    recall, precision = score(necessary, credited)
    return {"n_steps": len(judged), "n_necessary": len(necessary), "n_credited": len(credited),
            "n_both": len(necessary & credited), "recall": recall, "precision": precision,
            "n_undecided": len(steps) - len(judged)}


def _miss(s: dict[str, Any]) -> str | None:
    if s["necessary"] is None:
        return None
    credited = (s["credit"] or 0) > 0
    if s["necessary"] and not credited:
        return "uncredited"
    if credited and not s["necessary"]:
        return "unnecessary"
    return None


def audit(jobs: list[AuditJob], out: Path, *, concurrency: int = 2,
          cfg: DepGPOConfig = DepGPOConfig(), command_timeout: float = 120.0,
          log: Callable[[str], None] = lambda m: None,
          backend: BackendSettings = BackendSettings()) -> dict[str, Any]:
    """Audit each job (see the module doc) on ``backend``; writes ``out/<label>/full`` and
    ``out/<label>/without-<step>`` trial folders and ``out/audit.json``; returns its data."""
    out.mkdir(parents=True, exist_ok=True)
    with TrialRunner(RunnerSettings(backend, concurrency, command_timeout,
                                    hooks=default_hooks()),
                     f"audit-{secrets.token_hex(3)}", log=log) as runner:
        for job in jobs:  # every image before the first trial
            runner.image(job.task)
        labels: dict[str, int] = {}
        for job in jobs:  # one folder per job, labels made unique
            n = labels.get(job.name, 0)
            labels[job.name] = n + 1
            if n:
                job.label = f"{job.name}-{n}"
        results = _audit(jobs, out, runner, cfg, log)
    every = [s for e in results for s in e["steps"]]
    data = {
        "created": datetime.now().isoformat(timespec="seconds"), "out": str(out),
        "beta": cfg.beta, "overall": summarise(every), "trajectories": results,
        "misses": [{"label": e["label"], **{k: s[k] for k in ("step", "command", "credit",
                                                            "reward_without", "miss")}}
                   for e in results for s in e["steps"] if s.get("miss")],
        "skipped": [{"label": e["label"], "error": e["error"]} for e in results
                    if e.get("error")],
    }
    (out / "audit.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return data


def _audit(jobs: list[AuditJob], out: Path, runner: TrialRunner, cfg: DepGPOConfig,
           log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The full trajectories (run where no trial is given), their credit, then the
    leave-one-out replays; one report entry per job."""

    def trial(job: AuditJob, commands: list[str], name: str) -> Future[TrialResult]:
        agent = CommandsAgent(commands, solution=job.solution, name="audit")
        return runner.submit(job.task, agent, out / job.name / name)

    results: list[dict[str, Any]] = []
    full: dict[int, Any] = {}
    for k, job in enumerate(jobs):
        if job.trial_dir is None:
            full[k] = trial(job, job.commands, "full")
    reports: dict[int, dict[str, Any]] = {}
    for k, job in enumerate(jobs):
        trial_dir = job.trial_dir
        if k in full:
            r = full[k].result()
            trial_dir = Path(r.trial_dir)
        try:
            rep = credit_report(trial_dir, cfg)
        except Exception as exc:  # a trial that never ran far enough to be analysed
            rep = {"reward": 0.0, "steps": [], "error": f"{type(exc).__name__}: {exc}"}
        rep["trial_dir"] = str(trial_dir)
        reports[k] = rep
        log(f"{job.name}: full trajectory reward {rep['reward']}, "
            f"{len(rep['steps'])} step(s)")
    loo: dict[tuple[int, int], Any] = {}
    for k, job in enumerate(jobs):
        rep = reports[k]
        if not rep["reward"] or rep["reward"] <= 0 or len(rep["steps"]) != len(job.commands):
            continue
        for i in range(len(job.commands)):
            cmds = job.commands[:i] + job.commands[i + 1:]
            loo[k, i] = trial(job, cmds, f"without-{i}")
    for k, job in enumerate(jobs):
        rep = reports[k]
        entry: dict[str, Any] = {"task": job.task.name, "label": job.name,
                                 "reward": rep["reward"], "trial_dir": rep["trial_dir"],
                                 "fallback": rep.get("fallback"), "steps": []}
        if rep.get("error") or not rep["reward"] or rep["reward"] <= 0:
            entry["error"] = rep.get("error") or (
                f"not a successful trajectory (reward {rep['reward']}): nothing to audit")
        elif len(rep["steps"]) != len(job.commands):
            entry["error"] = (f"{len(rep['steps'])} step(s) recorded for "
                              f"{len(job.commands)} command(s)")
        else:
            for i, row in enumerate(rep["steps"]):
                r = loo[k, i].result()
                error = r.error if r.error and r.reward <= 0 else None
                entry["steps"].append({
                    "step": i, "command": job.commands[i], "credit": row["credit"],
                    "classes": row["classes"], "reward_without": r.reward,
                    "necessary": None if error else r.reward < rep["reward"],
                    "error": error, "trial_dir": r.trial_dir})
            for s in entry["steps"]:
                s["miss"] = _miss(s)
            log(f"{job.name}: audited {len(entry['steps'])} step(s)")
        entry.update(summarise(entry["steps"]))
        results.append(entry)
    return results


def oracle_job(task: Task) -> AuditJob:
    """The task's oracle, one step per top-level command of solution/solve.sh."""
    if not task.has_solution:
        raise FileNotFoundError(f"{task.solution_dir / 'solve.sh'}: missing (no oracle to audit)")
    return AuditJob(task, split_commands((task.solution_dir / "solve.sh").read_text()),
                    label=f"{task.name}/oracle", solution=True)


def run_jobs(run_dir: Path) -> list[AuditJob]:
    """A `termcredit run` folder's successful trials as jobs: their own steps' commands (their
    trial folders reused as the full trajectories); an oracle trial (one `bash solve.sh` step)
    becomes its split oracle."""
    summary = json.loads((run_dir / "result.json").read_text())
    tasks = {t.name: t for t in
             (load_task(p) for p in _run_tasks(run_dir))}
    jobs = []
    for tr in summary.get("trials", []):
        if tr.get("error") or float(tr.get("reward", 0)) <= 0 or tr["task"] not in tasks:
            continue
        task = tasks[tr["task"]]
        trial_dir = Path(tr["trial_dir"])
        if not trial_dir.is_absolute() and not trial_dir.exists():
            trial_dir = run_dir / trial_dir
        traj = load_trajectory(trial_dir)
        if traj.agent == "oracle":
            jobs.append(oracle_job(task))
            continue
        commands = [s.command.command for s in traj.steps if s.command is not None]
        if len(commands) != len(traj.steps):  # invalid steps: replay without reusing the trial
            jobs.append(AuditJob(task, commands, label=f"{task.name}/{trial_dir.name}"))
        else:
            jobs.append(AuditJob(task, commands, label=f"{task.name}/{trial_dir.name}",
                                 trial_dir=trial_dir))
    return jobs


def _run_tasks(run_dir: Path) -> list[str]:
    from ..harness.run import read_config

    return [str(p) for p in read_config(run_dir)["tasks"]]


def jobs_for(paths: list[str | Path]) -> list[AuditJob]:
    """`termcredit credit-audit` arguments: run folders (with result.json and config.toml) and
    task folders / folders of tasks (their oracles)."""
    jobs: list[AuditJob] = []
    task_paths = []
    for p in map(Path, paths):
        if (p / "result.json").is_file() and (p / "config.toml").is_file():
            jobs += run_jobs(p)
        else:
            task_paths.append(p)
    if task_paths:
        jobs += [oracle_job(t) for t in find_tasks(task_paths) if t.has_solution]
    return jobs


def fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def result_line(data: dict[str, Any]) -> str:
    o = data["overall"]
    return (f"RESULT recall={fmt(o['recall'])} precision={fmt(o['precision'])} "
            f"steps={o['n_steps']} necessary={o['n_necessary']} credited={o['n_credited']} "
            f"trajectories={len(data['trajectories']) - len(data['skipped'])} "
            f"skipped={len(data['skipped'])}")
