"""Raw records of the eBPF program -> strace lines, in the format ``lines.py`` parses.

So the parser, the markers, the segments and every consumer stay one code path for both
backends. What strace's ``-y`` reads from ``/proc`` at each call is kept here instead: a cwd
per process (shared under CLONE_FS), and a map from an open file (the kernel's ``struct file``
and its dentry, which the program sends for each fd argument and each opened fd) to the path
it was opened by: dups, forks and close need no tracing (a dup shares its file, a closed
file's fd no longer names it). Paths are joined lexically (strace's annotations come from the kernel and resolve symlinks;
see ``Converter`` for where that differs).
"""

from __future__ import annotations

import errno as _errno
import posixpath
import re
import signal as _signal
from dataclasses import dataclass, field

from .ebpf_program import CHUNK, SYSCALLS, Numbering, record_size
from .fsroot import FsRoot

AT_FDCWD = -100
O_TMPFILE_BIT = 0x400000
O_NOFOLLOW = 0x20000
CLONE_FS = 0x200
_LOST = re.compile(rb"\s*Lost ([0-9]{1,19}) events\s*")


@dataclass
class Records:
    """The framed records of one run, and what came between them."""

    items: list[tuple[bytes, list[bytes], bytes]] = field(default_factory=list)  # kind, nums, text
    lost: int = 0  # events bpftrace reported lost (kernel buffer full)
    stray: list[bytes] = field(default_factory=list)  # other output between records
    ready: bool = False


def split_records(data: bytes, nonce: str) -> Records:
    """Cut bpftrace's output into records. Only the nonce frames a record, and only strings
    (S chunks, a C record's text) carry agent bytes, after their numeric fields."""
    n = nonce.encode()
    out = Records()
    end = n + b"Z\n"
    pos = 0
    while True:
        start = data.find(n, pos)
        gap = data[pos : len(data) if start < 0 else start]
        if gap.strip():
            m = _LOST.fullmatch(gap)
            if m:
                out.lost += int(m.group(1))
            else:
                out.stray.append(gap[:200])
        if start < 0:
            break
        stop = data.find(end, start + len(n))
        if stop < 0:
            out.stray.append(data[start : start + 200])  # cut off (tracer killed mid-write)
            break
        body = data[start + len(n) : stop]
        pos = stop + len(end)
        kind, body = body[:1], body[1:]
        if kind == b"S":  # t tid i k TEXT: the text may hold spaces
            parts = body[1:].split(b" ", 4)  # after the space that follows the kind
            if len(parts) == 5:
                out.items.append((kind, parts[:4], parts[4]))
            continue
        if kind == b"C":  # n, then n numbers, then the call's first string (spaces and all)
            count, _, rest = body[1:].partition(b" ")
            if count.isdigit():
                parts = rest.split(b" ", int(count))
                out.items.append((kind, parts[: int(count)], b"".join(parts[int(count):])))
            continue
        if kind == b"O":  # a child the full traced-tasks map could not hold: untraced
            out.lost += 1
            continue
        if kind == b"R":
            out.ready = True
        out.items.append((kind, body.split(), b""))
    return out


def quote(raw: bytes, specials: bytes = b"") -> str:
    """strace's C quoting: printable ASCII as is, ``"`` and ``\\`` escaped, the rest \\xNN."""
    out = []
    for b in raw:
        c = chr(b)
        if c in '"\\' or b in specials:
            out.append("\\" + c if c in '"\\' else f"\\x{b:02x}")
        elif 0x20 <= b < 0x7F:
            out.append(c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def annotate(path: bytes) -> str:
    """A -y annotation's text: strace escapes the brackets inside it."""
    return "<" + quote(path, b"<>") + ">"


class Cell:
    """A cwd or an fd table, shared between tasks that share it (threads)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


@dataclass
class Task:
    cwd: Cell  # bytes path or None (unknown)


FileKey = tuple[int, int]  # the kernel's struct file and its dentry (0, 0: no open file)


@dataclass
class Enter:
    tid: int
    t: int
    nr: int
    nums: list[int]
    files: dict[int, FileKey] = field(default_factory=dict)  # fd argument -> its open file
    opened: FileKey = (0, 0)  # an open's result
    ret: int = 0  # a C record's result (exec and clone get theirs from an X record)
    strings: dict[int, dict[int, bytes]] = field(default_factory=dict)  # arg -> chunk -> bytes

    def string(self, i: int) -> bytes | None:
        """Argument ``i``'s bytes: chunks while each is full (later ones are stale memory)."""
        chunks = self.strings.get(i)
        if not chunks or 0 not in chunks:
            return None
        out = b""
        k = 0
        while k in chunks:
            out += chunks[k]
            if len(chunks[k]) < CHUNK:
                break
            k += 1
        return out


class Converter:
    """Replays records in time order and prints one strace line per finished traced call.

    A returned fd's annotation and a chdir's cwd are resolved through ``fsroot`` (the traced
    tasks' filesystem: links followed, as the kernel names the file strace shows), else joined
    lexically. Known differences from strace: the links are read when the records are
    converted, not at the call (``fsroot``); an fd the traced tasks had before tracing began,
    or made by an untraced call (a pipe, a socket), has no annotation."""

    def __init__(self, numbering: Numbering, root: int, cwd: bytes | None,
                 epoch_ns: int = 0, fsroot: FsRoot | None = None) -> None:
        self.names = numbering.names
        self.fsroot = fsroot
        self.epoch_ns = epoch_ns  # wall clock minus the kernel's monotonic clock
        self.tasks: dict[int, Task] = {root: Task(Cell(cwd))}
        self.files: dict[FileKey, bytes | None] = {}  # open file -> the path it was opened by
        self.pending: dict[int, Enter] = {}
        self.unpaired = 0  # exits without their entry (a lost record)

    # ------------------------------------------------------------------ input
    def _call(self, vals: list[int], text: bytes) -> Enter | None:
        """A C record: the whole call (entry time, tid, nr, ret, arguments, files, string)."""
        nr = vals[2]
        if not 0 <= nr < len(self.names) or len(vals) != record_size(self.names[nr]):
            return None
        spec = SYSCALLS[self.names[nr]]
        e = Enter(vals[1], vals[0], nr, vals[4 : 4 + len(spec)])
        e.files = _fd_files(spec, vals[4 + len(spec):])
        if self.names[nr] in ("open", "openat", "openat2", "creat"):
            e.opened = (vals[-2], vals[-1])
        strs = [i for i, (_, kind) in enumerate(spec) if kind == "str"]
        if strs:
            e.strings[strs[0]] = {0: text}
        e.ret = vals[3]
        return e

    def convert(self, records: Records) -> list[str]:
        enters: dict[tuple[int, int], Enter] = {}
        chunks: list[list[int | bytes]] = []  # strings are read at the exit: maybe on another CPU
        timeline: list[tuple[int, int, object]] = []
        for i, (kind, nums, text) in enumerate(records.items):
            item = self.read(i, kind, nums, text, enters, chunks)
            if item is not None:
                timeline.append(item)
        for t, tid, i, k, text in chunks:
            e2 = enters.get((tid, t))  # type: ignore[arg-type]
            if e2 is not None:
                e2.strings.setdefault(i, {})[k] = text  # type: ignore[index,assignment]
        timeline.sort(key=lambda x: (x[0], x[1]))
        lines: list[str] = []
        for _, _, item in timeline:
            line = self.replay(item)
            if line is not None:
                lines.append(line)
        if records.lost:  # not a trace line: the parser counts it as malformed and flags it
            lines.append(lost_line(records.lost))
        return lines

    def read(self, i: int, kind: bytes, nums: list[bytes], text: bytes,
             enters: dict[tuple[int, int], Enter],
             chunks: list[list[int | bytes]]) -> tuple[int, int, object] | None:
        """Record ``i``: its place in the timeline ((time, i, item)), or None (an S chunk,
        put in ``chunks``; a malformed record). Calls are also put in ``enters``."""
        try:
            vals = [int(x) for x in nums]
        except ValueError:
            return None
        if kind == b"C" and len(vals) >= 4:
            call = self._call(vals, text)
            if call is not None:
                enters[(call.tid, call.t)] = call
                return (call.t, i, (kind, call))
        elif kind == b"E" and len(vals) >= 3 and 0 <= vals[2] < len(self.names):
            spec = SYSCALLS[self.names[vals[2]]]
            e = Enter(vals[1], vals[0], vals[2], vals[3 : 3 + len(spec)])
            e.files = _fd_files(spec, vals[3 + len(spec):])
            enters[(e.tid, e.t)] = e
            return (e.t, i, e)
        elif kind == b"S" and len(vals) == 4:
            chunks.append([*vals, text])
        elif (kind == b"X" and len(vals) == 4) or (kind in (b"F", b"Q") and len(vals) == 3):
            return (vals[0], i, (kind, vals))
        return None

    def replay(self, item: object) -> str | None:
        """One timeline item, in time order: its strace line, if it makes one."""
        if isinstance(item, Enter):
            self.pending[item.tid] = item
            return None
        kind, vals = item  # type: ignore[misc]
        if kind == b"C":
            return self._line(vals, vals.ret)
        if kind == b"F":
            self._fork(vals[1], vals[2])
            return None
        if kind == b"Q":
            return self._exit(vals[0], vals[1], vals[2])
        return self._finish(vals[1], vals[2], vals[3])

    # ------------------------------------------------------------------ state
    def _task(self, tid: int) -> Task:
        task = self.tasks.get(tid)
        if task is None:  # never forked while traced: nothing known about it
            task = self.tasks[tid] = Task(Cell(None))
        return task

    def _fork(self, parent: int, child: int) -> None:
        p = self._task(parent)
        flags = 0
        e = self.pending.get(parent)
        if e is not None and self.names[e.nr] in ("clone", "clone3"):
            flags = e.nums[1] if self.names[e.nr] == "clone" else e.nums[0]
        self.tasks[child] = Task(p.cwd if flags & CLONE_FS else Cell(p.cwd.value))

    def _ts(self, t: int) -> str:
        ns = self.epoch_ns + t
        return f"{ns // 1_000_000_000}.{ns % 1_000_000_000 // 1000:06d}"

    def _exit(self, t: int, tid: int, code: int) -> str:
        self.pending.pop(tid, None)
        self.tasks.pop(tid, None)
        if code & 0x7F:
            try:
                sig = _signal.Signals(code & 0x7F).name
            except ValueError:
                sig = str(code & 0x7F)
            core = " (core dumped)" if code & 0x80 else ""
            return f"{tid} {self._ts(t)} +++ killed by {sig}{core} +++"
        return f"{tid} {self._ts(t)} +++ exited with {(code >> 8) & 0xFF} +++"

    # ------------------------------------------------------------------ one call
    def _finish(self, tid: int, nr: int, ret: int) -> str | None:
        """An X record (exec, clone): the call entered earlier is done."""
        e = self.pending.pop(tid, None)
        if e is None or e.nr != nr:
            if not (0 <= nr < len(self.names) and self.names[nr] in
                    ("clone", "clone3", "fork", "vfork") and ret == 0):
                self.unpaired += 1  # a new child's return from clone needs no line
            return None
        return self._line(e, ret)

    def _line(self, e: Enter, ret: int) -> str:
        task = self._task(e.tid)
        name = self.names[e.nr]
        args = self._args(task, name, e)  # before the state changes (a chdir's own cwd)
        ann = ""
        if ret >= 0:
            ann = self._apply(task, name, e)
        result = f"{ret}{ann}"
        if ret < 0:
            code = _errno.errorcode.get(-ret, f"E{-ret}")
            result = f"-1 {code} ({_strerror(-ret)})"
        return f"{e.tid} {self._ts(e.t)} {name}({', '.join(args)}) = {result}"

    def _resolve(self, task: Task, e: Enter, i: int, raw: bytes | None,
                 follow_last: bool = True) -> bytes | None:
        """String argument ``i`` as a path: relative to fd argument ``i - 1`` where the call
        has one there (the *at calls), else to the cwd; through ``fsroot`` where there is one
        (``follow_last``: a link as the last component is followed, as the call did)."""
        if raw is None:
            return None
        kinds = [k for _, k in SYSCALLS[self.names[e.nr]]]
        if raw.startswith(b"/"):
            path = raw
        elif i > 0 and kinds[i - 1] == "fd" and _s32(e.nums[i - 1]) != AT_FDCWD:
            base = self.files.get(e.files.get(i - 1, (0, 0)))
            path = None if base is None else base + b"/" + raw
        else:
            base = task.cwd.value  # type: ignore[assignment]
            path = None if base is None else base + b"/" + raw
        if path is None:
            return None
        if self.fsroot is not None:
            return self.fsroot.resolve(path, follow_last)
        return _norm(path)

    def forget(self) -> None:
        """What was read of the links is stale from here (a new batch of records)."""
        if self.fsroot is not None:
            self.fsroot.forget()

    def _apply(self, task: Task, name: str, e: Enter) -> str:
        """Effects of a successful call on the cwd and the open files; the returned fd's
        annotation (opens)."""
        kinds = [k for _, k in SYSCALLS[name]]
        if name in ("open", "openat", "openat2", "creat"):
            si = kinds.index("str")
            if name == "creat":
                flags = 0x241
            elif name == "openat2":
                flags = e.nums[2]
            else:
                flags = e.nums[kinds.index("flags")]
            follow = not flags & O_NOFOLLOW  # O_PATH|O_NOFOLLOW opens the link itself
            path = None if flags & O_TMPFILE_BIT else self._resolve(task, e, si, e.string(si),
                                                                    bool(follow))
            if e.opened != (0, 0):
                self.files[e.opened] = path
            return annotate(path) if path is not None else ""
        if name == "chdir":
            task.cwd.value = self._resolve(task, e, 0, e.string(0))
        elif name == "fchdir":
            task.cwd.value = self.files.get(e.files.get(0, (0, 0)))
        return ""

    def _args(self, task: Task, name: str, e: Enter) -> list[str]:
        out = []
        for i, (_, kind) in enumerate(SYSCALLS[name]):
            v = e.nums[i] if i < len(e.nums) else 0
            if kind == "fd":
                out.append(self._fd_text(task, v, e.files.get(i, (0, 0))))
            elif kind == "str":
                s = e.string(i)
                out.append("NULL" if v == 0 else f"0x{v & (2**64 - 1):x}" if s is None
                           else f'"{quote(s)}"')
            elif kind == "flags":
                out.append(f"0x{v & (2**64 - 1):x}" if v else "0")
            elif kind == "mode":
                out.append(f"0{v & 0o7777:o}")
            elif kind == "ptr":
                out.append("NULL" if v == 0 else f"0x{v & (2**64 - 1):x}")
            elif kind == "argv":
                items = []
                for j in range(100, 200):
                    s = e.string(j)
                    if s is None:
                        break
                    items.append(f'"{quote(s)}"')
                out.append("[" + ", ".join(items) + "]" if v else "NULL")
            elif kind in ("how", "cargs"):
                out.append(f"{{flags=0x{v & (2**64 - 1):x}}}")
            else:
                out.append(str(v))
        if name == "clone":  # strace prints child_stack=..., flags=...: the parser reads flags=
            out = [f"child_stack={out[0]}", f"flags={out[1]}", *out[2:]]
        return out

    def _fd_text(self, task: Task, v: int, key: FileKey) -> str:
        v = _s32(v)
        if v == AT_FDCWD:
            cwd = task.cwd.value
            return "-100" if cwd is None else "-100" + annotate(cwd)  # type: ignore[arg-type]
        path = self.files.get(key) if key != (0, 0) else None
        return str(v) if path is None else f"{v}{annotate(path)}"


def lost_line(n: int) -> str:
    """The line for ``n`` events the kernel dropped: not a trace line, so the parser counts
    it as malformed and flags the segment it falls in."""
    return f"ebpf: lost {n} events"


def _fd_files(spec: tuple[tuple[str, str], ...], vals: list[int]) -> dict[int, FileKey]:
    """The (file, dentry) pairs that follow the arguments, by the fd argument they belong to."""
    out = {}
    k = 0
    for i, (_, kind) in enumerate(spec):
        if kind == "fd" and k + 1 < len(vals):
            out[i] = (vals[k], vals[k + 1])
            k += 2
    return out


def _s32(v: int) -> int:
    """An int argument printed as 64 bits (AT_FDCWD sign-extended, or not)."""
    v &= 0xFFFFFFFF
    return v - 2**32 if v >= 2**31 else v


def _norm(path: bytes) -> bytes:
    out = posixpath.normpath(path)
    return b"/" + out.lstrip(b"/") if out.startswith(b"//") else out


def _strerror(code: int) -> str:
    import os

    try:
        return os.strerror(code)
    except ValueError:
        return "Unknown error"
