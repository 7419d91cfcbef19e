"""EpisodeFacts from a trajectory (in memory, or a trial directory written by `termcredit run`)."""

from __future__ import annotations

import json
from pathlib import Path

from ..records import Trajectory, load_json, step_token_counts
from ..tracer import parse_session
from .facts import CommandFacts, EpisodeFacts, Version


class TrialError(ValueError):
    pass


def load_trajectory(trial_dir: str | Path) -> Trajectory:
    path = Path(trial_dir) / "trajectory.json"
    if not path.is_file():
        raise TrialError(f"{path}: missing (is {trial_dir} a trial directory written by "
                         "`termcredit run`?)")
    traj = load_json(Trajectory, path)
    traj.trial_dir = str(Path(trial_dir))
    return traj


def trial_session_text(trial_dir: str | Path) -> str:
    """The agent shell's whole trace as written by a trial: start-up, then each step in order."""
    trace = Path(trial_dir) / "trace"
    steps = sorted(trace.glob("step-*.strace"))
    return "".join(p.read_text() for p in [trace / "shell-start.strace", *steps])


def _text(content_dir: Path | None, sha: str | None, in_memory: str | None) -> str | None:
    if in_memory is not None:
        return in_memory
    if content_dir is None or not sha:
        return None
    path = content_dir / sha
    return path.read_text() if path.is_file() else None


def _cwd_facts(traj: Trajectory) -> dict[int, tuple[str | None, str | None, set[str]]]:
    """SEQ -> (shell cwd before, after, cwds relative paths were resolved in), from the agent
    session's trace (the trial directory's, else the steps' in-memory segments)."""
    text = ""
    if traj.trial_dir and (Path(traj.trial_dir) / "trace").is_dir():
        try:
            text = trial_session_text(traj.trial_dir)
        except OSError:
            text = ""
    if not text:
        text = "".join(s.command.trace for s in traj.steps if s.command and s.command.trace)
    if not text:
        return {}
    session = parse_session(text)
    return {seq: (c.cwd_start, c.cwd_end, set(c.cwd_used)) for seq, c in session.commands.items()}


def _verifier_listed(traj: Trajectory) -> list[str]:
    if not traj.trial_dir:
        return []
    path = Path(traj.trial_dir) / "verifier" / "resources.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    listed = data.get("listed", []) if isinstance(data, dict) else []
    return [p for p in listed if isinstance(p, str)]


def facts_from_trajectory(traj: Trajectory) -> EpisodeFacts:
    content_dir = Path(traj.trial_dir) / "content" if traj.trial_dir else None
    cwds = _cwd_facts(traj)
    counts = step_token_counts(traj)
    commands = []
    for step, n_tok in zip(traj.steps, counts):
        rec = step.command
        if rec is None or rec.accesses is None:
            commands.append(CommandFacts(index=step.index, command=step.action, traced=False,
                                         n_tokens=n_tok))
            continue
        acc = rec.accesses
        after = {f.path: Version(path=f.path, kind=f.kind, sha256=f.sha256,
                                 text=_text(content_dir, f.sha256, f.content) if f.text else None)
                 for f in rec.files}
        commands.append(CommandFacts(
            index=step.index, command=rec.command, exit_code=rec.exit_code, stdout=rec.stdout,
            read=set(acc.read), listed=set(acc.listed), written=set(acc.written),
            deleted=set(acc.deleted), meta=set(acc.meta), derived_from=dict(acc.derived_from),
            after=after, n_tokens=n_tok, shell_set=dict(rec.shell or {}),
            shell_reset=rec.shell_restarted,
        ))
        if rec.seq in cwds:
            before, end, used = cwds[rec.seq]
            commands[-1].cwd_before, commands[-1].cwd_after, commands[-1].cwd_used = (
                before, end, used)
    resources = traj.verifier.resources if traj.verifier else []
    return EpisodeFacts(instruction=traj.instruction, commands=commands, resources=resources,
                        listed=_verifier_listed(traj))
