"""Learning efficiency per algorithm and update, from the recorded trajectories (issue #34):
the curves where per-step credit should show first, before final success moves.

Per set of episodes (``episode_rates``; infrastructure failures left out, as the trainer's
``credit/`` metrics leave them out):

* ``success``: episodes with training reward >= 1;
* ``steps_per_success`` / ``tokens_per_success``: mean steps / sampled action tokens (the
  loss mask) over the successful episodes (None without one);
* ``errored_cmd``: commands that exited non-zero or timed out, over the commands run;
* ``decoy_ep``: episodes that ran a command the task declares breaking
  (``[metadata.oracle] breaking``, ``estimators.oracle.label_steps``);
* ``garbled_first``: episodes whose first fault is an errored command, not a decoy (a decoy
  run first, or no fault at all, does not count).

The last two need the task's declared ground truth; they are None when no episode's task
declares it (the credit tier). ``bench_efficiency`` applies it to a bench directory: the shared
start evaluation, each algorithm's training rollouts per update (``rollouts/step-N``, seeds
pooled) and its final evaluation. `benchmarks/horizon_pilot.py` prints the same figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable

from ..estimators.inside import errored
from ..estimators.oracle import INFO_KEY, OracleSpec, label_steps
from ..estimators.rewards import reward_of
from ..harness.infra import is_infra
from ..records import Trajectory
from ..tasks import find_tasks
from ..trialdir import load_trajectory
from .stats import cell, run_dir_name

RATES = ("success", "steps_per_success", "tokens_per_success", "decoy_ep", "errored_cmd",
         "garbled_first")
NAMES = {"success": "success", "steps_per_success": "steps/success",
         "tokens_per_success": "tokens/success", "decoy_ep": "decoy-episode rate",
         "errored_cmd": "errored-command rate", "garbled_first": "first fault a garbled command"}


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def episode_rates(trajs: Sequence[Trajectory], specs: dict[str, OracleSpec]
                  ) -> dict[str, float | None]:
    """The rates of the module doc over ``trajs``; ``specs``: task name -> declared ground
    truth (tasks without one count for everything but the decoy and garbling rates)."""
    ok = [t for t in trajs if not is_infra(t)]
    wins = [t for t in ok if reward_of(t) >= 1.0]
    cmds = [s for t in ok for s in t.steps if s.command is not None]
    tokens = [sum(t.tokens.loss_mask) for t in wins if t.tokens is not None]
    out: dict[str, float | None] = {
        "episodes": float(len(ok)), "success": _mean([float(t in wins) for t in ok]),
        "steps_per_success": _mean([float(len(t.steps)) for t in wins]),
        "tokens_per_success": _mean([float(x) for x in tokens]),
        "errored_cmd": _mean([float(errored(s)) for s in cmds])}
    decoy, garbled = [], []
    for t in ok:
        if t.task not in specs:
            continue
        bad = set(label_steps(t, specs[t.task])["breaking"])
        faults = [s.index for s in t.steps if s.index in bad or errored(s)]
        decoy.append(float(bool(bad)))
        garbled.append(float(bool(faults) and faults[0] not in bad))
    out["decoy_ep"], out["garbled_first"] = _mean(decoy), _mean(garbled)
    return out


def task_specs(task_paths: Sequence[str]) -> dict[str, OracleSpec]:
    """Task name -> its declared ground truth, for the tasks that declare one (paths that do
    not exist from here, e.g. a report rewritten elsewhere, are skipped: no decoy rates)."""
    return {t.name: OracleSpec.from_metadata(t.metadata, t.name)
            for t in find_tasks([p for p in task_paths if Path(p).exists()])
            if isinstance(t.metadata.get(INFO_KEY), dict)}


def _load(paths: list[Path]) -> list[Trajectory]:
    return [load_trajectory(p.parent) for p in paths]


def _step_of(label: str) -> int:
    return int(label.removeprefix("step-"))


def bench_efficiency(out: Path, algos: list[str], seeds: list[int],
                     task_paths: list[str]) -> dict[str, Any]:
    """{"start": rates of the start evaluation, "algorithms": {algo: {"updates": [rates with
    "update" (0-based)], "final": rates of the last evaluation}}}, seeds pooled; parts not
    run yet are left out (a partial bench directory gives what it has)."""
    specs = task_specs(task_paths)
    start = _trials(out / "start-eval", seeds, "eval/step-start")
    doc: dict[str, Any] = {"start": episode_rates(_load(start), specs) if start else None,
                           "algorithms": {}}
    for algo in algos:
        base = out / run_dir_name(algo)
        by_step: dict[int, list[Path]] = {}
        for seed in seeds:
            for p in (base / f"seed-{seed}" / "rollouts").glob("step-*/*/g*/trajectory.json"):
                by_step.setdefault(_step_of(p.parts[-4]), []).append(p)
        updates = [{"update": k, **episode_rates(_load(sorted(by_step[k])), specs)}
                   for k in sorted(by_step)]
        final = _final_trials(base, seeds)
        if updates or final:
            doc["algorithms"][algo] = {
                "updates": updates, "final": episode_rates(_load(final), specs) if final else None}
    return doc


def _trials(base: Path, seeds: list[int], under: str) -> list[Path]:
    return sorted(p for seed in seeds
                  for p in (base / f"seed-{seed}" / under).glob("*/g*/trajectory.json"))


def _final_trials(base: Path, seeds: list[int]) -> list[Path]:
    """Each seed's last evaluation (the highest eval/step-N), once the run has finished."""
    paths: list[Path] = []
    for seed in seeds:
        run = base / f"seed-{seed}"
        steps = sorted((run / "eval").glob("step-*"), key=lambda d: d.name)
        if (run / "done.json").is_file() and steps:
            paths += _trials(base, [seed], f"eval/{steps[-1].name}")
    return paths


def efficiency_lines(eff: dict[str, Any] | None,
                     table: Callable[[list[str], list[list[str]]], list[str]]) -> list[str]:
    """The report's section: one table per rate, a row per algorithm, a column per update
    (training rollouts), with the start and final evaluations at the ends."""
    if not eff or not eff["algorithms"]:
        return []
    n_up = max((len(a["updates"]) for a in eff["algorithms"].values()), default=0)
    ups = sorted({u["update"] for a in eff["algorithms"].values() for u in a["updates"]})
    head = ["algorithm", "start (eval)"] + [f"u{k}" for k in ups] + ["final (eval)"]
    lines = ["", "## Learning efficiency per update", "",
             "From the recorded trajectories (seeds pooled): the start's and the final held-out "
             "evaluations, and between them each update's training rollouts (u0 = the first "
             "update's). Decoy-episode rate: episodes that ran a command the task declares "
             "breaking; errored-command rate: commands that exited non-zero or timed out, "
             "over commands run; steps and tokens (sampled action tokens) per successful "
             f"episode. {n_up} update(s) recorded so far at most. The same as curves: "
             "efficiency.png.", "", "![efficiency](efficiency.png)"]
    start = eff["start"] or {}
    fmt = {"steps_per_success": ".2f", "tokens_per_success": ".0f"}
    for key in RATES:
        rows = []
        for algo, a in eff["algorithms"].items():
            got = {u["update"]: u.get(key) for u in a["updates"]}
            rows.append([algo, cell(start.get(key), fmt.get(key, ".3f"))]
                        + [cell(got.get(k), fmt.get(key, ".3f")) for k in ups]
                        + [cell((a["final"] or {}).get(key), fmt.get(key, ".3f"))])
        lines += ["", f"**{NAMES[key]}**", ""] + table(head, rows)
    return lines
