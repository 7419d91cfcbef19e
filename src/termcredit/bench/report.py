"""The bench report: summary.json, curves.png, report.html and REPORT.md in the bench dir."""

from __future__ import annotations

import html
import json
import os
import platform
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..trialdir import TrialPaths, load_trajectory

KEYS_TIME = ("time/rollout_s", "time/credit_s", "time/update_s", "time/eval_s")
TIME_NAMES = tuple(k.split("/")[1] for k in KEYS_TIME)  # rollout_s, ... in summary.json
CREDIT_STATS = {
    "zero_credit_step_frac": "estimator/zero_credit_step_frac",
    "fallback_rate": "estimator/fallback_rate",
    "zero_advantage_group": "zero_advantage_group",
    "singleton_anchor_ratio": "estimator/singleton_anchor_ratio",
}


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] \
        if path.is_file() else []


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


def summarize(out: Path, algos: list[str], seeds: list[int]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for algo in algos:
        curves, finals, aucs, times, stats = [], [], [], {k: 0.0 for k in KEYS_TIME}, {}
        infra = 0  # episodes lost to infrastructure failures (left out of training)
        for seed in seeds:
            rows = _rows(out / algo.replace("+", "_plus_") / f"seed-{seed}")
            curve = _curve(rows)
            if not curve:
                continue
            curves.append(curve)
            finals.append(curve[-1][1])
            aucs.append(_auc(curve))
            for r in rows:
                for k in KEYS_TIME:
                    times[k] += r.get(k, 0.0)
                infra += int(r.get("infra_episodes", 0))
            for name, key in CREDIT_STATS.items():
                vals = [r[key] for r in rows if key in r]
                if vals:
                    stats.setdefault(name, []).extend(vals)
        mean_curve = [(x, statistics.mean(c[i][1] for c in curves))
                      for i, (x, _) in enumerate(curves[0])] if curves else []
        result[algo] = {
            "final_success_mean": _ms(finals)[0], "final_success_std": _ms(finals)[1],
            "auc_mean": _ms(aucs)[0], "auc_std": _ms(aucs)[1], "seeds": len(curves),
            "curve": mean_curve, "curves": curves,
            "time_s": dict(zip(TIME_NAMES, times.values())),
            "credit_stats": {k: statistics.mean(v) for k, v in stats.items()},
            "infra_episodes": infra,
        }
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


def _plot(summary: dict[str, Any], path: Path, title: str, ylabel: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    # curves often coincide (same start, shared evaluation seeds): distinct markers and dashes
    # keep every algorithm visible where lines overlap
    styles = zip("osD^vP*X", ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1))] * 2)
    for (algo, r), (marker, dash) in zip(summary.items(), styles):
        if not r["curve"]:
            continue
        xs = [x for x, _ in r["curve"]]
        ys = [y for _, y in r["curve"]]
        ax.plot(xs, ys, marker=marker, linestyle=dash, label=algo, markersize=7, alpha=0.85,
                markerfacecolor="none", linewidth=2 if "depgpo" in algo else 1.3)
        if len(r["curves"]) > 1:
            sd = [statistics.pstdev(c[i][1] for c in r["curves"]) for i in range(len(xs))]
            ax.fill_between(xs, [y - s for y, s in zip(ys, sd)], [y + s for y, s in zip(ys, sd)],
                            alpha=0.15)
    ax.set_xlabel("updates")
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


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
    for trial in sorted((out / "depgpo").glob("seed-*/rollouts/*/*/*/")):
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


def write_report(out: Path, cfg: Any) -> dict[str, Any]:
    summary = summarize(out, cfg.algos, cfg.seeds)
    hardware = _hardware()
    ratio, why = threshold_ratio(summary)
    doc = {"config": asdict(cfg), "hardware": hardware, **_shared_seconds(out),
           "seeds": cfg.seeds, "evaluation": eval_kind(cfg), "algorithms": summary,
           "updates_ratio_grpo_over_depgpo": ratio, "updates_ratio_note": why,
           "time_total_s": {k: sum(r["time_s"][k] for r in summary.values())
                            for k in TIME_NAMES}}
    (out / "summary.json").write_text(json.dumps(doc, indent=2))
    _plot(summary, out / "curves.png", f"termcredit bench ({cfg.tier} tier, {cfg.model})",
          "held-out success" + (" (sampled)" if cfg.eval_temperature else ""))
    md = _markdown(doc, cfg)
    (out / "REPORT.md").write_text(md)
    (out / "report.html").write_text(_html(doc, md, _graphs(out, [Path(t).name for t in cfg.tasks])))
    return doc


def _table(doc: dict[str, Any]) -> list[list[str]]:
    rows = []
    for algo, r in doc["algorithms"].items():
        t, hit = r["time_s"], r["updates_to_grpo_final"]
        rows.append([algo, f"{r['final_success_mean']:.3f} ± {r['final_success_std']:.3f}",
                     f"{r['auc_mean']:.3f}", "never" if hit is None else str(hit),
                     f"{t['rollout_s']:.0f} / {t['credit_s']:.1f} / {t['update_s']:.0f} / "
                     f"{t['eval_s']:.0f}",
                     ", ".join(f"{k} {v:.2f}" for k, v in r["credit_stats"].items()),
                     str(r.get("infra_episodes", 0))])
    return rows


def _markdown(doc: dict[str, Any], cfg: Any) -> str:
    head = ["algorithm", "final held-out success (mean ± std)", "AUC", "updates to GRPO final",
            "time s: rollout / credit / update / eval", "credit statistics",
            "infra failures (left out)"]
    lines = ["# termcredit bench report", "",
             f"Tier **{cfg.tier}**, policy `{cfg.model}`, tasks: "
             + ", ".join(Path(t).name for t in cfg.tasks) + ".",
             f"Seeds {cfg.seeds}; {cfg.steps} updates of {cfg.group_size} episodes each; "
             f"learning rate {cfg.lr:g} for every algorithm; evaluation before training and every "
             f"{cfg.eval_every} updates on held-out instances {cfg.eval_instances} "
             f"({doc['evaluation']}). Same starting checkpoint, same budgets, "
             "no per-algorithm tuning.", f"Hardware: {doc['hardware']}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in _table(doc)]
    algos = doc["algorithms"]
    ratio = doc["updates_ratio_grpo_over_depgpo"]
    tt = doc["time_total_s"]
    lines += ["", "Updates to reach GRPO's final success, GRPO ÷ DepGPO: "
              + (f"**{ratio:.2f}**" if ratio is not None else "**undefined**")
              + f" ({doc['updates_ratio_note']}).",
              "", f"Wall time: warm start (SFT of the start and teacher checkpoints) "
              f"{doc['warm_start_s']:.0f} s, shared start evaluation {doc['start_eval_s']:.0f} s; "
              f"over all runs rollout {tt['rollout_s']:.0f} s, "
              f"credit {tt['credit_s']:.1f} s, update {tt['update_s']:.0f} s, "
              f"evaluation {tt['eval_s']:.0f} s."]
    dep = algos.get("depgpo")
    lines += ["", "## Where DepGPO does not win"]
    if dep:
        worse = [a for a, r in algos.items() if a != "depgpo" and
                 (r["final_success_mean"] >= dep["final_success_mean"] or
                  r["auc_mean"] >= dep["auc_mean"])]
        lines.append("DepGPO is matched or beaten (final success or AUC) by: "
                     + (", ".join(worse) if worse else "none of the baselines in this run") + ".")
    if cfg.eval_temperature:
        lines.append("Evaluation episodes use the same sampling seeds for every algorithm (a "
                     "paired comparison): where two policies still sample the same actions, "
                     "their points coincide, and a gap of one episode is the smallest "
                     "difference the table can show.")
    if len(cfg.seeds) < 3:
        lines.append(f"With {len(cfg.seeds)} seed(s) and {cfg.steps} updates, differences of a "
                     "few episodes are within noise: this tier checks that the protocol runs and "
                     "shows tendencies; use `--tier full` for claims.")
    lines += ["", "Repeatability: sampling, data order, initial weights and evaluation are "
              "seeded and the CPU kernels are deterministic, so the same command on the same "
              "machine gives the same numbers as long as every observation is the same. Real "
              "commands can break that: a command that hits its wall-clock timeout at a "
              "different point, or a pipeline whose stages write to the shared stderr in a "
              "different order, changes an observation, and from there that episode samples "
              "other tokens.",
              "", "![curves](curves.png)", ""]
    return "\n".join(lines) + "\n"


def _html(doc: dict[str, Any], md: str, graphs: dict[str, str]) -> str:
    head = ["algorithm", "final success", "AUC", "updates to GRPO final",
            "time s (rollout/credit/update/eval)", "credit statistics",
            "infra failures (left out)"]
    table = "<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in _table(doc)) + "</table>"
    notes = "".join(f"<p>{html.escape(ln)}</p>" for ln in md.split("## Where DepGPO does not win")
                    [-1].splitlines() if ln.strip() and not ln.startswith("!["))
    pics = "".join(f"<h3>{html.escape(t)}</h3>{svg}" for t, svg in graphs.items()) or \
        "<p>No successful DepGPO rollout to draw.</p>"
    return ("<!doctype html><html><head><meta charset='utf-8'><title>termcredit bench</title>"
            "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:"
            "collapse}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}svg{max-width:"
            "100%;height:auto}</style></head><body><h1>termcredit bench</h1>"
            f"<p>{html.escape(doc['hardware'])}</p>{table}<h2>Learning curves</h2>"
            "<img src='curves.png' alt='success vs updates'><h2>Where DepGPO does not win</h2>"
            f"{notes}<h2>Dependency graphs</h2>{pics}</body></html>")
