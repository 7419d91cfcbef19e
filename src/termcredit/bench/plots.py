"""curves.png of the bench report: success and zero-credit-step rate against updates, one line
per algorithm (mean over seeds, light band = min..max over seeds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ZERO_CREDIT = "credit/zero_credit_step_frac"


def _band(ax: Any, curve: dict[str, list], **style: Any) -> Any:
    line, = ax.plot(curve["steps"], curve["mean"], **style)
    if len(curve["steps"]) > 1:
        ax.fill_between(curve["steps"], curve["min"], curve["max"], alpha=0.12,
                        color=line.get_color(), linewidth=0)
    return line


def plot_curves(summary: dict[str, Any], path: Path, title: str, eval_label: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_s, ax_z) = plt.subplots(1, 2, figsize=(12, 4.4), dpi=120)
    # curves often coincide (same start, shared evaluation seeds): distinct markers and dashes
    # keep every algorithm visible where lines overlap
    styles = zip("osD^vP*Xhd<>", ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1))] * 2)
    any_zero = False
    for (algo, r), (marker, dash) in zip(summary.items(), styles):
        width = 2 if algo.startswith("depgpo") else 1.3
        train = r.get("train_curve") or {"steps": []}
        color = None
        if train["steps"]:
            color = _band(ax_s, train, linestyle=dash, linewidth=width, label=algo,
                          alpha=0.9).get_color()
        if r["curve"]:  # start, periodic and final evaluation points
            xs, ys = [x for x, _ in r["curve"]], [y for _, y in r["curve"]]
            ax_s.plot(xs, ys, marker=marker, linestyle="none" if color else dash, color=color,
                      markersize=8, markerfacecolor="none", markeredgewidth=1.5,
                      label=None if color else algo)
        zero = (r.get("credit_curves") or {}).get(ZERO_CREDIT)
        if zero and zero["steps"]:
            any_zero = True
            _band(ax_z, zero, linestyle=dash, linewidth=width, label=algo, color=color)
    ax_s.set_title(f"success: training rollouts (lines), {eval_label} (markers)", fontsize=9)
    ax_z.set_title("zero-credit steps (fraction of a rollout's steps)", fontsize=9)
    if not any_zero:
        ax_z.text(0.5, 0.5, "no credit/zero_credit_step_frac in this run", ha="center",
                  va="center", transform=ax_z.transAxes)
    for ax in (ax_s, ax_z):
        ax.set_xlabel("updates")
        ax.set_ylim(-0.02, 1.02)
    _finish(plt, fig, (ax_s, ax_z), path, title)


def _finish(plt: Any, fig: Any, axes: Any, path: Path, title: str) -> None:
    """Grid and legend (where something is labelled) on each panel; title, save, close."""
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# efficiency.png: the curves where per-step credit should show before success moves
EFFICIENCY_PANELS = (("steps_per_success", "steps per success"),
                     ("tokens_per_success", "tokens per success"),
                     ("decoy_ep", "decoy-episode rate"), ("errored_cmd", "errored-command rate"))


def plot_efficiency(eff: dict[str, Any], path: Path, title: str) -> None:
    """One panel per rate of ``EFFICIENCY_PANELS`` against updates (training rollouts, seeds
    pooled; bench/efficiency.py), one line per algorithm; the start's evaluation at x = -1
    and the final one after the last update as markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(EFFICIENCY_PANELS), figsize=(16, 4), dpi=110)
    start = eff.get("start") or {}
    for ax, (key, label) in zip(axes, EFFICIENCY_PANELS):
        if start.get(key) is not None:
            ax.plot([-1], [start[key]], marker="s", color="gray", linestyle="none",
                    label="start (eval)")
        for (algo, a), dash in zip(eff["algorithms"].items(), ["-", "--", "-.", ":"] * 3):
            pts = [(u["update"], u[key]) for u in a["updates"] if u.get(key) is not None]
            color = None
            if pts:
                color = ax.plot(*zip(*pts), linestyle=dash, marker=".", label=algo,
                                linewidth=2 if algo.startswith("depgpo") else 1.3)[0].get_color()
            final = (a.get("final") or {}).get(key)
            if final is not None:
                last = max((u["update"] for u in a["updates"]), default=0) + 1
                ax.plot([last], [final], marker="o", markerfacecolor="none", color=color,
                        linestyle="none", label=None if color else algo)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("update (start: -1, final eval: after the last)")
    _finish(plt, fig, axes, path, title)
