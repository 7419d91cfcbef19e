"""Draw a trial's dependency graph with Graphviz: commands in time order left to right,
coloured by credit; file versions beside them; verifier resources highlighted; one style per
edge kind; a legend. Formats: dot, svg, png (need the `dot` program), html (svg + a table)."""

from __future__ import annotations

import html
import posixpath
import shutil
import subprocess
from typing import Any

import networkx as nx

from ..rawtext import printable

EDGE_STYLE = {
    "read": 'color="#1f77b4", style=dashed',
    "write": 'color="#222222", penwidth=1.4',
    "derived": 'color="#8e44ad", style=bold',
    "tombstone": 'color="#999999", style=dotted',
    "stdout": 'color="#aaaaaa", arrowhead=none',
    "stdout-reuse": 'color="#e67e22", style=bold, penwidth=2',
    "cwd": 'color="#16a085", style=bold',
    "shellvar": 'color="#2c3e50", style=bold',
    "absence": 'color="#c0392b", style=dashed, penwidth=1.6',
    "metadata": 'color="#d35400", style=dashed, penwidth=1.6',
}


class RenderError(RuntimeError):
    pass


def _q(text: Any) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _short(text: str, n: int = 38) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _credit_color(credit: float | None, top: float) -> str:
    if credit is None:
        return "#eeeeee"  # untraced
    x = 0.0 if top <= 0 else max(0.0, min(1.0, credit / top))
    r, g, b = int(255 - 155 * x), int(255 - 55 * x), int(255 - 155 * x)  # white -> green
    return f"#{r:02x}{g:02x}{b:02x}"


MAX_LEAVES = 5  # a command's dead-end outputs beyond this fold into one summary node


def collapse_leaves(graph: nx.MultiDiGraph, limit: int = MAX_LEAVES) -> nx.MultiDiGraph:
    """Fold the file versions a command wrote that nothing else touches (not read later, not a
    verifier resource: `git init`'s 20 files, a tar extraction) into one node per command, so
    a 30-command picture stays readable. Information flow is never hidden."""
    g = graph.copy()
    for cmd, d in graph.nodes(data=True):
        if d.get("type") != "command":
            continue
        leaves = [v for _, v, e in graph.out_edges(cmd, data=True)
                  if e.get("kind") == "write" and graph.nodes[v].get("type") == "file"
                  and not graph.nodes[v].get("resource") and graph.out_degree(v) == 0
                  and graph.in_degree(v) == 1]
        if len(leaves) <= limit:
            continue
        paths = [graph.nodes[v].get("path", "") for v in leaves]
        common = posixpath.commonpath(paths) if all(p.startswith("/") for p in paths) else ""
        g.remove_nodes_from(leaves)
        node = f"fold:{cmd}"
        g.add_node(node, type="file", kind="folded",
                   path=f"{len(leaves)} files under {common or '/'}", version="*")
        g.add_edge(cmd, node, kind="write")
    return g


def to_dot(graph: nx.MultiDiGraph, *, title: str = "") -> str:
    cmds = sorted((n for n, d in graph.nodes(data=True) if d.get("type") == "command"),
                  key=lambda n: graph.nodes[n].get("step", 0))
    credits = [graph.nodes[n].get("credit") for n in cmds]
    top = max([c for c in credits if c is not None] or [0.0])
    out = ["digraph depgpo {", '  rankdir=LR; newrank=true; splines=true; nodesep=0.25;',
           '  ranksep=0.45; fontname="Helvetica"; node [fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=8, arrowsize=0.6];']
    if title:
        out.append(f"  labelloc=t; label={_q(title)}; fontsize=14;")
    for n in cmds:
        d = graph.nodes[n]
        credit = d.get("credit")
        label = (f"#{d.get('step')}  {_short(d.get('text', ''))}\n"
                 f"exit {d.get('exit_code')}  credit "
                 + ("–" if credit is None else f"{credit:.2f}")
                 + (f"  w {d['weight']:.2f}" if d.get("weight") is not None else ""))
        out.append(f"  {_q(n)} [shape=box, style=\"rounded,filled\", fillcolor={_q(_credit_color(credit, top))}, "
                   f"label={_q(label)}];")
    for n, d in graph.nodes(data=True):
        kind = d.get("type")
        if kind == "file":
            name = d.get("path", n)
            label = f"{_short(name, 30)}\nv{d.get('version')}"
            style = 'shape=note, style=filled, fillcolor="#f7f7f7"'
            if d.get("kind") == "deleted":
                style, label = 'shape=note, style="filled,dashed", fillcolor="#ffffff"', \
                    f"✗ {_short(name, 30)}\nv{d.get('version')}"
            elif d.get("kind") == "folded":
                style, label = 'shape=folder, style=filled, fillcolor="#eeeeee"', name
            elif d.get("kind") in ("dir", "symlink"):
                style = 'shape=folder, style=filled, fillcolor="#f7f7f7"'
            if d.get("resource"):
                style += ', color="#c0392b", penwidth=2.5, fillcolor="#fdebd0"'
            out.append(f"  {_q(n)} [{style}, label={_q(label)}];")
        elif kind == "verifier":
            out.append(f"  {_q(n)} [shape=doubleoctagon, color=\"#c0392b\", label=\"verifier\"];")
        elif kind == "stdout":
            out.append(f"  {_q(n)} [shape=plaintext, fontsize=8, fontcolor=\"#777777\", "
                       f"label={_q('stdout #' + str(d.get('step')))}];")
    for a, b in zip(cmds, cmds[1:]):  # time runs left to right
        out.append(f"  {_q(a)} -> {_q(b)} [style=invis, weight=20];")
    for u, v, d in graph.edges(data=True):
        kind = d.get("kind", "")
        style = EDGE_STYLE.get(kind, "")
        out.append(f"  {_q(u)} -> {_q(v)} [{style}, tooltip={_q(kind)}];")
    out.extend(_legend())
    out.append("}")
    return "\n".join(out) + "\n"


_EDGE_WORDS = {  # how each edge kind looks, in words, for the legend
    "read": ("#1f77b4", "dashed: a command read this version"),
    "write": ("#222222", "solid: a command wrote this version"),
    "derived": ("#8e44ad", "bold purple: version continued (append, edit, rename, link)"),
    "tombstone": ("#999999", "dotted: deleted"),
    "stdout": ("#aaaaaa", "thin grey: the command's stdout"),
    "stdout-reuse": ("#e67e22", "bold orange: a later command used a value it printed"),
    "cwd": ("#16a085", "bold green: a later command used the cwd its cd set"),
    "shellvar": ("#2c3e50", "bold navy: a later command expanded a variable/function it set"),
    "absence": ("#c0392b", "dashed red: the verifier found what it deleted gone"),
    "metadata": ("#d35400", "dashed orange: the verifier saw the mode/owner/time it set"),
}


def _legend() -> list[str]:
    rows = "".join(
        f'<TR><TD ALIGN="LEFT"><FONT COLOR="{color}"><B>{kind}</B></FONT></TD>'
        f'<TD ALIGN="LEFT">{html.escape(words)}</TD></TR>'
        for kind, (color, words) in _EDGE_WORDS.items())
    table = (
        '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="2">'
        '<TR><TD COLSPAN="2"><B>legend</B></TD></TR>'
        '<TR><TD BGCOLOR="#64c864">command</TD><TD ALIGN="LEFT">green = more credit, '
        'white = none, grey = untraced</TD></TR>'
        '<TR><TD BGCOLOR="#fdebd0" BORDER="1" COLOR="#c0392b">file@v</TD>'
        '<TD ALIGN="LEFT">red border: inspected by the verifier</TD></TR>'
        f"{rows}</TABLE>>"
    )
    return [f"  legend [shape=box, style=rounded, color=\"#cccccc\", fontsize=9, label={table}];"]


def render(graph: nx.MultiDiGraph, fmt: str, *, title: str = "",
           rows: list[dict[str, Any]] | None = None) -> bytes:
    # paths and commands may hold bytes that are not UTF-8: drawn as \xNN (rawtext.py)
    dot = printable(to_dot(collapse_leaves(graph), title=title))
    if fmt == "dot":
        return dot.encode()
    if shutil.which("dot") is None:
        raise RenderError("Graphviz `dot` is not installed (apt-get install graphviz, or "
                          "`make setup`); use --format dot to get the graph source")
    gv_fmt = "svg" if fmt == "html" else fmt
    proc = subprocess.run(["dot", f"-T{gv_fmt}"], input=dot.encode(), capture_output=True)
    if proc.returncode != 0:
        raise RenderError(f"dot failed: {proc.stderr.decode(errors='replace')[-2000:]}")
    if fmt != "html":
        return proc.stdout
    return printable(_html(proc.stdout.decode(), title, rows or [])).encode()


def _html(svg: str, title: str, rows: list[dict[str, Any]]) -> str:
    body = "".join(
        f"<tr><td>{r['step']}</td><td><code>{html.escape(r['command'])}</code></td>"
        f"<td>{r['credit'] if r['credit'] is None else format(r['credit'], '.3f')}</td>"
        f"<td>{r['weight']:.3f}</td><td>{html.escape(', '.join(r['classes']))}</td></tr>"
        for r in rows)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            "</title><style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:"
            "collapse}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
            "svg{max-width:100%;height:auto}</style></head><body>"
            f"<h2>{html.escape(title)}</h2>{svg}<table><tr><th>step</th><th>command</th>"
            f"<th>credit</th><th>weight</th><th>classes</th></tr>{body}</table></body></html>")
