"""Which tracer a run's sandboxes use: ``[sandbox] tracer = "auto" | "ebpf" | "strace"``.

``resolve_tracer`` turns the setting into the backend that runs (``strace`` or ``ebpf``) and
the one line that says why, where the choice was not the user's own. ``ebpf`` where the host
cannot run it is an error with the reason, never a quiet fall back to strace: the user asked
for what strace cannot give (ptrace for the agent, tracing across setuid).
"""

from __future__ import annotations

import os
from collections.abc import Callable

TRACER_CHOICES = ("auto", "ebpf", "strace")
DEFAULT_TRACER = "auto"

# Whether a sandbox session can be traced by the eBPF backend end to end: the shared host
# tracer follows both sessions (sandbox/host_steps.py), so ``auto`` prefers it where it runs.
EBPF_SESSIONS = True
NOT_WIRED = "the eBPF tracer does not yet follow sandbox sessions end to end (issue #33)"
# ``auto`` as strace whatever the host can do: the test suite sets it (its sandboxes would
# otherwise each process pay the host tracer's 15-60 s start; the eBPF path has its own tests)
AUTO_ENV = "TERMCREDIT_AUTO_TRACER"


# A task whose agent must ptrace its own processes (strace, gdb) says so in [metadata]; under
# strace they are strace's tracees already, so PTRACE_TRACEME and attach fail for them.
PTRACE_KEY = "agent_ptrace"
NO_PTRACE = (f"the agent must ptrace its own processes ([metadata] {PTRACE_KEY}), which it "
             "cannot under strace (they are strace's tracees already): use --tracer ebpf")


def tracer_unsupported(metadata: dict[str, object], backend: str) -> list[str]:
    """Why a task cannot be run with ``backend`` tracing its sandboxes (none: it can)."""
    return [NO_PTRACE] if backend == "strace" and metadata.get(PTRACE_KEY) is True else []


class TracerUnavailable(ValueError):
    """``tracer = "ebpf"`` on a host (or a build) that cannot trace sandboxes with it."""


def check_choice(value: object, where: str = "tracer") -> str:
    """``value`` when it is one of TRACER_CHOICES, else a ValueError naming ``where``."""
    if value not in TRACER_CHOICES:
        raise ValueError(f"{where}: must be one of {', '.join(map(repr, TRACER_CHOICES))}, "
                         f"not {value!r}")
    return str(value)


def _ebpf_why_not() -> str | None:
    from .ebpf import available

    return available()


def resolve_tracer(choice: str, why_not: Callable[[], str | None] | None = None,
                   wired: bool | None = None) -> tuple[str, str | None]:
    """(backend, note): the backend the sandboxes use for ``choice``, and a line to show
    where ``auto`` decided (None when the user named the backend). ``why_not`` says why this
    host cannot run eBPF (None: it can); ``wired`` stands for EBPF_SESSIONS (tests)."""
    check_choice(choice)
    asked = why_not is None  # this host's own answer (not a test's stand-in)
    why_not = why_not or _ebpf_why_not
    wired = EBPF_SESSIONS if wired is None else wired
    if choice == "strace":
        return "strace", None
    if choice == "ebpf":
        why = why_not()
        if why is not None:
            raise TracerUnavailable(f"tracer 'ebpf' is unavailable on this host: {why}")
        if not wired:
            raise TracerUnavailable(f"tracer 'ebpf': {NOT_WIRED}; use 'strace' or 'auto'")
        return "ebpf", None
    if not wired:  # no probe of the host: its answer would change nothing
        return "strace", f"tracer: strace (auto: {NOT_WIRED})"
    if asked and os.environ.get(AUTO_ENV) == "strace":
        return "strace", f"tracer: strace (auto: {AUTO_ENV}=strace)"
    why = why_not()
    if why is not None:
        return "strace", f"tracer: strace (auto: {why})"
    return "ebpf", "tracer: ebpf (auto: this host can trace from the kernel)"


def for_backend(choice: str, backend: str, note: str | None, sandboxes: str,
                start: Callable[[], object] | None = None) -> tuple[str, str | None]:
    """(backend, note) once the sandboxes' backend is known: the host tracer cuts a session's
    steps in the process that runs its shells, so eBPF follows ``local`` sandboxes only; and
    there it is started now (``start``: the host tracer's, by default), so a host that cannot
    attach it (each bpftrace attaches 18 programs to execve's tracepoint, which holds 64) is
    known before any sandbox. ``auto`` falls back to strace (saying why), ``ebpf`` is an
    error."""
    if backend == "ebpf" and sandboxes == "local":
        try:
            (start or _start_host_tracer)()
            return backend, note
        except RuntimeError as exc:
            why = f"the host tracer did not start: {str(exc)[:300]}"
    elif backend == "ebpf":
        why = f"the eBPF tracer follows local sandboxes only, not the {sandboxes!r} backend's"
    else:
        return backend, note
    if choice == "ebpf":
        raise TracerUnavailable(f"tracer 'ebpf': {why}")
    return "strace", f"tracer: strace (auto: {why})"


def _start_host_tracer() -> object:
    from .ebpf_host import host_tracer

    return host_tracer()
