"""The reward training reads: a verifier's reward, zeroed when the episode cannot be trusted.

This is the only place training reads ``traj.verifier.reward``; estimators, the trainer's
dynamic sampling and its evaluation all go through ``training_reward`` (``reward_of``).
"""

from __future__ import annotations

from ..records import Trajectory

INTEGRITY_POLICIES = ("zero", "mask")  # what training does with a flagged trajectory


def is_flagged(traj: Trajectory) -> bool:
    """Tampering was recorded in the episode (or in one of its steps' traces)."""
    return traj.flagged or any(s.command is not None and s.command.integrity for s in traj.steps)


def training_reward(traj: Trajectory, integrity: str = "zero") -> float:
    """The reward a trajectory trains with.

    0.0 without a verifier; 0.0 when the episode is flagged (tampering recorded): under
    ``integrity = "zero"`` that is its reward, under ``"mask"`` it is dropped from its group
    before estimation (``select_group`` in the trainer) and 0.0 is what it gets if asked
    anyway; 0.0 when the verifier's provenance audit found it suspect and the task's
    ``on_suspect`` is "zero" (the default when the task does not say; "flag" keeps the reward).
    """
    if integrity not in INTEGRITY_POLICIES:
        raise ValueError(f"integrity policy must be one of {', '.join(INTEGRITY_POLICIES)}, "
                         f"not {integrity!r}")
    v = traj.verifier
    if v is None or is_flagged(traj):
        return 0.0
    if v.suspect and (v.on_suspect or "zero") == "zero":
        return 0.0
    return v.reward


def reward_of(traj: Trajectory) -> float:
    """The estimators' reward: ``training_reward`` (masked trajectories never reach them, so
    the integrity policy does not matter here)."""
    return training_reward(traj)
