"""strace output lines -> `Syscall` / `Exit` records.

The lines of the strace invocation in `protocol.py` (`-f -q -e signal=none -y -X raw -ttt`):
every line starts with the pid and an epoch timestamp. The five line shapes:

    PID TS name(arg, ...) = RET[<path>][(deleted)] [ERRNO (text)]
    PID TS name(arg, ... <unfinished ...>
    PID TS <... name resumed>rest-of-args) = RET ...
    PID TS +++ exited with N +++   |   PID TS +++ killed by SIGKILL +++
    PID TS name(...) = ?

Malformed lines never raise: they are counted in `LineStats.skipped` and dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from . import fast
from .decode import parse_annotation, split_top

# Digit runs are bounded: int() refuses > 4300 digits, and strace never prints such numbers.
_PREFIX = re.compile(r"\s*([0-9]{1,10})\s+(?:([0-9]{1,20}(?:\.[0-9]{1,9})?)\s+)?(.*)", re.S | re.A)
_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(", re.A)
_RESUMED = re.compile(r"<\.\.\. ([A-Za-z_][A-Za-z0-9_]*) resumed>(.*)", re.S | re.A)
_UNFINISHED = " <unfinished ...>"
_RET = re.compile(
    r"\s*=\s*(?P<ret>0x[0-9a-fA-F]{1,16}(?![0-9a-fA-F])|-?[0-9]{1,20}(?![0-9])|\?)"
    r"(?:\s*/\* (?P<nsret>[0-9]{1,10}) in strace's PID NS \*/)?"  # --pidns-translation: a child's pid as strace (and the line prefix) sees it
    r"(?:<(?P<ann>[^<>\n]*)>)?(?P<deleted>\s*\(deleted\))?"
    r"(?:\s+(?P<errno>E[A-Z0-9_]+))?",
    re.A,
)
_EXITED = re.compile(r"\+\+\+ exited with (-?[0-9]{1,10}) \+\+\+")
_KILLED = re.compile(r"\+\+\+ killed by (SIG[A-Z0-9+-]+|[0-9]{1,3})(?: \(core dumped\))? \+\+\+")


@dataclass(frozen=True, slots=True)
class Syscall:
    pid: int
    ts: float | None
    name: str
    args: tuple[str, ...]  # raw top-level argument texts; decode with tracer.decode
    ret: int | None  # None when strace printed `= ?`
    ret_path: str | None  # decoded -y annotation of the returned fd (`= 3</a/b>`)
    errno: str | None  # `ENOENT` etc.; None on success
    line_no: int  # 0-based index of the line that completed the call
    ret_deleted: bool = False  # `= 3</tmp/#123>(deleted)` (O_TMPFILE, unlinked file)
    resumed: bool = False  # stitched from `<unfinished ...>` + `<... resumed>`
    orphan: bool = False  # resumed line whose start was never seen: args are unknown (empty)

    @property
    def ok(self) -> bool:
        return self.ret is not None and self.ret >= 0 and self.errno is None


@dataclass(frozen=True, slots=True)
class Exit:
    pid: int
    ts: float | None
    code: int | None  # `+++ exited with N +++`
    signal: str | None  # `+++ killed by SIGKILL +++` (not printed under -e signal=none)
    line_no: int


Record = Syscall | Exit


@dataclass
class LineStats:
    lines: int = 0
    syscalls: int = 0
    exits: int = 0
    skipped: int = 0  # malformed lines (no pid prefix, unparsable call, unknown +++ form)
    ignored: int = 0  # well-formed but uninteresting: blank, `--- SIG... ---`, other `+++`
    unfinished_dropped: int = 0  # `<unfinished ...>` that never resumed (killed, cut off)
    orphan_resumes: int = 0  # `<... resumed>` without its start (segment cut mid-call)


@dataclass(slots=True)
class _Pending:
    name: str
    prefix: str


@dataclass
class LineParser:
    """Incremental parser; keeps the per-pid `<unfinished ...>` state between lines."""

    stats: LineStats = field(default_factory=LineStats)
    _pending: dict[int, _Pending] = field(default_factory=dict)

    def feed(self, line: str, line_no: int) -> Record | None:
        if fast.ENABLED and not line.endswith(("\r", "\n")) and (m := _FAST_PREFIX(line)):
            return self._fast(m.group(1), m.group(2), line[m.end() :], line_no)
        return self._feed(line, line_no)

    def _fast(self, pid_text: str, ts_text: str, body: str, line_no: int) -> Record | None:
        """_feed for a line `PID TS body` already split by fast.PREFIX (nothing to strip): a
        complete call in fast.BODY's shape straight from its memo, any other body as usual."""
        hit = _fast_body(body)
        pid = int(pid_text)
        stats = self.stats
        stats.lines += 1
        if not hit:
            return self._count(self._body(pid, float(ts_text), body, line_no))
        if pid in self._pending:  # as in _body: the pending call will never resume
            stats.unfinished_dropped += 1
            del self._pending[pid]
        stats.syscalls += 1
        name, args, ret, ret_path, errno, deleted = hit  # type: ignore[misc]
        return _new_syscall(  # type: ignore[no-any-return]
            pid, float(ts_text), name, args, ret, ret_path, errno, line_no, deleted, False, False
        )

    def _feed(self, line: str, line_no: int) -> Record | None:
        self.stats.lines += 1
        line = line.rstrip("\r\n")
        if not line.strip():
            self.stats.ignored += 1
            return None
        m = _PREFIX.fullmatch(line)
        if m is None:
            self.stats.skipped += 1
            return None
        pid = int(m.group(1))
        ts = float(m.group(2)) if m.group(2) is not None else None
        body = m.group(3)
        return self._count(self._body(pid, ts, body, line_no))

    def _count(self, rec: Record | None) -> Record | None:
        if isinstance(rec, Syscall):
            self.stats.syscalls += 1
        elif isinstance(rec, Exit):
            self.stats.exits += 1
        return rec

    def finish(self) -> None:
        """Count calls left unfinished at the end of the text."""
        self.stats.unfinished_dropped += len(self._pending)
        self._pending.clear()

    def _body(self, pid: int, ts: float | None, body: str, line_no: int) -> Record | None:
        if body.startswith("+++"):
            return self._exit(pid, ts, body, line_no)
        if body.startswith("---"):
            self.stats.ignored += 1
            return None
        if body.startswith("<..."):
            return self._resumed(pid, ts, body, line_no)
        name_m = _NAME.match(body)
        if name_m is None:
            self.stats.skipped += 1
            return None
        if body.endswith(_UNFINISHED):
            if pid in self._pending:  # a call cannot start while another one is pending
                self.stats.unfinished_dropped += 1
            self._pending[pid] = _Pending(name_m.group(1), body[: -len(_UNFINISHED)])
            return None
        if pid in self._pending:
            self.stats.unfinished_dropped += 1
            del self._pending[pid]
        return self._call(pid, ts, body, line_no)

    def _exit(self, pid: int, ts: float | None, body: str, line_no: int) -> Record | None:
        if pid in self._pending:  # its pending call will never resume
            self.stats.unfinished_dropped += 1
            del self._pending[pid]
        if (m := _EXITED.fullmatch(body)) is not None:
            return Exit(pid, ts, int(m.group(1)), None, line_no)
        if (m := _KILLED.fullmatch(body)) is not None:
            return Exit(pid, ts, None, m.group(1), line_no)
        if body.endswith("+++") and not body.startswith(("+++ exited", "+++ killed")):
            self.stats.ignored += 1  # e.g. `+++ superseded by execve in pid N +++`
        else:
            self.stats.skipped += 1
        return None

    def _resumed(self, pid: int, ts: float | None, body: str, line_no: int) -> Record | None:
        m = _RESUMED.fullmatch(body)
        if m is None:
            self.stats.skipped += 1
            return None
        name, rest = m.group(1), m.group(2)
        pending = self._pending.pop(pid, None)
        if pending is not None and pending.name == name:
            return self._call(pid, ts, pending.prefix + rest, line_no, resumed=True)
        if pending is not None:
            self.stats.unfinished_dropped += 1
        # The start is missing (text cut mid-call): the return value is still worth having
        # (a clone's child pid), the arguments are not.
        self.stats.orphan_resumes += 1
        return self._call(pid, ts, f"{name}({rest}", line_no, resumed=True, orphan=True)

    def _call(
        self,
        pid: int,
        ts: float | None,
        body: str,
        line_no: int,
        *,
        resumed: bool = False,
        orphan: bool = False,
    ) -> Syscall | None:
        if fast.ENABLED and resumed and not orphan and (hit := _fast_body(body)):
            name, args, ret, ret_path, errno, deleted = hit  # type: ignore[misc]
            return _new_syscall(  # type: ignore[no-any-return]
                pid, ts, name, args, ret, ret_path, errno, line_no, deleted, resumed, False
            )
        name_m = _NAME.match(body)
        if name_m is None:
            self.stats.skipped += 1
            return None
        args, end = split_top(body, name_m.end())
        ret_m = _RET.match(body, end) if end is not None else None
        if ret_m is None:
            self.stats.skipped += 1
            return None
        ret_text = ret_m.group("nsret") or ret_m.group("ret")
        if ret_text == "?":
            ret = None
        elif ret_text.startswith("0x"):
            ret = int(ret_text, 16)
        else:
            ret = int(ret_text)
        ret_path = None
        deleted = ret_m.group("deleted") is not None
        if ret_m.group("ann") is not None:
            ret_path, deleted_inside = parse_annotation(ret_m.group("ann"))
            deleted = deleted or deleted_inside
        return Syscall(
            pid=pid,
            ts=ts,
            name=name_m.group(1),
            args=() if orphan else tuple(args),
            ret=ret,
            ret_path=ret_path,
            errno=ret_m.group("errno"),
            line_no=line_no,
            ret_deleted=deleted,
            resumed=resumed,
            orphan=orphan,
        )


_FAST_PREFIX = fast.PREFIX.match
# (pid, ts, name, args, ret, ret_path, errno, line_no, ret_deleted, resumed, orphan)
_new_syscall = fast.slot_builder(Syscall)


@fast.memoized  # a trace repeats its calls (ld.so, locale files, the markers) over and over
def _fast_body(body: str) -> tuple | bool:
    """(name, args, ret, ret_path, errno, ret_deleted) as _call finds them in a complete call
    of fast.BODY's shape; False for any other body."""
    if body.endswith((_UNFINISHED, "\r", "\n")):  # a pending call; _feed strips \r\n first
        return False
    m = fast.BODY.match(body)
    if m is None:
        return False
    groups = m.groups()
    ret_text, nsret, ann, deleted, errno = groups[-5:]
    ret_text = nsret or ret_text
    if ret_text == "?":
        ret = None
    elif ret_text.startswith("0x"):
        ret = int(ret_text, 16)
    else:
        ret = int(ret_text)
    ret_path = None
    deleted = deleted is not None
    if ann is not None:
        ret_path, deleted_inside = parse_annotation(ann)
        deleted = deleted or deleted_inside
    return groups[0], fast.body_args(groups), ret, ret_path, errno, deleted


def iter_records(text: str, parser: LineParser | None = None, *, first_line: int = 0,
                 last: bool = True) -> Iterator[Record]:
    """Records of a trace text, in line order, its lines numbered from ``first_line``.
    ``last``: no more text follows (calls still unfinished are counted as dropped); False for
    a chunk of a trace that goes on. Lines split on `\\n` only: strace escapes every other
    control character, and str.splitlines() would also split on \\x1c, \\x85, U+2028 ...
    which may occur in a decoded trace."""
    parser = parser if parser is not None else LineParser()
    lines = text.split("\n")
    rows = fast.ROWS.findall(text) if fast.ENABLED else []  # (pid, ts, body) of each line
    aligned = len(rows) == len(lines)  # always, when on
    if lines and lines[-1] == "":
        lines.pop()  # the trailing newline does not start another line
    if aligned:
        fast_call, feed = parser._fast, parser._feed
        for line_no, ((pid_text, ts_text, body), line) in enumerate(zip(rows, lines), first_line):
            if pid_text and not body.endswith("\r"):
                rec = fast_call(pid_text, ts_text, body, line_no)
            else:
                rec = feed(line, line_no)
            if rec is not None:
                yield rec
    else:
        for line_no, line in enumerate(lines, first_line):
            rec = parser.feed(line, line_no)
            if rec is not None:
                yield rec
    if last:
        parser.finish()


def parse_records(text: str) -> tuple[list[Record], LineStats]:
    parser = LineParser()
    records = list(iter_records(text, parser))
    return records, parser.stats
