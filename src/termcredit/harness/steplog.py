"""The step log: every finished step of a trial on disk at once, append-only.

The trajectory file is written when the episode ends; until then a crash (SIGKILL, OOM, power)
would lose every step of the trial in flight. ``<trial>/steps.jsonl`` closes that gap: one JSON
line per step (``records.to_dict`` of the Step, as known right after it ran), flushed and
fsynced before the step returns to the agent. ``load_steps`` reads it back; a last line torn by
the crash is dropped.

The lines are the crash record, not the final word: per-step accesses and integrity come from
the whole session trace at the end (``AgentEnv.finalize``), so they are in the trajectory file
only.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..jsonl import JsonlError, append_jsonl, iter_jsonl, write_jsonl
from ..records import Step, from_dict, to_dict
from ..trialdir import TrialPaths


class StepLogError(ValueError):
    """A step log with a corrupt line that is not the last (not a torn write)."""


class StepLog:
    """Appends one line per finished step to ``<trial_dir>/steps.jsonl`` (flushed, fsynced).

    A new StepLog starts the episode's log: a file already there (an earlier episode in the same
    folder) is replaced, so the log never mixes two episodes.
    """

    def __init__(self, trial_dir: str | Path):
        self.path = TrialPaths(trial_dir).steps
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        write_jsonl(self.path, [], fsync=True)
        _fsync_dir(self.path.parent)  # the file's name survives a crash too

    def append(self, step: Step) -> None:
        with self._lock:
            append_jsonl(self.path, to_dict(step), fsync=True)


def load_steps(trial_dir: str | Path) -> list[Step]:
    """The steps logged in ``<trial_dir>/steps.jsonl`` (none if it is missing). A torn last line
    (the process died while writing it) is dropped; a corrupt earlier line is an error."""
    path = TrialPaths(trial_dir).steps
    steps: list[Step] = []
    try:
        for n, data in iter_jsonl(path, torn_tail=True):
            try:
                steps.append(from_dict(Step, data))
            except (ValueError, TypeError) as exc:
                raise StepLogError(f"{path}:{n}: corrupt step line ({exc})") from exc
    except FileNotFoundError:
        return []
    except JsonlError as exc:
        raise StepLogError(f"{exc.path}:{exc.line}: corrupt step line ({exc.why})") from exc
    return steps


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
