"""One trial directory: every file's name in one place, and the trajectory's file I/O.

A trial directory (``termcredit run``'s ``<run>/<task>/attempt-<k>/``, a training rollout's
``rollouts/step-N/<task>-i<inst>/g<k>/``) holds the same files whoever ran the episode::

    trajectory.json   the episode (steps, accesses, verifier report, tokens)
    result.json       TrialResult, written last (its presence means the trial finished)
    steps.jsonl       one line per finished step, fsynced (the crash record)
    error.txt         traceback of a harness error, when there was one
    graph.json        DepGPO's dependency graph (the end-of-trial hook every application
                      passes to its episodes: depgpo/trial_hook.py)
    trace/            shell-start.strace, step-NNN.strace, verifier.strace,
                      agent-during-verifier.strace
    content/<sha256>  small text files' contents after the steps that wrote them
    verifier/         resources.json, test-stdout.txt, test-stderr.txt, the verifier's logs

Only this module knows these names; everything else asks a ``TrialPaths``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .rawtext import read_text
from .records import Trajectory, TrialResult, load_json, save_json

TRAJECTORY = "trajectory.json"
RESULT = "result.json"


class TrialError(ValueError):
    """A folder that is not a (complete enough) trial directory."""


@dataclass(frozen=True)
class TrialPaths:
    root: Path

    def __init__(self, root: str | Path):
        object.__setattr__(self, "root", Path(root))

    # ---------------------------------------------------------------- top-level files
    @property
    def trajectory(self) -> Path:
        return self.root / TRAJECTORY

    @property
    def result(self) -> Path:
        return self.root / RESULT

    @property
    def steps(self) -> Path:
        return self.root / "steps.jsonl"

    @property
    def error(self) -> Path:
        return self.root / "error.txt"

    @property
    def graph(self) -> Path:
        return self.root / "graph.json"

    # ---------------------------------------------------------------- traces
    @property
    def trace_dir(self) -> Path:
        return self.root / "trace"

    @property
    def shell_start_trace(self) -> Path:
        return self.trace_dir / "shell-start.strace"

    def step_trace_rel(self, index: int) -> str:
        """The step's trace file relative to the root (as ``CommandRecord.trace_file``)."""
        return f"trace/step-{index:03d}.strace"

    def step_traces(self) -> list[Path]:
        return sorted(self.trace_dir.glob("step-*.strace"))

    @property
    def verifier_trace_rel(self) -> str:
        return "trace/verifier.strace"

    @property
    def verifier_trace(self) -> Path:
        return self.root / self.verifier_trace_rel

    @property
    def agent_during_verifier_trace(self) -> Path:
        return self.trace_dir / "agent-during-verifier.strace"

    # ---------------------------------------------------------------- content, verifier
    @property
    def content_dir(self) -> Path:
        return self.root / "content"

    def content(self, sha256: str) -> Path:
        return self.content_dir / sha256

    @property
    def verifier_dir(self) -> Path:
        return self.root / "verifier"

    @property
    def resources(self) -> Path:
        return self.verifier_dir / "resources.json"

    @property
    def test_stdout(self) -> Path:
        return self.verifier_dir / "test-stdout.txt"

    @property
    def test_stderr(self) -> Path:
        return self.verifier_dir / "test-stderr.txt"

    # ---------------------------------------------------------------- reading and writing
    def is_trial(self) -> bool:
        return self.trajectory.is_file()

    def session_trace_text(self) -> str:
        """The agent shell's whole trace: start-up, then each step in order."""
        start = self.shell_start_trace
        parts = [start] if start.is_file() else []
        return "".join(read_text(p) for p in [*parts, *self.step_traces()])


def save_trajectory(traj: Trajectory, trial_dir: str | Path | None = None) -> Path:
    """Write ``trajectory.json`` (atomically) in ``trial_dir`` or ``traj.trial_dir``."""
    where = trial_dir if trial_dir is not None else traj.trial_dir
    if where is None:
        raise ValueError(f"trajectory of {traj.task!r} has no trial directory to be written to")
    path = TrialPaths(where).trajectory
    save_json(traj, path)
    return path


def load_trajectory(trial_dir: str | Path) -> Trajectory:
    path = TrialPaths(trial_dir).trajectory
    if not path.is_file():
        raise TrialError(f"{path}: missing (is {trial_dir} a trial directory written by "
                         "`termcredit run`?)")
    traj = load_json(Trajectory, path)
    traj.trial_dir = str(Path(trial_dir))
    return traj


def save_result(result: TrialResult, trial_dir: str | Path) -> None:
    save_json(result, TrialPaths(trial_dir).result)


def load_result(trial_dir: str | Path) -> TrialResult:
    return load_json(TrialResult, TrialPaths(trial_dir).result)
