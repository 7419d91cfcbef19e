"""The end of an episode: agent processes kept (traced) or stopped, the verifier, the audit.

Shared by ``termcredit run`` (harness/trial.py) and training rollouts (trainer/rollout.py).

* ``[verifier] agent_processes = "kill"``: every agent process is stopped before the verifier
  starts. ``"keep"`` (default): services the agent started keep running through verification,
  still traced; their trace during the verifier's run is kept as
  ``trace/agent-during-verifier.strace``.
* Tampering: an agent-process write, during the verifier's run, to ``/tests``,
  ``/logs/verifier`` or a toolchain file the verifier executed or loaded.
* Provenance audit (tasks/audit.py): toolchain files the verifier executed or loaded that an
  agent process created or modified. What the agent changed comes from ``docker diff`` (the
  writable layer itself, so a write through a hard link counts too) plus the agent's trace.
Either makes the reward suspect; the caller decides what a suspect reward is worth.
"""

from __future__ import annotations

from pathlib import Path

from ..records import Trajectory, VerifierReport
from ..sandbox import Sandbox
from ..tasks import Task
from ..tasks.audit import audit_verifier
from ..tasks.resources import under
from ..tasks.verifier import run_verifier
from ..tracer import EnvironmentLayer, SessionTrace, parse_session, summarize
from ..trialdir import TrialPaths

PROTECTED = ("/tests", "/logs/verifier")


def _written(trace: str | SessionTrace) -> set[str]:
    """Every path any traced process wrote, created, removed or changed the metadata of
    (``trace``: the text, or the session parsed from it with the default environment layer)."""
    env = EnvironmentLayer()
    session = parse_session(trace, env=env) if isinstance(trace, str) else trace
    events = list(session.unattributed)
    for cmd in session.commands.values():
        events += cmd.events
    s = summarize(events, env)
    out: set[str] = set()
    for sets in (s, s.environment):
        out |= sets.written | sets.deleted | sets.temporary | sets.meta
    return out


def verify_episode(sandbox: Sandbox, task: Task, traj: Trajectory, trial_dir: Path, *,
                   instance: int = 0) -> VerifierReport:
    agent = sandbox.shell
    assert agent is not None
    before = set(sandbox.diff())
    keep = task.agent_processes != "kill"
    if keep:
        agent.watch()
    else:
        agent.kill()
    try:
        report = run_verifier(sandbox, task, trial_dir, agent_written=traj.changed_paths(),
                              instance=instance)
    finally:
        window = agent.unwatch() if keep else ""
    if window:
        TrialPaths(trial_dir).agent_during_verifier_trace.write_text(window)
    traj.integrity += [r for r in agent.integrity if r not in traj.integrity]
    during = _written(window) if window else set()
    verifier_trace = "".join(sandbox.verifier_shell.session_trace)  # as run_verifier saved it
    verifier_session = parse_session(verifier_trace, env=EnvironmentLayer())  # parsed once
    verifier_wrote = _written(verifier_session)
    after = set(sandbox.diff())
    # what an agent process made: all changes up to verification, the agent's traced writes
    # during it, and changes during it that the verifier's own trace does not explain
    changed = before | during | (after - before - verifier_wrote) | traj.written_paths()
    hits = audit_verifier(verifier_trace, changed, workdir=sandbox.workdir,
                          instruction=task.instruction, may_modify=task.agent_may_modify,
                          resolve=agent.resolve, session=verifier_session,
                          loader_cache_regenerates=agent.ldcache_regenerates)
    hit_paths = {h["path"] for h in hits}
    report.tampering = sorted(
        f"{p}: written by an agent process during verification" for p in during
        if any(under(p, root) for root in PROTECTED) or p in hit_paths)
    report.suspect_files = hits
    report.suspect = bool(hits or report.tampering)
    return report
