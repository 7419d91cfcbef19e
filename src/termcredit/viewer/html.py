"""HTML pieces every viewer page shares: escaping, the page frame and its style, small blocks."""

from __future__ import annotations

import html
from typing import Any

from ..rawtext import printable

LONG_LINES, LONG_CHARS = 15, 1500  # output beyond either is collapsed into <details>

STYLE = """body{font-family:system-ui,sans-serif;margin:1.2em 2em;color:#222;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.4em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f4f4f4}summary{cursor:pointer;color:#555}
pre{background:#f7f7f7;border:1px solid #e3e3e3;padding:6px 8px;font-size:12px;margin:4px 0;
white-space:pre-wrap;word-break:break-all}.ok{color:#1a7f37}.bad{color:#c62828}.muted{color:#777}
.note{color:#8a6d00}.step{border:1px solid #ddd;border-radius:4px;padding:6px 10px;margin:10px 0}
.step h3{font-size:1em;margin:2px 0 6px}svg{max-width:100%;height:auto}dd{margin:0}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:600}
td.cmd code{display:block;white-space:pre-wrap;word-break:break-all;max-height:12em;
overflow:auto}"""


def e(x: Any) -> str:
    """``x`` as HTML text (quotes escaped too: safe in attributes); bytes that are not UTF-8
    shown as ``\\xNN`` (a page cannot hold surrogates, see rawtext.py)."""
    return html.escape(printable("" if x is None else str(x)), quote=True)


def page(title: str, body: str) -> str:
    """A whole page: no script, no external resource (the empty icon spares a favicon fetch)."""
    return (f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<link rel='icon' href='data:,'><style>{STYLE}</style></head><body>\n{body}\n"
            "</body></html>\n")


def fmt(x: Any, nd: int = 3) -> str:
    return "–" if x is None else f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def pre(text: str, label: str) -> str:
    """Escaped output; long text collapsed into <details>."""
    if not text:
        return f"<div class='muted'>{e(label)}: (empty)</div>"
    n_lines = text.count("\n") + 1
    if n_lines > LONG_LINES or len(text) > LONG_CHARS:
        return (f"<details><summary>{e(label)} ({n_lines} lines, {len(text)} chars)</summary>"
                f"<pre>{e(text)}</pre></details>")
    return f"<div class='muted'>{e(label)}</div><pre>{e(text)}</pre>"


def dl(items: list[tuple[str, Any]]) -> str:
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items) + "</dl>"


def markers(suspect: bool, tampered: bool) -> str:
    """Index/heading badges: a suspect reward, recorded tampering."""
    out = []
    if suspect:
        out.append("<span class='bad' title='the verifier ran or loaded toolchain files an "
                   "agent process made'>suspect</span>")
    if tampered:
        out.append("<span class='note' title='tampering or integrity problems were "
                   "recorded'>tampering</span>")
    return " ".join(out)
