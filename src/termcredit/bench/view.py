"""`termcredit view`: a static HTML site (no JS, no network) of a `termcredit run` directory
(result.json + <task>/attempt-<k>/) or a training run (metrics.jsonl + rollouts/step-N/.../g<k>/);
trial dirs are found by their trajectory.json. Writes OUT/index.html and OUT/trials/<slug>.html."""

from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..records import Trajectory, VerifierReport, load_json

LONG_LINES, LONG_CHARS = 15, 1500  # output beyond either is collapsed into <details>
TAIL_CHARS = 4000  # verifier stdout/stderr tail shown

STYLE = """body{font-family:system-ui,sans-serif;margin:1.2em 2em;color:#222;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.4em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f4f4f4}summary{cursor:pointer;color:#555}
pre{background:#f7f7f7;border:1px solid #e3e3e3;padding:6px 8px;font-size:12px;margin:4px 0;
white-space:pre-wrap;word-break:break-all}.ok{color:#1a7f37}.bad{color:#c62828}.muted{color:#777}
.note{color:#8a6d00}.step{border:1px solid #ddd;border-radius:4px;padding:6px 10px;margin:10px 0}
.step h3{font-size:1em;margin:2px 0 6px}svg{max-width:100%;height:auto}dd{margin:0}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:600}"""


def e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _page(title: str, body: str) -> str:
    return (f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def _fmt(x: Any, nd: int = 3) -> str:
    return "–" if x is None else f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def _pre(text: str, label: str) -> str:
    """Escaped output; long text collapsed into <details>."""
    if not text:
        return f"<div class='muted'>{e(label)}: (empty)</div>"
    n_lines = text.count("\n") + 1
    if n_lines > LONG_LINES or len(text) > LONG_CHARS:
        return (f"<details><summary>{e(label)} ({n_lines} lines, {len(text)} chars)</summary>"
                f"<pre>{e(text)}</pre></details>")
    return f"<div class='muted'>{e(label)}</div><pre>{e(text)}</pre>"


def _natural(s: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


@dataclass
class TrialRow:  # one line of the index; rel: the trial dir relative to the run dir
    rel: str
    dir: Path | None
    task: str
    label: str  # attempt-<k> / g<k>
    step: int | None  # training step, from step-N in the path
    reward: float | None = None
    n_steps: int | None = None
    termination: str = ""
    error: str | None = None
    traj: Trajectory | None = None
    page: str | None = None  # relative to OUT
    suspect: bool = False  # the verifier ran or loaded toolchain files the agent made
    tampered: bool = False  # tampering or integrity problems were recorded


def find_trial_dirs(run_dir: Path, skip: Path | None = None) -> list[Path]:
    """Every directory under run_dir holding a trajectory.json (not inside ``skip``, nor inside
    another trial dir: its verifier/ output is the task's, not a trial)."""
    found = []
    skip_r = skip.resolve() if skip else None
    for root, dirs, files in os.walk(run_dir):
        here = Path(root)
        dirs[:] = [] if "trajectory.json" in files else [
            d for d in dirs if not d.startswith(".") and d != "__pycache__"
            and (skip_r is None or (here / d).resolve() != skip_r)]
        if "trajectory.json" in files:
            found.append(here)
    return sorted(found, key=lambda p: _natural(p.relative_to(run_dir).as_posix()))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _trial_error(d: Path, traj: Trajectory | None) -> str | None:
    res = _read_json(d / "result.json")
    if isinstance(res, dict) and res.get("error"):
        return str(res["error"])
    if traj is not None and traj.verifier is not None and traj.verifier.error:
        return traj.verifier.error
    if (d / "error.txt").is_file():
        lines = [ln for ln in (d / "error.txt").read_text(errors="replace").splitlines() if ln]
        return lines[-1] if lines else "error"
    return None


def load_trial(run_dir: Path, d: Path) -> TrialRow:
    rel = d.relative_to(run_dir).as_posix() if d != run_dir else "."
    m = re.search(r"(?:^|/)step-(\d+)(?:/|$)", rel)
    row = TrialRow(rel=rel, dir=d, task=d.parent.name, label=d.name,
                   step=int(m.group(1)) if m else None)
    try:
        traj = load_json(Trajectory, d / "trajectory.json")
    except (OSError, ValueError, TypeError, KeyError) as exc:
        row.error = f"unreadable trajectory.json: {exc}"
        return row
    traj.trial_dir = str(d)
    row.traj, row.task, row.n_steps = traj, traj.task, len(traj.steps)
    row.termination = traj.termination
    row.reward = traj.verifier.reward if traj.verifier else None
    if row.reward is None:
        res = _read_json(d / "result.json")
        if isinstance(res, dict) and isinstance(res.get("reward"), (int, float)):
            row.reward = float(res["reward"])
    row.error = _trial_error(d, traj)
    v, res = traj.verifier, _read_json(d / "result.json")
    row.suspect = bool(v and (v.suspect or v.suspect_files)) or (
        isinstance(res, dict) and res.get("suspect") is True)
    row.tampered = bool(_integrity(traj) or (v and v.tampering))
    return row


def _integrity(t: Trajectory) -> list[str]:
    """The episode's integrity problems, then each step's (prefixed with the step)."""
    out = list(t.integrity)
    for s in t.steps:
        out += [f"step {s.index}: {x}" for x in (s.command.integrity if s.command else [])
                if f"step {s.index}: {x}" not in out]
    return out


def _markers(r: TrialRow) -> str:
    """Index/heading badges: a suspect reward, recorded tampering."""
    out = []
    if r.suspect:
        out.append("<span class='bad' title='the verifier ran or loaded toolchain files an "
                   "agent process made'>suspect</span>")
    if r.tampered:
        out.append("<span class='note' title='tampering or integrity problems were "
                   "recorded'>tampering</span>")
    return " ".join(out)


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path, rows = run_dir / "metrics.jsonl", []
    for line in path.read_text(errors="replace").splitlines() if path.is_file() else []:
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a half-written last line
        if isinstance(r, dict) and isinstance(r.get("step"), int):
            rows.append(r)
    return rows


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


def _slug(rel: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", rel.replace("/", "__")).strip("_") or "trial"
    name, n = base, 1
    while name in used:
        name, n = f"{base}-{n}", n + 1
    used.add(name)
    return name


def build_index(run_dir: Path, rows: list[TrialRow], metrics: list[dict[str, Any]]) -> str:
    result = _read_json(run_dir / "result.json")
    result = result if isinstance(result, dict) else {}
    kind = "training run" if metrics or (run_dir / "metrics.jsonl").is_file() else (
        "termcredit run" if result else "trial directories")
    rewards = [r.reward for r in rows if r.reward is not None]
    mean = sum(rewards) / len(rewards) if rewards else None
    facts = [("kind", kind), ("directory", str(run_dir)), ("trials", len(rows)),
             ("tasks", len({r.task for r in rows})), ("mean reward", _fmt(mean)),
             ("reward ≥ 1", sum(r.reward is not None and r.reward >= 1 for r in rows)),
             ("errors", sum(r.error is not None for r in rows)),
             ("suspect rewards", sum(r.suspect for r in rows)),
             ("tampering recorded", sum(r.tampered for r in rows))]
    facts += [(k, result[k]) for k in ("agent", "run_id", "complete", "n_planned", "started",
                                       "finished") if k in result]
    if metrics:
        m = metrics[-1]
        facts += [("steps logged", len(metrics)), ("last step", f"{m['step']}: reward_mean "
                   f"{_fmt(m.get('reward_mean'))}, success_rate {_fmt(m.get('success_rate'))}")]
    body = [f"<h1>termcredit view — {e(run_dir.name)}</h1>" + _dl(facts) + _config_block(run_dir)]
    if metrics:
        body.append("<h2>Training curve</h2>" + line_chart(metrics))
        cols = [c for c in ("step", "task", "instance", "reward_mean", "success_rate", "loss",
                            "adv_abs_mean", "steps_per_episode", "eval/success")
                if any(c in m for m in metrics)]
        trs = "".join("<tr>" + "".join(f"<td>{e(_fmt(m.get(c)))}</td>" for c in cols) + "</tr>"
                      for m in metrics)
        body.append(f"<details><summary>metrics.jsonl ({len(metrics)} rows)</summary><table>"
                    "<tr>" + "".join(f"<th>{e(c)}</th>" for c in cols) + f"</tr>{trs}"
                    "</table></details>")
    training = any(r.step is not None for r in rows)
    head = ["trial"] + (["step"] if training else []) + ["task", "attempt/group", "reward",
                                                         "steps", "termination", "error"]
    body.append("<h2>Trials</h2><table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
    for r in rows:
        link = (f"<a href='{e(quote(r.page))}'>{e(r.rel)}</a>" if r.page else e(r.rel))
        cls = "ok" if r.reward is not None and r.reward >= 1 else "bad" if r.error else ""
        cells = [link] + ([e(_fmt(r.step))] if training else []) + [
            e(r.task), e(r.label), f"<span class='{cls}'>{e(_fmt(r.reward))}</span>"
            + (f" {_markers(r)}" if r.suspect or r.tampered else ""),
            e(_fmt(r.n_steps)), e(r.termination), f"<span class='bad'>{e(r.error or '')}</span>"]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    body.append("</table>" if rows else "</table><p class='muted'>no trials found</p>")
    return _page(f"termcredit view — {run_dir.name}", "\n".join(body))


def _tail(path: Path, fallback: str) -> str:
    text = path.read_text(errors="replace") if path.is_file() else fallback
    return text if len(text) <= TAIL_CHARS else "[…]" + text[-TAIL_CHARS:]


def _credit(r: TrialRow) -> tuple[dict[int, dict[str, Any]], str]:
    assert r.traj is not None  # per-step DepGPO rows (none without traced accesses), a note
    if not any(s.command is not None and s.command.accesses is not None for s in r.traj.steps):
        return {}, "no step has traced file accesses: no DepGPO credit"
    try:
        from ..depgpo.report import credit_report

        rep = credit_report(r.dir)
    except Exception as exc:  # a page without credit beats no page
        return {}, f"DepGPO credit unavailable: {type(exc).__name__}: {exc}"
    note = f"DepGPO fallback to unit weights: {rep['fallback']}" if rep["fallback"] else ""
    return {row["step"]: row for row in rep["steps"]}, note


def _graph(r: TrialRow, dot_ok: bool) -> str:
    if not dot_ok:
        return "<p class='note'>Graphviz <code>dot</code> is not installed: graph skipped.</p>"
    try:
        from ..depgpo.render import render
        from ..depgpo.report import analyse_trial, credit_rows

        assert r.traj is not None
        res = analyse_trial(r.dir)
        cmds = {s.index: (s.command.command if s.command else s.action) for s in r.traj.steps}
        svg = render(res.graph.graph, "svg", title=f"{r.traj.task} — reward {_fmt(r.reward)}",
                     rows=credit_rows(res, cmds)).decode("utf-8", errors="replace")
    except Exception as exc:
        return f"<p class='note'>no dependency graph: {e(type(exc).__name__)}: {e(exc)}</p>"
    return svg[svg.find("<svg"):] if "<svg" in svg else ""  # drop the XML prolog / DOCTYPE


def _dl(items: list[tuple[str, Any]]) -> str:
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items) + "</dl>"


def _provenance(r: TrialRow, v: VerifierReport | None) -> str:
    """The provenance audit's findings: suspect files, tampering, integrity (all escaped)."""
    assert r.traj is not None
    out = []
    if r.suspect and v is not None:
        policy = {"zero": "the reward was zeroed", "flag": "the reward was kept, flagged"}.get(
            v.on_suspect or "", "")
        out.append("<p class='bad'><b>suspect reward</b>: the verifier ran or loaded "
                   "toolchain files that an agent process created or modified"
                   + (f" ({e(policy)})" if policy else "") + "</p>")
        items = [f"<li><code>{e(f.get('path', '?'))}</code> — {e(f.get('reason', '?'))}</li>"
                 if isinstance(f, dict) else f"<li><code>{e(f)}</code></li>"
                 for f in v.suspect_files]
        out.append("<div class='muted'>suspect files</div>" + (
            f"<ul>{''.join(items)}</ul>" if items else "<p class='muted'>none listed</p>"))
    for label, items in (("tampering during verification", v.tampering if v else []),
                         ("integrity", _integrity(r.traj))):
        if items:
            out.append(f"<div class='note'>{e(label)}</div><ul>"
                       + "".join(f"<li>{e(x)}</li>" for x in items) + "</ul>")
    return "".join(out)


def trial_page(r: TrialRow, *, back: str, raw: str, graphs: bool, dot_ok: bool) -> str:
    t, d = r.traj, r.dir
    assert t is not None and d is not None
    links = [f"<a href='{e(quote(back))}'>← index</a>"] + [
        f"<a href='{e(quote(f'{raw}/{n}'))}'>{e(n)}</a>"
        for n in ("trajectory.json", "result.json", "graph.json", "error.txt", "verifier/",
                  "trace/") if (d / n).exists()]
    badges = f" {_markers(r)}" if r.suspect or r.tampered else ""
    body = [f"<p>{' · '.join(links)}</p><h1>{e(t.task)} <span class='muted'>{e(r.rel)}</span>"
            f"{badges}</h1>", _dl([("agent", t.agent), ("reward", _fmt(r.reward)),
                                   ("steps", len(t.steps)), ("termination", t.termination or "–"),
                                   ("error", r.error or "–"),
                                   *((k, json.dumps(v)) for k, v in t.info.items())])]
    body.append(f"<h2>Instruction</h2><pre>{e(t.instruction)}</pre><h2>Verifier</h2>")
    v = t.verifier
    if v is None:
        body.append("<p class='muted'>the verifier did not run</p>")
    else:
        body.append(_dl([("reward", _fmt(v.reward)), ("metrics", json.dumps(v.rewards)),
                         ("exit code", v.exit_code), ("timed out", v.timed_out),
                         ("duration", f"{v.duration_s:.2f}s"), ("error", v.error or "–")]))
        resj = _read_json(d / "verifier" / "resources.json")
        cleaned = resj.get("cleaned", v.resources) if isinstance(resj, dict) else v.resources
        body.append("<div class='muted'>verifier resources (cleaned)</div>" + (
            "<ul>" + "".join(f"<li><code>{e(p)}</code></li>" for p in cleaned) + "</ul>"
            if cleaned else "<p class='muted'>none</p>"))
        body.append(_pre(_tail(d / "verifier" / "test-stdout.txt", v.stdout), "stdout (tail)")
                    + _pre(_tail(d / "verifier" / "test-stderr.txt", v.stderr), "stderr (tail)"))
    body.append(_provenance(r, v))
    credit, note = _credit(r)
    hc = ["credit", "weight", "classes"] if credit else []
    body.append("<h2>Steps</h2>" + (f"<p class='note'>{e(note)}</p>" if note else "") +
                "<table><tr>" + "".join(f"<th>{h}</th>" for h in
                                        ["#", "command", "exit", "time", *hc]) + "</tr>")
    for s in t.steps:
        c, cr = s.command, credit.get(s.index)
        text = c.command if c else s.action
        short = " ".join(text.split())
        cells = [f"<a href='#step-{s.index}'>{s.index}</a>",
                 f"<code>{e(short if len(short) <= 90 else short[:89] + '…')}</code>",
                 e(c.exit_code if c else "–"), e(f"{c.duration_s:.2f}s" if c else "–")]
        if credit:
            cells += [e(_fmt(cr["credit"])), e(_fmt(cr["weight"])), e(", ".join(cr["classes"]))
                      ] if cr else ["–"] * 3
        body.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    body.append("</table>")
    if graphs and credit:
        body.append("<h2>Dependency graph</h2>" + _graph(r, dot_ok))
    for s in t.steps:
        c, cr = s.command, credit.get(s.index)
        head = [f"step {s.index}"]
        if c:
            head += [f"exit {c.exit_code}", f"{c.duration_s:.2f}s"] + [
                f for f, on in (("timed out", c.timed_out), ("output truncated",
                                c.output_truncated), ("shell restarted", c.shell_restarted)) if on]
        head += ["invalid action"] if s.invalid else []
        if cr:
            head.append(f"credit {_fmt(cr['credit'])} · weight {_fmt(cr['weight'])}"
                        + (f" · {', '.join(cr['classes'])}" if cr["classes"] else ""))
        body.append(f"<div class='step' id='step-{s.index}'><h3>{e(' · '.join(head))}</h3>")
        if c is None or s.action.strip() != c.command.strip():
            body.append(_pre(s.action, "action"))
        if c is not None:
            body.append(f"<div class='muted'>command</div><pre>{e(c.command)}</pre>")
            body.append(_pre(c.stdout, "stdout") + _pre(c.stderr, "stderr"))
            acc = c.accesses
            if acc is not None:
                rows = "".join(f"<tr><th>{k}</th><td>{'<br>'.join(e(p) for p in ps)}</td></tr>"
                               for k in ("read", "written", "deleted", "temporary", "executed",
                                         "listed", "meta") if (ps := getattr(acc, k)))
                body.append(f"<details><summary>file accesses</summary><table>{rows}</table>"
                            "</details>" if rows else "<div class='muted'>no task file</div>")
        elif s.observation:
            body.append(_pre(s.observation, "observation"))
        body.append("</div>")
    return _page(f"{t.task} — {r.rel}", "\n".join(body))


def build_view(run_dir: str | Path, out: str | Path | None = None, *,
               graphs: bool = True) -> Path:
    """Write the site; returns the path of index.html."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    out = Path(out) if out else run_dir / "view"
    dirs = find_trial_dirs(run_dir, skip=out)
    metrics = read_metrics(run_dir)
    result = _read_json(run_dir / "result.json")
    if not dirs and not metrics and not isinstance(result, dict):
        raise FileNotFoundError(f"{run_dir}: no trajectory.json, result.json or metrics.jsonl "
                                "(is it a `termcredit run` or `termcredit train` directory?)")
    rows = [load_trial(run_dir, d) for d in dirs]
    seen = {r.dir.resolve() for r in rows if r.dir}
    for t in result.get("trials", []) if isinstance(result, dict) else []:
        td = Path(t.get("trial_dir") or "-")  # as written: relative to where `run` ran
        if td.name and any(p.resolve() in seen for p in (td, run_dir / td.parent.name / td.name)):
            continue  # already listed through its trajectory.json
        rows.append(TrialRow(rel=f"{t.get('task')}/{td.name}", dir=None, task=str(t.get("task")),
                             label=td.name, step=None, reward=t.get("reward"),
                             n_steps=t.get("n_steps"), error=t.get("error"),
                             suspect=t.get("suspect") is True,
                             tampered=bool(t.get("integrity"))))
    (out / "trials").mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    dot_ok = graphs and shutil.which("dot") is not None
    for r in rows:
        if r.traj is None or r.dir is None:
            continue
        r.page = f"trials/{_slug(r.rel, used)}.html"
        back = os.path.relpath(out / "index.html", (out / r.page).parent)
        raw = os.path.relpath(r.dir, (out / r.page).parent)
        (out / r.page).write_text(trial_page(r, back=back, raw=raw, graphs=graphs,
                                             dot_ok=dot_ok), encoding="utf-8")
    (out / "index.html").write_text(build_index(run_dir, rows, metrics), encoding="utf-8")
    return out / "index.html"
