"""The report's warm-start comparison (``termcredit bench --warm-compare``): the start policy
trained on noisy demonstrations against the one trained on the same demonstrations refined,
both evaluated on the same seeds and held-out episodes before any update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..jsonl import read_jsonl
from .stats import cell, episode_stats, pair_episodes, paired_bootstrap

WARM_DEMOS = ("noisy", "refined")  # the start's demonstrations (BenchConfig.warm_demos)
HEAD = ["demonstrations", "SFT demos", "success (mean over seeds)",
        "Δ refined − noisy [95% CI]", "steps/success", "tokens/success", "DepGPO non-fallback"]


def other_demos(kind: str) -> str:
    return "refined" if kind == "noisy" else "noisy"


def _episodes(folder: Path, seeds: list[int]) -> dict[int, list[dict[str, Any]]]:
    paths = {seed: folder / f"eval-seed-{seed}.jsonl" for seed in seeds}
    return {seed: read_jsonl(p) for seed, p in paths.items() if p.is_file()}


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def warm_comparison(out: Path, warm_demos: str, seeds: list[int],
                    n_boot: int) -> dict[str, Any] | None:
    """Both starts' success, steps and tokens per success, non-fallback rate and SFT data,
    and refined − noisy paired on seeds and episode slots; None without both starts."""
    folders = {warm_demos: out / "start",
               other_demos(warm_demos): out / f"start-{other_demos(warm_demos)}"}
    eps = {k: _episodes(f, seeds) for k, f in folders.items()}
    if not all(eps.get(k) for k in WARM_DEMOS):
        return None
    rows: dict[str, Any] = {}
    for kind in WARM_DEMOS:
        stats = _json(folders[kind] / "start-stats.json")
        per_seed = [episode_stats(e)["success"] for e in eps[kind].values()]
        rows[kind] = {**episode_stats([e for s in eps[kind].values() for e in s]),
                      "success_mean": sum(per_seed) / len(per_seed),
                      "non_fallback": stats.get("non_fallback"),
                      "sft_demos": _json(folders[kind] / "sft.json").get("demos"),
                      "refine": _json(folders[kind] / "refine" / "warm.json") or None}
    common = sorted(eps["refined"].keys() & eps["noisy"].keys())
    pairs = [pair_episodes(eps["refined"][s], eps["noisy"][s]) for s in common]
    pairs = [p for p in pairs if p[0].size]
    diff = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs],
                            n_boot=n_boot) if pairs else None
    return {"start": warm_demos, "rows": rows, "diff": diff.as_dict() if diff else None,
            "diff_text": diff.text() if diff else "—",
            "sentence": f"refined − noisy: {diff.text()}: {diff.verdict('refined')}"
            if diff else "no paired episode"}


def warm_lines(comp: dict[str, Any] | None, table: Any) -> list[str]:
    """The report's section (``table(head, rows)`` renders a markdown table)."""
    if not comp:
        return []
    rows = [[kind + (" (start/: training goes on from it)" if kind == comp["start"] else ""),
             cell(r["sft_demos"], ".0f"), cell(r["success_mean"]),
             "—" if kind == "noisy" else comp["diff_text"],
             cell(r["steps_per_success"], ".2f"), cell(r["tokens_per_success"], ".0f"),
             cell(r["non_fallback"])] for kind, r in comp["rows"].items()]
    lines = ["", "## Warm start: noisy vs refined demonstrations", "",
             "The start policy SFT'd on the noisy demonstrations and on the same demonstrations "
             "run through `termcredit refine` (only those that solve their task, each replayed, "
             "its graph-proven droppable steps removed and the result replayed again), each "
             "evaluated before any update on the same seeds and held-out episodes.", ""]
    lines += table(HEAD, rows)
    ref = comp["rows"]["refined"]["refine"]
    if ref:
        lines += ["", f"Refined data: {ref['noisy_demos']} noisy demonstrations, "
                  f"{ref['distinct']} distinct, {ref['successful']} solve their task, "
                  f"{ref['refined']} refined and replayed to reward 1 "
                  f"({ref['refined_demos']} with their copies); {ref['steps_dropped']} steps "
                  f"dropped, {ref['tokens_saved']} tokens ({ref['token_unit']}) saved."]
    lines += ["", f"- {comp['sentence']}."]
    return lines
