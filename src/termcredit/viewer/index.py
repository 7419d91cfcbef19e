"""The viewer's index page: the run's facts, a training run's curve and metrics, the trials."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .html import dl, e, fmt, markers, page
from .load import TrialRow

SERIES = (("reward_mean", "#1f77b4"), ("success_rate", "#ff7f0e"), ("eval/success", "#2ca02c"))


def line_chart(metrics: list[dict[str, Any]], series: tuple[tuple[str, str], ...] = SERIES,
               width: int = 640, height: int = 220) -> str:
    """A hand-drawn SVG line chart of per-step metrics (points carry <title> tooltips)."""
    pts = {k: [(r["step"], float(r[k])) for r in metrics
               if isinstance(r.get(k), (int, float)) and math.isfinite(r[k])] for k, _ in series}
    pts = {k: v for k, v in pts.items() if v}
    if not pts:
        return "<p class='muted'>no per-step metrics to plot</p>"
    xs = [x for v in pts.values() for x, _ in v]
    ys = [y for v in pts.values() for _, y in v]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(0.0, min(ys)), max(1.0, max(ys))
    ml, mr, mt, mb = 44, 130, 12, 30
    pw, ph = width - ml - mr, height - mt - mb
    X = lambda x: ml + (pw / 2 if x1 == x0 else (x - x0) / (x1 - x0) * pw)  # noqa: E731
    Y = lambda y: mt + ph - (y - y0) / (y1 - y0) * ph  # noqa: E731
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' role='img' aria-label='metrics per step' "
           "font-family='sans-serif' font-size='11'>",
           f"<rect x='{ml}' y='{mt}' width='{pw}' height='{ph}' fill='#fafafa' stroke='#ccc'/>"]
    for yv in sorted({y0, (y0 + y1) / 2, y1}):
        out.append(f"<line x1='{ml}' x2='{ml + pw}' y1='{Y(yv):.1f}' y2='{Y(yv):.1f}' "
                   f"stroke='#e5e5e5'/><text x='{ml - 6}' y='{Y(yv) + 4:.1f}' "
                   f"text-anchor='end'>{yv:g}</text>")
    for xv in sorted({x0, (x0 + x1) // 2, x1}):
        out.append(f"<text x='{X(xv):.1f}' y='{height - 12}' text-anchor='middle'>{xv}</text>")
    out.append(f"<text x='{ml + pw / 2:.1f}' y='{height - 1}' text-anchor='middle' "
               "fill='#777'>step</text>")
    for i, (k, color) in enumerate((k, c) for k, c in series if k in pts):
        v = pts[k]
        poly = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in v)
        out.append(f"<polyline fill='none' stroke='{color}' stroke-width='1.8' points='{poly}'/>")
        out += [f"<circle cx='{X(x):.1f}' cy='{Y(y):.1f}' r='2.6' fill='{color}'>"
                f"<title>{e(k)} step {x}: {y:.3f}</title></circle>" for x, y in v]
        ly = mt + 14 + 16 * i
        out.append(f"<line x1='{ml + pw + 10}' x2='{ml + pw + 28}' y1='{ly - 4}' "
                   f"y2='{ly - 4}' stroke='{color}' stroke-width='2'/>"
                   f"<text x='{ml + pw + 32}' y='{ly}'>{e(k)}</text>")
    out.append("</svg>")
    return "".join(out)


def _config_block(run_dir: Path) -> str:
    path = run_dir / "config.toml"
    text = path.read_text(errors="replace") if path.is_file() else ""
    return f"<details><summary>config.toml</summary><pre>{e(text)}</pre></details>" if text else ""


def _metrics_blocks(metrics: list[dict[str, Any]]) -> list[str]:
    cols = [c for c in ("step", "task", "instance", "reward_mean", "success_rate", "loss",
                        "adv_abs_mean", "steps_per_episode", "eval/success")
            if any(c in m for m in metrics)]
    trs = "".join("<tr>" + "".join(f"<td>{e(fmt(m.get(c)))}</td>" for c in cols) + "</tr>"
                  for m in metrics)
    return ["<h2>Training curve</h2>" + line_chart(metrics),
            f"<details><summary>metrics.jsonl ({len(metrics)} rows)</summary><table>"
            "<tr>" + "".join(f"<th>{e(c)}</th>" for c in cols) + f"</tr>{trs}</table></details>"]


def build_index(run_dir: Path, rows: list[TrialRow], metrics: list[dict[str, Any]],
                result: dict[str, Any]) -> str:
    """The index page; ``result``: the run's result.json ({} when there is none)."""
    kind = "training run" if metrics or (run_dir / "metrics.jsonl").is_file() else (
        "termcredit run" if result else "trial directories")
    rewards = [r.reward for r in rows if r.reward is not None]
    mean = sum(rewards) / len(rewards) if rewards else None
    facts = [("kind", kind), ("directory", str(run_dir)), ("trials", len(rows)),
             ("tasks", len({r.task for r in rows})), ("mean reward", fmt(mean)),
             ("reward ≥ 1", sum(r.reward is not None and r.reward >= 1 for r in rows)),
             ("errors", sum(r.error is not None for r in rows)),
             ("suspect rewards", sum(r.suspect for r in rows)),
             ("tampering recorded", sum(r.tampered for r in rows))]
    facts += [(k, result[k]) for k in ("agent", "run_id", "complete", "n_planned", "started",
                                       "finished") if k in result]
    if metrics:
        m = metrics[-1]
        facts += [("steps logged", len(metrics)), ("last step", f"{m['step']}: reward_mean "
                   f"{fmt(m.get('reward_mean'))}, success_rate {fmt(m.get('success_rate'))}")]
    body = [f"<h1>termcredit view — {e(run_dir.name)}</h1>" + dl(facts) + _config_block(run_dir)]
    if metrics:
        body += _metrics_blocks(metrics)
    training = any(r.step is not None for r in rows)
    head = ["trial"] + (["step"] if training else []) + ["task", "attempt/group", "reward",
                                                         "steps", "termination", "error"]
    body.append("<h2>Trials</h2><table class='trials'><tr>"
                + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
    for r in rows:
        link = (f"<a href='{e(quote(r.page))}'>{e(r.rel)}</a>" if r.page else e(r.rel))
        cls = "ok" if r.reward is not None and r.reward >= 1 else "bad" if r.error else ""
        cells = [link] + ([e(fmt(r.step))] if training else []) + [
            e(r.task), e(r.label), f"<span class='{cls}'>{e(fmt(r.reward))}</span>"
            + (f" {markers(r.suspect, r.tampered)}" if r.suspect or r.tampered else ""),
            e(fmt(r.n_steps)), e(r.termination), f"<span class='bad'>{e(r.error or '')}</span>"]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    body.append("</table>" if rows else "</table><p class='muted'>no trials found</p>")
    return page(f"termcredit view — {run_dir.name}", "\n".join(body))
