"""What `termcredit credit` and `termcredit graph` show for one trial directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..trialdir import TrialPaths, load_trajectory
from . import Analysis, DepGPOConfig, to_json
from .analysis import analysis_of


def analyse_trial(trial_dir: str | Path, cfg: DepGPOConfig = DepGPOConfig()) -> Analysis:
    return analysis_of(load_trajectory(trial_dir), cfg)


def step_deps(res: Analysis) -> dict[int, list[dict[str, Any]]]:
    """Per step: the cwd/shellvar/absence/metadata dependencies that earned its commands
    credit: ``{"kind", "path", "to_step"}`` (``path``: the shell name for shellvar;
    ``to_step``: the step that used the cwd or name; None: the verifier)."""
    cmds = res.graph.commands
    out: dict[int, list[dict[str, Any]]] = {}
    for c, ds in enumerate(res.credit.deps):
        for kind, path, to in ds:
            out.setdefault(cmds[c].index, []).append(
                {"kind": kind, "path": path, "to_step": None if to is None else cmds[to].index})
    return out


def credit_rows(res: Analysis, commands: dict[int, str]) -> list[dict[str, Any]]:
    sw = res.weights
    deps = step_deps(res)
    return [{"step": s, "command": commands.get(s, ""), "credit": c, "weight": w, "f": f,
             "classes": list(cl), "deps": deps.get(s, [])}
            for s, c, w, f, cl in zip(sw.steps, sw.credit, sw.w, sw.f, sw.classes)]


def credit_report(trial_dir: str | Path, cfg: DepGPOConfig = DepGPOConfig()) -> dict[str, Any]:
    traj = load_trajectory(trial_dir)
    res = analysis_of(traj, cfg)
    commands = {s.index: (s.command.command if s.command else s.action) for s in traj.steps}
    return {
        "trial_dir": str(trial_dir),
        "task": traj.task,
        "reward": traj.verifier.reward if traj.verifier else None,
        "fallback": res.weights.fallback,
        "verifier_resources": traj.verifier.resources if traj.verifier else [],
        "steps": credit_rows(res, commands),
    }


def write_graph_json(trial_dir: str | Path, res: Analysis | None = None) -> Path:
    res = res or analyse_trial(trial_dir)
    path = TrialPaths(trial_dir).graph
    path.write_text(to_json(res.graph.graph))
    return path
