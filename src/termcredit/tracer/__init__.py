"""strace text -> file access events -> per-command access summary.

Pure functions, no Docker. Layers, each usable alone:
  lines.py    line grammar, `<unfinished ...>` stitching -> Syscall / Exit records
  decode.py   argument decoding: C escapes, -y annotations, -X raw numbers
  events.py   Syscall -> Event (the tracing.md §4.2 event table), path resolution
  procs.py    process table, cwd, marker segments, process -> command attribution
  summary.py  first-access / final-state / temp-file rules, environment layer
  session.py  parse_session(), summarize_segment()
"""

from .events import Event, Kind
from .lines import Exit, LineStats, Syscall, parse_records
from .procs import Marker, MarkerPath, Process, parse_marker
from .session import CommandTrace, SessionTrace, parse_session, summarize_segment
from .summary import AccessSets, AccessSummary, EnvironmentLayer, summarize

# The strace invocation the parser is written against (tracing.md §0). `-o` is appended.
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
STRACE_ARGS: tuple[str, ...] = (
    "-f", "-q", "-e", "signal=none", "--seccomp-bpf", "-y", "-X", "raw", "-ttt",
    "-s", "4096", "-e", f"trace={STRACE_TRACE_SET}",
)  # fmt: skip

__all__ = [
    "STRACE_ARGS",
    "STRACE_STAT_SET",
    "STRACE_TRACE_SET",
    "AccessSets",
    "AccessSummary",
    "CommandTrace",
    "EnvironmentLayer",
    "Event",
    "Exit",
    "Kind",
    "LineStats",
    "Marker",
    "MarkerPath",
    "Process",
    "SessionTrace",
    "Syscall",
    "parse_marker",
    "parse_records",
    "parse_session",
    "summarize",
    "summarize_segment",
]
