"""What DepGPO consumes: per-command facts from the tracer and the content check.

Plain dataclasses, built from a trial directory (``from_trial``) or by hand in tests. Nothing
here reads command text except ``stdout`` (for stdout-reuse matching) and ``command`` (only to
look up values that appeared in an earlier command's real stdout).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Version:
    """A path's state right after a command wrote it (from the content check)."""

    path: str
    kind: str = "file"  # file | dir | symlink | missing | other
    sha256: str | None = None
    text: str | None = None  # UTF-8 content when small enough; None: binary/oversized/unknown


@dataclass
class CommandFacts:
    """One traced command (one agent step runs one command in this harness)."""

    index: int  # step index in the trajectory
    command: str
    exit_code: int = 0
    stdout: str = ""
    read: set[str] = field(default_factory=set)  # needed the pre-command version
    listed: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)  # new content/entry at the end
    deleted: set[str] = field(default_factory=set)
    meta: set[str] = field(default_factory=set)  # metadata-only changes (chmod, touch)
    derived_from: dict[str, str] = field(default_factory=dict)  # written -> continued path
    after: dict[str, Version] = field(default_factory=dict)  # state of written paths after
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
    resources_raw: list[str] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)  # directories the verifier listed
