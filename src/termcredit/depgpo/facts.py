"""What DepGPO consumes: per-command facts from the tracer and the content check.

A ``CommandFacts`` points at what the harness recorded, without copying it into another
shape: ``accesses`` is the tracer's summary of the command (``CommandRecord.accesses``, task
paths; the environment layer is not used) and ``after`` indexes the content check's states
(``CommandRecord.files``, ``records.FileState``; a small text file's text is in ``content``).
Built from a trajectory by ``load.facts_from_trajectory``, or by hand in tests. Nothing here
reads command text except ``stdout`` (for stdout-reuse matching) and ``command`` (only to look
up values that appeared in an earlier command's real stdout, and the shell names it uses).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import FileState
from ..tracer import AccessSets


def text_of(state: FileState | None) -> str | None:
    """The text of a path's state when known: a UTF-8 file within the content cap whose
    content is at hand. None: binary, oversized, not a file, or not loaded."""
    return state.content if state is not None and state.text else None


@dataclass
class CommandFacts:
    """One traced command (one agent step runs one command in this harness)."""

    index: int  # step index in the trajectory
    command: str
    exit_code: int = 0
    stdout: str = ""
    # the tracer's summary, as recorded: read (needed the pre-command version), written (new
    # content/entry at the end), deleted, meta (metadata-only changes), derived_from (written
    # path -> the pre-command path whose content it continues), ...
    accesses: AccessSets = field(default_factory=AccessSets)
    after: dict[str, FileState] = field(default_factory=dict)  # content check, by path
    n_tokens: int = 1  # loss tokens of this step (1 when not from a policy)
    traced: bool = True  # False: no command ran (invalid action, `done`): weight 1
    # working directory (from the trace): the shell's cwd before/after the command (None:
    # unknown) and the cwds its processes resolved relative paths against
    cwd_before: str | None = None
    cwd_after: str | None = None
    cwd_used: set[str] = field(default_factory=set)
    # the shell's own state: what the command changed (name -> "kind:digest" or "unset:",
    # from the shim) and the variables/command names its text uses (shellvars.py)
    shell_set: dict[str, str] = field(default_factory=dict)
    shell_reset: bool = False  # the shell ended during the command: its state is gone


@dataclass
class EpisodeFacts:
    instruction: str
    commands: list[CommandFacts]
    resources: list[str]  # cleaned verifier-inspected paths (E)
    listed: list[str] = field(default_factory=list)  # directories the verifier listed
