"""Where DepGPO's weight goes in a bench run's rollouts, failed episodes against solved ones.

Every training-rollout trial of one algorithm is reloaded and weighed again with DepGPO's
default settings (whatever estimator trained it), then counted: how many fell back to unit
weights (and why), and, for the rest, the weight their steps got split by how the step's
command ended (exit 0, or errored: exit status ≠ 0 or timed out). The bench report prints it
under "Where DepGPO does not win"; `benchmarks/failed_credit.py` prints it for any run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..depgpo.analysis import analysis_of
from ..trialdir import TrialPaths, load_trajectory


def rollout_trials(run_dir: Path) -> list[Path]:
    """The trial directories of ``run_dir``'s training rollouts (all seeds)."""
    return sorted(p.parent for p in run_dir.glob("seed-*/rollouts/*/*/g*/trajectory.json"))


def tally(trials: list[Path]) -> Counter[str]:
    """Counts ``{ok,fail}_traj``, ``_fallback`` (``_fallback/<reason>``) and, over the traced
    steps of the trajectories that did not fall back, ``_steps_<end>``, ``_weight_<end>``
    and ``_zero_<end>`` for end ``exit0`` / ``errored``."""
    n: Counter[str] = Counter()
    for d in trials:
        traj = load_trajectory(d)
        key = "ok" if json.loads(TrialPaths(d).result.read_text()).get("reward") == 1 else "fail"
        n[f"{key}_traj"] += 1
        sw = analysis_of(traj).weights
        if sw.fallback:
            n[f"{key}_fallback"] += 1
            n[f"{key}_fallback/{sw.fallback}"] += 1
            continue
        for s, w in zip(traj.steps, sw.w):
            if s.command is None:  # `done` and invalid actions: untraced
                continue
            end = "exit0" if s.command.exit_code == 0 and not s.command.timed_out else "errored"
            n[f"{key}_steps_{end}"] += 1
            n[f"{key}_weight_{end}"] += w
            n[f"{key}_zero_{end}"] += w == 0
    return n


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def blame_split(n: Counter[str]) -> dict[str, Any]:
    """The shares the report states (None where the denominator is empty)."""
    weight = n["fail_weight_exit0"] + n["fail_weight_errored"]
    return {"trials": n["ok_traj"] + n["fail_traj"], "failed": n["fail_traj"],
            "fail_fallback": _ratio(n["fail_fallback"], n["fail_traj"]),
            "fail_weight_on_exit0": _ratio(n["fail_weight_exit0"], weight),
            "fail_errored_zero_weight": _ratio(n["fail_zero_errored"], n["fail_steps_errored"]),
            "ok_fallback": _ratio(n["ok_fallback"], n["ok_traj"])}


def blame_lines(split: dict[str, Any] | None) -> list[str]:
    """The report's sentences on ``split`` (none when there is nothing to say)."""
    if not split or not split["failed"]:
        return []
    pct = {k: "n/a" if v is None else f"{100 * v:.0f}%" for k, v in split.items()
           if k not in ("trials", "failed")}
    return [f"Where DepGPO's weight went in its {split['trials']} training rollouts "
            f"({split['failed']} failed), reweighed with the default settings: "
            f"{pct['fail_fallback']} of failed episodes fell back to GRPO's unit weights "
            f"(solved: {pct['ok_fallback']}); in the failed ones that did not, "
            f"{pct['fail_weight_on_exit0']} of the weight (and so of the blame) sat on commands "
            f"that exited 0, and {pct['fail_errored_zero_weight']} of the commands that errored "
            "got weight 0. When the first share is high, failures are commands that reached "
            "nothing the verifier read, and DepGPO is GRPO on them; when the second is high, "
            "the graph blames the clean chain instead of the command at fault "
            "(`depgpo[negative=errors]` moves that blame)."]
