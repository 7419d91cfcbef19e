"""The report's "Oracle ceiling" section: how much of what ground-truth step credit gains over
GRPO DepGPO captures (``stats.captured``, in summary.json under comparisons.captured)."""

from __future__ import annotations

from typing import Any

from .stats import PairedDiff, _num


def ceiling_lines(cap: dict[str, Any] | None,
                  variants: dict[str, dict[str, Any]] | None = None,
                  candidates: dict[str, float] | None = None) -> list[str]:
    """Markdown lines (empty when the run lacks depgpo, grpo or oracle final evaluations);
    ``variants``: the same share for each of the reference's variants, a line each;
    ``candidates``: each oracle weighting's final success, when the ceiling was the best."""
    if not cap:
        return []
    g = cap["ceiling_gain"]
    gain = PairedDiff(**{k: g[k] for k in ("estimate", "lo", "hi", "se", "seeds", "units",
                                           "level")})
    ref, floor, ceil = cap["ref"], cap["floor"], cap["ceiling"]
    lines = ["", "## Oracle ceiling", "",
             f"`{ceil}` weighs steps by ground truth (each task's declared necessary and "
             f"breaking commands) the way `{ref}` weighs them by its graph: "
             f"{ceil} − {floor} is what per-step credit can gain here, "
             f"captured = ({ref} − {floor}) / ({ceil} − {floor}) is the share {ref} gets "
             f"(final success, {cap['units']} episodes over {cap['seeds']} seed(s) paired "
             "across the three; CI: the same paired bootstrap, ratio per resample)."
             + (" The ceiling is the best of the oracle's weightings run here (final success: "
                + ", ".join(f"{a} {v:.3f}" for a, v in sorted(candidates.items())) + "), chosen "
                "on the same episodes: that can only raise the ceiling and lower captured."
                if candidates and len(candidates) > 1 else ""), "",
             f"- {ceil} − {floor}: {gain.text()} ({gain.verdict(ceil)}).",
             f"- {ref} − {floor}: {_num(cap['numerator'])} on the same episodes."]
    lines.append("- " + _captured(cap, "captured"))
    for v, vcap in (variants or {}).items():
        lines.append(f"- {v} − {floor}: {_num(vcap['numerator'])}; "
                     + _captured(vcap, f"{v} captured"))
    return lines


def _captured(cap: dict[str, Any], label: str) -> str:
    ceil, floor = cap["ceiling"], cap["floor"]
    if cap["estimate"] is None:
        return (f"{label}: undefined: {ceil} gains nothing over {floor} here "
                f"({_num(cap['denominator'])}), so there is no ceiling to capture.")
    ci = "" if cap["lo"] is None else f" [{_num(cap['lo'])}, {_num(cap['hi'])}]"
    return (f"**{label}: {_num(cap['estimate'])}**{ci}"
            + (f"; {cap['den_not_positive']:.0%} of the resamples had no ceiling "
               f"({ceil} ≤ {floor}) and are left out of the CI"
               if cap["den_not_positive"] else "") + ".")
