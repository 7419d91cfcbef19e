"""What the sandbox and the tracer agree on: how strace runs, and the marker paths.

The sandbox (``termcredit.sandbox.shell``) starts strace with ``strace_argv(role)`` and its
shell brackets every command with failing ``cd``s into the marker directory of the session,
``MARKER_ROOT/<NONCE>``:

    s<SEQ>                       before command SEQ
    e<SEQ>.<EXIT>.<TOKEN>        after it: its ``$?`` and a fresh secret of that command
                                 (older traces: ``e<SEQ>`` or ``e<SEQ>.<EXIT>``)
    cwd<PWD>                     the shell's EXIT trap: where a shell that a command ended stood

The tracer (this package) parses the trace that this strace invocation writes and cuts it into
commands at those markers. The in-container shim cannot import this module (it runs from its
source alone, stdlib only): the host sends it the strace argv and the marker directory of each
session when it starts it, so these values exist only here.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Path syscalls the tracer turns into events (the verifier's session adds STRACE_STAT_SET).
STRACE_TRACE_SET = (
    "open,openat,openat2,creat,rename,renameat,renameat2,unlink,unlinkat,rmdir,"
    "link,linkat,symlink,symlinkat,mkdir,mkdirat,mknod,mknodat,truncate,ftruncate,"
    "execve,execveat,clone,clone3,fork,vfork,chdir,fchdir,"
    "utimensat,fchmodat,chmod,fchownat,chown,lchown,utime,utimes,futimesat"
)
# The verifier's session also traces lookups: what the tests stat or probe (a mode they
# check, a file they assert is gone) is part of what they inspected. Not in the agent's
# session: an agent's shell stats paths constantly, for nothing credit needs.
STRACE_STAT_SET = "stat,lstat,newfstatat,statx,access,faccessat,faccessat2"
# The line format the parser is written against: -f follow forks, -q no attach/detach notes,
# no signal lines, -y fds shown as paths, -X raw flags as numbers (bit tests), -ttt epoch
# timestamps, -s 4096 string arguments; --seccomp-bpf stops the tracee only on the traced
# calls. --pidns-translation: the agent's processes live in their own PID namespace, and a
# clone's return value must name the child as the line prefixes do.
STRACE_FLAGS: tuple[str, ...] = (
    "--pidns-translation", "-f", "-q", "-e", "signal=none", "--seccomp-bpf", "-y", "-X", "raw",
    "-ttt", "-s", "4096",
)  # fmt: skip
VERIFIER = "verifier"  # the session whose trace also holds the stat family


def traced_syscalls(role: str) -> str:
    """The ``-e trace=`` set of a session: the verifier's adds the stat family."""
    return STRACE_TRACE_SET + ("," + STRACE_STAT_SET if role == VERIFIER else "")


def strace_argv(role: str) -> list[str]:
    """strace's argv for the session ``role`` up to ``-o``: the output path comes next."""
    return ["strace", *STRACE_FLAGS, "-e", f"trace={traced_syscalls(role)}", "-o"]


MARKER_ROOT = "/__termcredit__"
_ROOT = re.escape(MARKER_ROOT)
_MARKER = re.compile(
    _ROOT + r"/([0-9A-Fa-f]+)/([se])([0-9]{1,18})"
    r"(?:\.(-?[0-9]{1,10})(?:\.([0-9A-Fa-f]{1,64}))?)?/?"
)
_CWD_REPORT = re.compile(_ROOT + r"/[0-9A-Fa-f]+/cwd(?:/.*)?", re.S)


def marker_dir(nonce: str) -> str:
    """The marker directory of a session: its shell's marker `cd`s all go below it."""
    return f"{MARKER_ROOT}/{nonce}"


def is_marker_path(path: str) -> bool:
    """Is ``path`` the marker root or below it (a marker, a cwd report, or a fake)?"""
    return path == MARKER_ROOT or path.startswith(MARKER_ROOT + "/")


class MarkerPath(NamedTuple):
    nonce: str
    start: bool
    seq: int
    exit_code: int | None
    token: str | None


def parse_marker(path: str) -> MarkerPath | None:
    """(nonce, is_start, seq, exit code, token) of a segment marker path."""
    m = _MARKER.fullmatch(path)
    if m is None:
        return None
    code = int(m.group(4)) if m.group(4) is not None else None
    return MarkerPath(m.group(1), m.group(2) == "s", int(m.group(3)), code, m.group(5))


def is_cwd_report(path: str, nonce: str | None = None) -> bool:
    """Is ``path`` the EXIT trap's ``cwd<PWD>`` report (of session ``nonce``; None: any)?"""
    if nonce is None:
        return _CWD_REPORT.fullmatch(path) is not None
    head = f"{marker_dir(nonce)}/cwd"
    return path == head or path.startswith(head + "/")


_CHDIR = re.compile(r'chdir\("((?:[^"\\]|\\.)*)"\)')


def exit_cwd(text: str, nonce: str) -> str | None:
    """Where session ``nonce``'s shell stood when it ended: the path of the last EXIT-trap
    report in ``text`` (strace lines), or None where there is none. (The agent can read the
    trap and forge one: it only chooses where its own next shell starts, as `cd; exit` can.)"""
    from .decode import decode_text

    head, found = f"{marker_dir(nonce)}/cwd", None
    for m in _CHDIR.finditer(text):
        path = decode_text(m.group(1))
        if is_cwd_report(path, nonce):
            found = path[len(head):] or "/"
    return found
