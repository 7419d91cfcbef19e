"""The shell's working directories around each command are recorded with its accesses when the
episode is finalised (``CommandRecord.trace_cwd``), so DepGPO's facts need no second parse of
the session trace; a trajectory without them (an older one) still gets them from its trace."""

from __future__ import annotations

from pathlib import Path

from termcredit.depgpo import load
from termcredit.depgpo.load import facts_from_trajectory
from termcredit.harness.observe import StepObserver
from termcredit.records import Trajectory, from_dict, to_dict
from termcredit.trialdir import TrialPaths, load_trajectory

TRIAL = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "trial-50"


class RecordedShell:
    """The finished trial's shell: nothing left to snapshot."""

    nonce = None

    def snapshot(self, paths, content_cap=0):
        return []


def cwds(traj: Trajectory) -> dict[int, tuple]:
    return {f.index: (f.cwd_before, f.cwd_after, f.cwd_used)
            for f in facts_from_trajectory(traj).commands if f.traced}


def test_finalize_records_the_cwds_and_depgpo_reads_them_without_parsing(monkeypatch):
    traj = load_trajectory(TRIAL)  # written before trace_cwd existed: parsed from the trace
    records = [s.command for s in traj.steps if s.command is not None]
    assert all(r.trace_cwd is None for r in records)
    parsed = cwds(traj)
    assert any(used for _b, _a, used in parsed.values()), "the trial resolves relative paths"
    assert len({a for _b, a, _u in parsed.values()}) > 1, "and changes directory"

    StepObserver(RecordedShell()).finalize(records, TrialPaths(TRIAL).session_trace_text())
    assert all(r.trace_cwd is not None for r in records)
    traj = from_dict(Trajectory, to_dict(traj))  # they survive the trajectory file
    traj.trial_dir = str(TRIAL)

    def refuse(*_a, **_kw):
        raise AssertionError("parsed the session trace again")

    monkeypatch.setattr(load, "parse_session", refuse)
    assert cwds(traj) == parsed


def test_one_step_without_recorded_cwds_falls_back_to_the_trace(monkeypatch):
    traj = load_trajectory(TRIAL)
    records = [s.command for s in traj.steps if s.command is not None]
    StepObserver(RecordedShell()).finalize(records, TrialPaths(TRIAL).session_trace_text())
    records[0].trace_cwd = None
    calls = []
    real = load.parse_session
    monkeypatch.setattr(load, "parse_session", lambda *a, **k: calls.append(1) or real(*a, **k))
    cwds(traj)
    assert calls == [1]  # the fallback ran, once
