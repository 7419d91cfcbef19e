"""strace text -> file access events -> per-command access summary.

Pure functions, no Docker. Layers, each usable alone:
  protocol.py the strace invocation and the marker paths, shared with the sandbox
  lines.py    line grammar, `<unfinished ...>` stitching -> Syscall / Exit records
  decode.py   argument decoding: C escapes, -y annotations, -X raw numbers
  events.py   Syscall -> Event (which syscall, flags and result make which Kind), paths
  segments.py marker segments and the integrity checks of the marker protocol
  procs.py    process table, cwd, process -> command attribution
  summary.py  first-access / final-state / temp-file rules, environment layer
  session.py  parse_session(), summarize_segment()
"""

from .events import Event, Kind
from .lines import Exit, LineStats, Syscall, parse_records
from .procs import Process
from .protocol import STRACE_STAT_SET, STRACE_TRACE_SET, MarkerPath, parse_marker, strace_argv
from .segments import Marker
from .session import CommandTrace, SessionTrace, parse_session, summarize_segment
from .summary import AccessSets, AccessSummary, EnvironmentLayer, summarize

__all__ = [
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
    "strace_argv",
    "summarize",
    "summarize_segment",
]
