"""Writing the viewer's site: OUT/index.html and OUT/trials/<slug>.html."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from .credit import trial_credit
from .index import build_index
from .load import find_trial_dirs, load_trial, read_json, read_metrics, summary_rows
from .trial import trial_page


def _slug(rel: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", rel.replace("/", "__")).strip("_") or "trial"
    name, n = base, 1
    while name in used:
        name, n = f"{base}-{n}", n + 1
    used.add(name)
    return name


def build_view(run_dir: str | Path, out: str | Path | None = None, *,
               graphs: bool = True) -> Path:
    """Write the site for ``run_dir`` into ``out`` (default RUN_DIR/view); returns the path of
    index.html. Each trial's trajectory is read once and its DepGPO credit found once (from
    its graph.json when there is one)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    out = Path(out) if out else run_dir / "view"
    dirs = find_trial_dirs(run_dir, skip=out)
    metrics = read_metrics(run_dir)
    result = read_json(run_dir / "result.json")
    if not dirs and not metrics and not isinstance(result, dict):
        raise FileNotFoundError(f"{run_dir}: no trial, result.json or metrics.jsonl "
                                "(is it a `termcredit run` or `termcredit train` directory?)")
    rows = [load_trial(run_dir, d) for d in dirs]
    rows += summary_rows(run_dir, result, rows)
    (out / "trials").mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    dot_ok = graphs and shutil.which("dot") is not None
    for r in rows:
        if r.traj is None or r.dir is None:
            continue
        r.page = f"trials/{_slug(r.rel, used)}.html"
        back = os.path.relpath(out / "index.html", (out / r.page).parent)
        raw = os.path.relpath(r.dir, (out / r.page).parent)
        html = trial_page(r, trial_credit(r.traj), back=back, raw=raw, graphs=graphs,
                          dot_ok=dot_ok)
        (out / r.page).write_text(html, encoding="utf-8")
    index = build_index(run_dir, rows, metrics, result if isinstance(result, dict) else {})
    (out / "index.html").write_text(index, encoding="utf-8")
    return out / "index.html"
