"""The bench report: summary.json, curves.png, report.html and REPORT.md in the bench dir."""

from __future__ import annotations

import html
import json
import os
import platform
import statistics
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..jsonl import read_jsonl
from ..trialdir import TrialPaths, load_trajectory
from . import stats as stats_
from .blame import blame_lines, blame_split, rollout_trials, tally
from .by_task import by_task_lines, task_diffs
from .ceiling import ceiling_lines
from .efficiency import bench_efficiency, efficiency_lines
from .warm_compare import warm_comparison, warm_lines
from .plots import plot_curves, plot_efficiency
from .stats import Run, cell, compare, run_dir_name

KEYS_TIME = ("time/rollout_s", "time/credit_s", "time/update_s", "time/eval_s")
TIME_NAMES = tuple(k.split("/")[1] for k in KEYS_TIME)  # rollout_s, ... in summary.json
CREDIT_STATS = {
    "zero_credit_step_frac": "estimator/zero_credit_step_frac",
    "fallback_rate": "estimator/fallback_rate",
    "zero_advantage_group": "zero_advantage_group",
    "singleton_anchor_ratio": "estimator/singleton_anchor_ratio",
}


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"  # appended to: a killed run may leave a torn last line
    return read_jsonl(path, torn_tail=True) if path.is_file() else []


def _episodes(path: Path) -> list[dict[str, Any]] | None:
    """An evaluation's episodes (eval-*.jsonl, written whole); None before it ran."""
    return read_jsonl(path) if path.is_file() else None


def _curve(rows: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """(updates done, eval success): step -1 is before any update."""
    return [(r["step"] + 1, r["eval/success"]) for r in rows if "eval/success" in r]


def _auc(curve: list[tuple[int, float]]) -> float:
    if len(curve) < 2:
        return curve[0][1] if curve else 0.0
    area = sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in zip(curve, curve[1:]))
    return area / (curve[-1][0] - curve[0][0])


def _ms(xs: list[float]) -> tuple[float, float]:
    return (statistics.mean(xs), statistics.pstdev(xs)) if xs else (0.0, 0.0)


def load_runs(out: Path, algos: list[str], seeds: list[int]) -> dict[str, dict[int, Run]]:
    runs: dict[str, dict[int, Run]] = {}
    for algo in algos:
        runs[algo] = {}
        for seed in seeds:
            d = out / run_dir_name(algo) / f"seed-{seed}"
            rows = _rows(d)
            final = _episodes(d / "eval-final.jsonl")
            if rows or final:
                runs[algo][seed] = Run(rows, final,
                                       _episodes(out / "start" / f"eval-seed-{seed}.jsonl"))
    return runs


def _algo_summary(runs: dict[int, Run]) -> dict[str, Any]:
    curves, finals, times, stats = [], [], {k: 0.0 for k in KEYS_TIME}, {}
    infra, evals = 0, []  # infra: training episodes lost to infrastructure failures
    tasks: dict[str, list[dict[str, Any]]] = {}  # final evaluation episodes by task
    for run in runs.values():
        rows, curve = run.rows, _curve(run.rows)
        steps = [r["step"] for r in rows if r.get("step", -1) >= 0]
        if run.start and not any(x == 0 for x, _ in curve):
            curve.insert(0, (0, stats_.episode_stats(run.start)["success"] or 0.0))
        if run.final:
            ev = stats_.episode_stats(run.final)
            evals.append(ev)
            for e in run.final:
                tasks.setdefault(str(e["task"]), []).append(e)
            done = max(steps) + 1 if steps else (curve[-1][0] if curve else 0)
            if ev["success"] is not None and not (curve and curve[-1][0] == done):
                curve.append((done, ev["success"]))
            if ev["success"] is not None:
                finals.append(ev["success"])
        elif curve:
            finals.append(curve[-1][1])
        if curve:
            curves.append(curve)
        for r in rows:
            for k in KEYS_TIME:
                times[k] += r.get(k, 0.0)
            infra += int(r.get("infra_episodes", 0))
        for name, key in CREDIT_STATS.items():
            vals = [r[key] for r in rows if key in r]
            if vals:
                stats.setdefault(name, []).extend(vals)
    per_seed = [run.rows for run in runs.values()]
    aucs = [a for a in (stats_.auc(rows) for rows in per_seed) if a is not None]
    same_x = curves and all([x for x, _ in c] == [x for x, _ in curves[0]] for c in curves)
    mean_curve = [(x, statistics.mean(c[i][1] for c in curves))
                  for i, (x, _) in enumerate(curves[0])] if same_x else []
    keys = stats_.credit_keys(per_seed)
    return {
        "final_success_mean": _ms(finals)[0], "final_success_std": _ms(finals)[1],
        "final_success_per_seed": finals,
        "final_source": "eval-final.jsonl" if evals else ("eval rows" if finals else None),
        "final_eval": {
            "episodes": sum(e["episodes"] for e in evals),
            "infra_episodes": sum(e["infra_episodes"] for e in evals),
            **{k: stats_.mean_of(e[k] for e in evals)
               for k in ("infra_rate", "steps_per_success", "tokens_per_success")}},
        "final_by_task": {t: stats_.episode_stats(eps)["success"] for t, eps in tasks.items()},
        "auc_mean": _ms(aucs)[0] if aucs else None, "auc_std": _ms(aucs)[1] if aucs else None,
        "auc_per_seed": aucs, "eval_auc_mean": _ms([_auc(c) for c in curves])[0],
        "seeds": len(curves), "curve": mean_curve, "curves": curves,
        "train_curve": stats_.update_curve(per_seed, "success_rate"),
        "credit": {k: stats_.seed_mean(per_seed, k) for k in keys},
        "credit_curves": {k: stats_.update_curve(per_seed, k) for k in keys},
        "time_s": dict(zip(TIME_NAMES, times.values())),
        "credit_stats": {k: statistics.mean(v) for k, v in stats.items()},
        "infra_episodes": infra,
    }


def summarize(out: Path, algos: list[str], seeds: list[int],
              runs: dict[str, dict[int, Run]] | None = None) -> dict[str, Any]:
    runs = runs if runs is not None else load_runs(out, algos, seeds)
    result = {algo: _algo_summary(runs[algo]) for algo in algos}
    grpo_final = result.get("grpo", {}).get("final_success_mean")
    for algo, r in result.items():
        hit = next((x for x, y in r["curve"] if grpo_final is not None and y >= grpo_final
                    and y > 0), None)
        r["updates_to_grpo_final"] = hit
    return result


def threshold_ratio(summary: dict[str, Any]) -> tuple[float | None, str]:
    """GRPO's updates to reach its own final success, divided by DepGPO's updates to reach it:
    > 1 means DepGPO got there sooner. Undefined (None, with the reason) when GRPO ends no
    higher than where every algorithm started, or when DepGPO never reaches that level."""
    grpo, dep = summary.get("grpo"), summary.get("depgpo")
    if not grpo or not dep or not grpo["curve"]:
        return None, "needs both grpo and depgpo in the run"
    start = grpo["curve"][0][1]
    if grpo["final_success_mean"] <= start:
        return None, (f"GRPO ended at {grpo['final_success_mean']:.3f}, no higher than the "
                      f"start ({start:.3f}): there is no improvement to reach")
    g, d = grpo["updates_to_grpo_final"], dep["updates_to_grpo_final"]
    if d is None:
        return None, "DepGPO never reached GRPO's final success"
    return g / d, f"GRPO needs {g} updates, DepGPO {d}"


def eval_kind(cfg: Any) -> str:
    if cfg.eval_temperature == 0:
        return "greedy pass@1"
    return (f"success over {cfg.eval_samples} samples per instance at temperature "
            f"{cfg.eval_temperature:g}")


def _hardware() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return f"{os.cpu_count()} CPU cores ({cpu}), GPU: {gpu}, torch {torch.__version__}"


def _graphs(out: Path, tasks: list[str]) -> dict[str, str]:
    """One DepGPO graph picture (svg) per task, from a successful DepGPO rollout (the
    ``graph.json`` its trial hook wrote)."""
    from ..depgpo import from_json
    from ..depgpo.render import render

    pics: dict[str, str] = {}
    for trial in sorted((out / run_dir_name("depgpo")).glob("seed-*/rollouts/*/*/*/")):
        paths = TrialPaths(trial)
        if not (paths.is_trial() and paths.graph.is_file()):
            continue
        traj = load_trajectory(trial)
        task = traj.task
        if task in pics or not traj.verifier or traj.verifier.reward < 1:
            continue
        try:
            pics[task] = render(from_json(paths.graph.read_text()), "svg",
                                title=f"{task}: a successful DepGPO rollout").decode()
        except Exception as exc:  # no graphviz here: say so in the report
            pics[task] = f"<p>(graph not drawn: {html.escape(str(exc))})</p>"
    return {t: pics[t] for t in sorted(pics)}


def _shared_seconds(out: Path) -> dict[str, float]:
    """Work done once for all algorithms: the SFT checkpoints and the start evaluation(s)."""
    def total(pattern: str, key: str) -> float:
        return sum(json.loads(f.read_text()).get(key, 0.0) for f in out.glob(pattern))

    return {"warm_start_s": total("*/sft.json", "seconds"),
            "start_eval_s": total("start/eval-seed-*.json", "time/eval_s")}


def _blame(out: Path, algos: list[str]) -> dict[str, Any] | None:
    trials = rollout_trials(out / "depgpo") if "depgpo" in algos else []
    return blame_split(tally(trials)) if trials else None


def _config(out: Path) -> Any:
    """The BenchConfig as bench.json holds it (a report rewritten from a bench directory)."""
    from .protocol import BenchConfig

    data = json.loads((out / "bench.json").read_text())
    known = BenchConfig.__dataclass_fields__
    return BenchConfig(**{k: v for k, v in data.items() if k in known})


def write_report(out: Path, cfg: Any = None, n_boot: int = stats_.N_BOOT) -> dict[str, Any]:
    """summary.json, curves.png, REPORT.md and report.html in ``out``; ``cfg`` (a
    BenchConfig) defaults to the one in ``out/bench.json``."""
    cfg = cfg if cfg is not None else _config(out)
    runs = load_runs(out, cfg.algos, cfg.seeds)
    summary = summarize(out, cfg.algos, cfg.seeds, runs)
    ratio, why = threshold_ratio(summary)
    start = out / "start" / "start-stats.json"
    doc = {"config": asdict(cfg), "hardware": _hardware(), **_shared_seconds(out),
           "seeds": cfg.seeds, "evaluation": eval_kind(cfg), "algorithms": summary,
           "comparisons": {**compare(runs, n_boot=n_boot),
                           "by_task": task_diffs(runs, n_boot=n_boot)},
           "start": json.loads(start.read_text()) if start.is_file() else None,
           "depgpo_blame": _blame(out, cfg.algos),
           "efficiency": bench_efficiency(out, cfg.algos, cfg.seeds, cfg.tasks),
           "warm_start": warm_comparison(out, getattr(cfg, "warm_demos", "noisy"), cfg.seeds,
                                         n_boot),
           "updates_ratio_grpo_over_depgpo": ratio, "updates_ratio_note": why,
           "time_total_s": {k: sum(r["time_s"][k] for r in summary.values())
                            for k in TIME_NAMES}}
    (out / "summary.json").write_text(json.dumps(doc, indent=2))
    plot_curves(summary, out / "curves.png", f"termcredit bench ({cfg.tier} tier, {cfg.model})",
                "held-out evaluation" + (" (sampled)" if cfg.eval_temperature else ""))
    plot_efficiency(doc["efficiency"], out / "efficiency.png",
                    f"learning efficiency ({cfg.tier} tier, {cfg.model}): training rollouts")
    md = _markdown(doc, cfg)
    (out / "REPORT.md").write_text(md)
    graphs = _graphs(out, [Path(t).name for t in cfg.tasks])
    (out / "report.html").write_text(_html(doc, md, graphs))
    return doc


def _ci(d: dict[str, Any] | None) -> str:
    return "—" if d is None else stats_.PairedDiff(
        **{k: d[k] for k in ("estimate", "lo", "hi", "se", "seeds", "units", "level")}).text()


MAIN_HEAD = ["algorithm", "final success (mean over seeds)", "Δ vs depgpo [95% CI]", "AUC",
             "ΔAUC [95% CI]", "zero-credit steps", "steps/success", "tokens/success",
             "fallback rate", "infra rate"]


def _main_table(doc: dict[str, Any]) -> list[list[str]]:
    """Δ = depgpo − algorithm for baselines, variant − depgpo for DepGPO's ablations (other
    algorithms' variants keep depgpo − variant here; their own Δ has a section)."""
    cmp_ = doc["comparisons"]
    diffs = {**cmp_.get("ablations", {}), **cmp_.get("baselines", {})}
    rows = []
    for algo, r in doc["algorithms"].items():
        c, d = r["credit"], diffs.get(algo, {})
        rows.append([algo, cell(r["final_success_mean"] if r["final_source"] else None),
                     _ci(d.get("final")), cell(r["auc_mean"]), _ci(d.get("auc")),
                     cell(c.get("credit/zero_credit_step_frac")),
                     cell(c.get("credit/steps_per_success"), ".2f"),
                     cell(c.get("credit/tokens_per_success"), ".0f"),
                     cell(c.get("credit/fallback_rate")), cell(c.get("credit/infra_rate"))])
    return rows


def _legacy_table(doc: dict[str, Any]) -> list[list[str]]:
    rows = []
    for algo, r in doc["algorithms"].items():
        t, hit, ev = r["time_s"], r["updates_to_grpo_final"], r["final_eval"]
        rows.append([algo, f"{r['final_success_mean']:.3f} ± {r['final_success_std']:.3f}",
                     "never" if hit is None else str(hit),
                     f"{t['rollout_s']:.0f} / {t['credit_s']:.1f} / {t['update_s']:.0f} / "
                     f"{t['eval_s']:.0f}",
                     ", ".join(f"{k} {v:.2f}" for k, v in r["credit_stats"].items()),
                     str(r.get("infra_episodes", 0)),
                     f"{ev['episodes']} / {ev['infra_episodes']}",
                     f"{cell(ev['steps_per_success'], '.2f')} / "
                     f"{cell(ev['tokens_per_success'], '.0f')}"])
    return rows


LEGACY_HEAD = ["algorithm", "final success (mean ± std)", "updates to GRPO final",
               "time s: rollout / credit / update / eval", "estimator statistics",
               "training infra failures (left out)", "final eval episodes / infra",
               "final eval steps / tokens per success"]


def _cell(text: str) -> str:
    """Run text as plain table text: only what would break the table is escaped."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows])


def _fallbacks(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    keys = sorted({k for r in doc["algorithms"].values() for k in r["credit"]
                   if k.startswith("credit/fallback/")})
    return (["algorithm"] + [k.removeprefix("credit/fallback/") for k in keys],
            [[a] + [cell(r["credit"].get(k)) for k in keys] for a, r in doc["algorithms"].items()]
            if keys else [])


def _by_task(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    tasks = sorted({t for r in doc["algorithms"].values() for t in r["final_by_task"]})
    return (["algorithm"] + tasks, [[a] + [cell(r["final_by_task"].get(t)) for t in tasks]
                                    for a, r in doc["algorithms"].items()] if tasks else [])


def _mde_lines(doc: dict[str, Any]) -> list[str]:
    m = doc["comparisons"].get("mde")
    if not m or not m["episodes_per_algorithm"]:
        return ["No per-episode final evaluation (eval-final.jsonl) in this run: no "
                "confidence intervals for final success and no detectable-difference estimate."]
    a0 = m["apriori_p05"]
    lines = [f"Smallest detectable difference (two-sided 95%, power 80%): {m['formula']}; SE = "
             "standard deviation of the paired bootstrap differences of final success. "
             + (f"Median over baselines: **{m['bootstrap_median']:.3f}**. "
                if m["bootstrap_median"] is not None else ""),
             f"A priori, for p = 0.5 with {m['episodes_per_algorithm']} paired episodes per "
             f"algorithm ({m['seeds']} seeds): {m['apriori_formula']} = **{a0:.3f}**, so a 0.10 "
             f"difference in final success is {'' if a0 <= 0.10 else 'not '}detectable "
             "(episode noise only; seed-to-seed variance adds to it)."]
    return ["", *lines]


def _groups(cfg: Any) -> str:
    """An update's rollouts in words: one group per task (or per the tasks of the step)."""
    per = getattr(cfg, "tasks_per_step", 1) or len(cfg.tasks)
    return (f"{cfg.group_size} episodes" if per == 1
            else f"{per} groups (tasks) × {cfg.group_size} episodes")


def _optimizer(cfg: Any) -> str:
    """The optimizer, where a tier says it (AdamW with clipping at 1 otherwise)."""
    name, clip = getattr(cfg, "optimizer", "adamw"), getattr(cfg, "max_grad_norm", 1.0)
    if name == "adamw" and clip == 1.0:
        return ""
    return f" ({'SGD' if name == 'sgd' else 'AdamW'}, " + (
        f"gradient norm clipped at {clip:g})" if clip else "no gradient clipping)")


def _markdown(doc: dict[str, Any], cfg: Any) -> str:
    cmp_ = doc["comparisons"]
    lines = ["# termcredit bench report", "",
             f"Tier **{cfg.tier}**, policy `{cfg.model}`, tasks: "
             + ", ".join(Path(t).name for t in cfg.tasks) + ".",
             f"Seeds {cfg.seeds}; {cfg.steps} updates, each of {_groups(cfg)}; "
             f"learning rate {cfg.lr:g}{_optimizer(cfg)} for every algorithm; evaluation on "
             f"held-out instances "
             f"{cfg.eval_instances} ({doc['evaluation']}). Same starting checkpoint, same "
             "budgets, no per-algorithm tuning.", f"Hardware: {doc['hardware']}.", ""]
    start = doc["start"] or {}
    if start:
        nonfb = start.get("non_fallback")
        lines += [f"Start checkpoint (held-out, {sum(start.get('episodes_per_seed', [])):.0f} "
                  f"episodes): success {start['success']:.3f} (aim 0.2–0.5)"
                  + ("" if nonfb is None else
                     f", DepGPO non-fallback {nonfb:.3f} (aim ≥ 0.5: trajectories with ≥ 2 "
                     "traced steps of different credit)") + ".", ""]
    temp = getattr(cfg, "rollout", {}).get("temperature", 1.0)
    lines += [f"AUC: mean over updates of the training-rollout success rate (temperature "
              f"{temp:g}). "
              "Δ: DepGPO minus the algorithm (for DepGPO's variants: variant minus DepGPO), "
              f"paired bootstrap over seeds and, within each, episode slots (AUC: update "
              f"indices), {cmp_.get('n_boot', 0)} resamples. Zero-credit steps, steps/tokens per "
              "success, fallback and infra rates: the training rollouts' credit/* metrics, "
              "mean over updates, then over seeds.", ""]
    lines += _md_table(MAIN_HEAD, _main_table(doc))
    lines += _mde_lines(doc)
    said = [e["sentence"] for e in cmp_.get("baselines", {}).values()]
    lines += ["", "## DepGPO against each baseline", ""]
    if cmp_.get("reference", "depgpo") != "depgpo":
        lines += [f"DepGPO here is `{cmp_['reference']}`: the tier runs no plain depgpo.", ""]
    lines += [f"- {s}" for s in said] or [cmp_.get("note", "No baseline in this run.")]
    if cmp_.get("ablations"):
        lines += ["", "## Variants (variant − its plain algorithm)", ""]
        lines += [f"- {e['sentence']}" for e in cmp_["ablations"].values()]
    lines += ceiling_lines(cmp_.get("captured"), cmp_.get("captured_variants"),
                           cmp_.get("ceiling_candidates"))
    lines += by_task_lines(cmp_.get("by_task") or {})
    lines += efficiency_lines(doc.get("efficiency"), _md_table)
    lines += warm_lines(doc.get("warm_start"), _md_table)
    for title, (head, rows), none in (
            ("Fallback reasons (fraction of trajectories)", _fallbacks(doc),
             "No credit/fallback/<reason> metrics in this run."),
            ("Final success by task (episodes pooled over seeds)", _by_task(doc),
             "No per-episode final evaluation in this run.")):
        lines += ["", f"## {title}", ""] + (_md_table(head, rows) if rows else [none])
    ratio, tt = doc["updates_ratio_grpo_over_depgpo"], doc["time_total_s"]
    lines += ["", "## Costs", ""] + _md_table(LEGACY_HEAD, _legacy_table(doc))
    lines += ["", "Updates to reach GRPO's final success, GRPO ÷ DepGPO: "
              + (f"**{ratio:.2f}**" if ratio is not None else "**undefined**")
              + f" ({doc['updates_ratio_note']}).",
              "", f"Wall time: warm start (SFT of the start and teacher checkpoints) "
              f"{doc['warm_start_s']:.0f} s, shared start evaluation {doc['start_eval_s']:.0f} s; "
              f"over all runs rollout {tt['rollout_s']:.0f} s, "
              f"credit {tt['credit_s']:.1f} s, update {tt['update_s']:.0f} s, "
              f"evaluation {tt['eval_s']:.0f} s."]
    lines += ["", "## Where DepGPO does not win"]
    not_better = [a for a, e in cmp_.get("baselines", {}).items()
                  if not (e["final"] and e["final"]["lo"] > 0)]
    if cmp_.get("baselines"):
        lines.append("DepGPO is not better in final success, at 95%, than: "
                     + (", ".join(not_better) if not_better else "none of the baselines") + ".")
    blame = blame_lines(doc.get("depgpo_blame"))
    lines += [""] + blame if blame else []
    if len(cfg.seeds) < 3:
        lines.append(f"With {len(cfg.seeds)} seed(s) and {cfg.steps} updates, differences of a "
                     "few episodes are within noise: this tier checks that the protocol runs and "
                     "shows tendencies, never a claim.")
    lines += ["", "Repeatability: sampling, data order, initial weights and evaluation are "
              "seeded and the CPU kernels are deterministic, so the same command on the same "
              "machine gives the same numbers as long as every observation is the same. Real "
              "commands can break that: a command that hits its wall-clock timeout at a "
              "different point, or a pipeline whose stages write to the shared stderr in a "
              "different order, changes an observation, and from there that episode samples "
              "other tokens.",
              "", "![curves](curves.png)", ""]
    return "\n".join(lines) + "\n"


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    return ("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                      for row in rows) + "</table>")


def _html(doc: dict[str, Any], md: str, graphs: dict[str, str]) -> str:
    cmp_ = doc["comparisons"]
    said = "".join(f"<li>{html.escape(e['sentence'])}</li>" for part in ("baselines",
                   "ablations") for e in cmp_.get(part, {}).values())
    notes = "".join(f"<p>{html.escape(ln)}</p>" for ln in md.split("## Where DepGPO does not win")
                    [-1].splitlines() if ln.strip() and not ln.startswith("!["))
    pics = "".join(f"<h3>{html.escape(t)}</h3>{svg}" for t, svg in graphs.items()) or \
        "<p>No successful DepGPO rollout to draw.</p>"
    extra = "".join(f"<h2>{html.escape(t)}</h2>{_html_table(*tr)}" for t, tr in
                    (("Fallback reasons", _fallbacks(doc)), ("Final success by task",
                                                             _by_task(doc))) if tr[1])
    return ("<!doctype html><html><head><meta charset='utf-8'><title>termcredit bench</title>"
            "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:"
            "collapse}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}svg{max-width:"
            "100%;height:auto}</style></head><body><h1>termcredit bench</h1>"
            f"<p>{html.escape(doc['hardware'])}</p>{_html_table(MAIN_HEAD, _main_table(doc))}"
            f"<ul>{said}</ul>{extra}<h2>Costs</h2>{_html_table(LEGACY_HEAD, _legacy_table(doc))}"
            "<h2>Learning curves</h2><img src='curves.png' alt='success vs updates'>"
            f"<h2>Where DepGPO does not win</h2>{notes}<h2>Dependency graphs</h2>{pics}"
            "</body></html>")
