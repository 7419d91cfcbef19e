"""EpisodeFacts from a trajectory (in memory, or a trial directory written by `termcredit run`).

The facts point at the trajectory's records: each command's access summary as the tracer made
it, and its content-check states, whose text (kept out of the trajectory's JSON) is brought
back from the trial directory's content store when the state has none in memory.
"""

from __future__ import annotations

import json

from ..records import CommandRecord, FileState, Step, Trajectory, step_token_counts
from ..tracer import parse_session
from ..trialdir import TrialError, TrialPaths, load_trajectory
from .facts import CommandFacts, EpisodeFacts

__all__ = ["TrialError", "command_facts", "facts_from_trajectory", "load_trajectory",
           "recorded_cwd"]


def _load_text(paths: TrialPaths | None, states: list[FileState]) -> None:
    """Fill ``content`` of text states from the trial's content store, where it is missing."""
    if paths is None:
        return
    for f in states:
        if f.text and f.content is None and f.sha256:
            path = paths.content(f.sha256)
            if path.is_file():
                f.content = path.read_text()


Cwds = tuple[str | None, str | None, set[str]]  # shell cwd before, after, cwds it resolved in


def recorded_cwd(rec: CommandRecord | None) -> Cwds | None:
    """The cwds the harness recorded with a step's accesses (None: not recorded)."""
    tc = rec.trace_cwd if rec is not None else None
    return (tc.before, tc.after, set(tc.used)) if tc is not None else None


def _cwd_facts(traj: Trajectory) -> dict[int, tuple[str | None, str | None, set[str]]]:
    """SEQ -> (shell cwd before, after, cwds relative paths were resolved in): what the
    harness recorded with the accesses (``CommandRecord.trace_cwd``); for a trajectory without
    it (written before it was recorded, or built by hand), from the agent session's trace (the
    trial directory's, else the steps' in-memory segments)."""
    recs = [s.command for s in traj.steps if s.command is not None]
    cwds = {r.seq: recorded_cwd(r) for r in recs}
    if recs and all(c is not None for c in cwds.values()):
        return cwds  # type: ignore[return-value]
    text = ""
    if traj.trial_dir and TrialPaths(traj.trial_dir).trace_dir.is_dir():
        try:
            text = TrialPaths(traj.trial_dir).session_trace_text()
        except OSError:
            text = ""
    if not text:
        text = "".join(s.command.trace for s in traj.steps if s.command and s.command.trace)
    if not text:
        return {}
    session = parse_session(text)
    return {seq: (c.cwd_start, c.cwd_end, set(c.cwd_used)) for seq, c in session.commands.items()}


def _verifier_listed(paths: TrialPaths | None) -> list[str]:
    if paths is None:
        return []
    try:
        data = json.loads(paths.resources.read_text())
    except (OSError, ValueError):
        return []
    listed = data.get("listed", []) if isinstance(data, dict) else []
    return [p for p in listed if isinstance(p, str)]


def command_facts(step: Step, n_tokens: int, paths: TrialPaths | None,
                  cwd: Cwds | None) -> CommandFacts:
    """One step's facts (``cwd``: before, after, used; None: unknown)."""
    rec = step.command
    if rec is None or rec.accesses is None:
        return CommandFacts(index=step.index, command=step.action, traced=False,
                            n_tokens=n_tokens)
    _load_text(paths, rec.files)
    before, end, used = cwd or (None, None, set())
    return CommandFacts(
        index=step.index, command=rec.command, exit_code=rec.exit_code, stdout=rec.stdout,
        accesses=rec.accesses, after={f.path: f for f in rec.files}, n_tokens=n_tokens,
        cwd_before=before, cwd_after=end, cwd_used=used, shell_set=dict(rec.shell or {}),
        shell_reset=rec.shell_restarted,
    )


def facts_from_trajectory(traj: Trajectory) -> EpisodeFacts:
    paths = TrialPaths(traj.trial_dir) if traj.trial_dir else None
    cwds = _cwd_facts(traj)
    counts = step_token_counts(traj)
    commands = [command_facts(step, n_tok, paths, cwds.get(step.command.seq)
                              if step.command is not None else None)
                for step, n_tok in zip(traj.steps, counts)]
    resources = traj.verifier.resources if traj.verifier else []
    return EpisodeFacts(instruction=traj.instruction, commands=commands, resources=resources,
                        listed=_verifier_listed(paths))
