"""The viewer's page of one trial: facts, instruction, verifier, provenance findings, the step
table (each command verbatim with its DepGPO credit), the dependency graph, then every step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..records import VerifierReport
from .credit import TrialCredit
from .html import dl, e, fmt, markers, page, pre
from .load import TrialRow, integrity, read_json

TAIL_CHARS = 4000  # verifier stdout/stderr tail shown


def _tail(path: Path, fallback: str) -> str:
    text = path.read_text(errors="replace") if path.is_file() else fallback
    return text if len(text) <= TAIL_CHARS else "[…]" + text[-TAIL_CHARS:]


def graph_svg(r: TrialRow, credit: TrialCredit, dot_ok: bool) -> str:
    """The dependency graph drawn by Graphviz, inline (or a note saying why not)."""
    if not dot_ok:
        return "<p class='note'>Graphviz <code>dot</code> is not installed: graph skipped.</p>"
    if credit.graph is None:
        return "<p class='note'>no dependency graph</p>"
    try:
        from ..depgpo.render import render

        assert r.traj is not None
        svg = render(credit.graph, "svg", title=f"{r.traj.task} — reward {fmt(r.reward)}"
                     ).decode("utf-8", errors="replace")
    except Exception as exc:
        return f"<p class='note'>no dependency graph: {e(type(exc).__name__)}: {e(exc)}</p>"
    svg = svg[svg.find("<svg"):] if "<svg" in svg else ""  # drop the XML prolog / DOCTYPE
    return f"<div class='graph'>{svg}</div>"


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
                         ("integrity", integrity(r.traj))):
        if items:
            out.append(f"<div class='note'>{e(label)}</div><ul>"
                       + "".join(f"<li>{e(x)}</li>" for x in items) + "</ul>")
    return "".join(out)


def _verifier(r: TrialRow, v: VerifierReport | None) -> list[str]:
    if v is None:
        return ["<p class='muted'>the verifier did not run</p>"]
    paths = r.paths
    out = [dl([("reward", fmt(v.reward)), ("metrics", json.dumps(v.rewards)),
               ("exit code", v.exit_code), ("timed out", v.timed_out),
               ("duration", f"{v.duration_s:.2f}s"), ("error", v.error or "–")])]
    resj = read_json(paths.resources)
    cleaned = resj.get("cleaned", v.resources) if isinstance(resj, dict) else v.resources
    out.append("<div class='muted'>verifier resources (cleaned)</div>" + (
        "<ul>" + "".join(f"<li><code>{e(p)}</code></li>" for p in cleaned) + "</ul>"
        if cleaned else "<p class='muted'>none</p>"))
    out.append(pre(_tail(paths.test_stdout, v.stdout), "stdout (tail)")
               + pre(_tail(paths.test_stderr, v.stderr), "stderr (tail)"))
    return out


def _step_table(r: TrialRow, credit: TrialCredit) -> str:
    """One row per step: its command verbatim (escaped, never shortened) and its credit."""
    assert r.traj is not None
    rows = credit.steps
    hc = ["credit", "weight", "classes"] if rows else []
    out = [(f"<p class='note'>{e(credit.note)}</p>" if credit.note else "")
           + "<table class='steps'><tr>"
           + "".join(f"<th>{h}</th>" for h in ["#", "command", "exit", "time", *hc]) + "</tr>"]
    for s in r.traj.steps:
        c, cr = s.command, rows.get(s.index)
        cells = [f"<td><a href='#step-{s.index}'>{s.index}</a></td>",
                 f"<td class='cmd'><code>{e(c.command if c else s.action)}</code></td>",
                 f"<td>{e(c.exit_code if c else '–')}</td>",
                 f"<td>{e(f'{c.duration_s:.2f}s' if c else '–')}</td>"]
        if rows:
            values = ([fmt(cr["credit"]), fmt(cr["weight"]), ", ".join(cr["classes"])]
                      if cr else ["–"] * 3)
            cells += [f"<td class='{k}'>{e(x)}</td>"
                      for k, x in zip(("credit", "weight", "classes"), values)]
        out.append(f"<tr id='row-{s.index}'>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</table>"


def _step_block(s: Any, cr: dict[str, Any] | None) -> str:
    c = s.command
    head = [f"step {s.index}"]
    if c:
        head += [f"exit {c.exit_code}", f"{c.duration_s:.2f}s"] + [
            f for f, on in (("timed out", c.timed_out), ("output truncated",
                            c.output_truncated), ("shell restarted", c.shell_restarted)) if on]
    head += ["invalid action"] if s.invalid else []
    if cr:
        head.append(f"credit {fmt(cr['credit'])} · weight {fmt(cr['weight'])}"
                    + (f" · {', '.join(cr['classes'])}" if cr["classes"] else ""))
    out = [f"<div class='step' id='step-{s.index}'><h3>{e(' · '.join(head))}</h3>"]
    if c is None or s.action.strip() != c.command.strip():
        out.append(pre(s.action, "action"))
    if c is not None:
        out.append(f"<div class='muted'>command</div><pre>{e(c.command)}</pre>")
        out.append(pre(c.stdout, "stdout") + pre(c.stderr, "stderr"))
        acc = c.accesses
        if acc is not None:
            kinds = ("read", "written", "deleted", "temporary", "executed", "listed", "meta")
            rows = "".join(f"<tr><th>{k}</th><td>{'<br>'.join(e(p) for p in sorted(ps))}"
                           "</td></tr>" for k in kinds if (ps := getattr(acc, k)))
            out.append(f"<details><summary>file accesses</summary><table>{rows}</table>"
                       "</details>" if rows else "<div class='muted'>no task file</div>")
    elif s.observation:
        out.append(pre(s.observation, "observation"))
    out.append("</div>")
    return "".join(out)


def trial_page(r: TrialRow, credit: TrialCredit, *, back: str, raw: str, graphs: bool,
               dot_ok: bool) -> str:
    """The page; ``back``: the index, ``raw``: the trial dir, both relative to the page."""
    t, paths = r.traj, r.paths
    assert t is not None
    raw_files = [paths.trajectory, paths.result, paths.graph, paths.error, paths.verifier_dir,
                 paths.trace_dir]
    links = [f"<a href='{e(quote(back))}'>← index</a>"] + [
        f"<a href='{e(quote(f'{raw}/{name}'))}'>{e(name)}</a>"
        for p in raw_files if p.exists()
        for name in [p.relative_to(paths.root).as_posix() + ("/" if p.is_dir() else "")]]
    badges = f" {markers(r.suspect, r.tampered)}" if r.suspect or r.tampered else ""
    body = [f"<p>{' · '.join(links)}</p><h1>{e(t.task)} <span class='muted'>{e(r.rel)}</span>"
            f"{badges}</h1>", dl([("agent", t.agent), ("reward", fmt(r.reward)),
                                  ("steps", len(t.steps)), ("termination", t.termination or "–"),
                                  ("error", r.error or "–"),
                                  *((k, json.dumps(v)) for k, v in t.info.items())])]
    body.append(f"<h2>Instruction</h2><pre>{e(t.instruction)}</pre><h2>Verifier</h2>")
    body += _verifier(r, t.verifier)
    body.append(_provenance(r, t.verifier))
    body.append("<h2>Steps</h2>" + _step_table(r, credit))
    if graphs and credit.steps:
        body.append("<h2>Dependency graph</h2>" + graph_svg(r, credit, dot_ok))
    body += [_step_block(s, credit.steps.get(s.index)) for s in t.steps]
    return page(f"{t.task} — {r.rel}", "\n".join(body))
