"""Raw records of the eBPF program -> strace lines, in the format ``lines.py`` parses.

So the parser, the markers, the segments and every consumer stay one code path for both
backends. What strace's ``-y`` reads from ``/proc`` at each call is kept here instead: a cwd
per process (shared under CLONE_FS) and an fd table (shared under CLONE_FILES), fed by the
traced calls and by close/dup*/fcntl/close_range, which the program traces for this alone.
Paths are joined lexically (strace's annotations come from the kernel and resolve symlinks;
see ``Converter`` for where that differs).
"""

from __future__ import annotations

import errno as _errno
import posixpath
import re
import signal as _signal
from dataclasses import dataclass, field

from .ebpf_program import CHUNK, FCNTL_CMDS, SYSCALLS, Numbering

AT_FDCWD = -100
O_CLOEXEC = 0o2000000
O_TMPFILE_BIT = 0x400000
CLONE_FS = 0x200
CLONE_FILES = 0x400
CLOSE_RANGE_UNSHARE = 2
CLOSE_RANGE_CLOEXEC = 4
F_DUPFD, F_SETFD, F_DUPFD_CLOEXEC = FCNTL_CMDS
_LOST = re.compile(rb"\s*Lost ([0-9]{1,19}) events\s*")


@dataclass
class Records:
    """The framed records of one run, and what came between them."""

    items: list[tuple[bytes, list[bytes], bytes]] = field(default_factory=list)  # kind, nums, text
    lost: int = 0  # events bpftrace reported lost (kernel buffer full)
    stray: list[bytes] = field(default_factory=list)  # other output between records
    ready: bool = False


def split_records(data: bytes, nonce: str) -> Records:
    """Cut bpftrace's output into records. Only the nonce frames a record, and only string
    chunks (S) carry agent bytes, after their numeric fields."""
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
    fds: Cell  # dict fd -> (path bytes or None, cloexec)


@dataclass
class Enter:
    tid: int
    t: int
    nr: int
    nums: list[int]
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

    Known difference from strace: a returned fd's annotation is the lexically joined path,
    where strace shows the kernel's (symlinks resolved)."""

    def __init__(self, numbering: Numbering, root: int, cwd: bytes | None,
                 fds: dict[int, bytes] | None = None, epoch_ns: int = 0) -> None:
        self.names = numbering.names
        self.epoch_ns = epoch_ns  # wall clock minus the kernel's monotonic clock
        self.tasks: dict[int, Task] = {
            root: Task(Cell(cwd), Cell({fd: (p, False) for fd, p in (fds or {}).items()}))}
        self.pending: dict[int, Enter] = {}
        self.unpaired = 0  # exits without their entry (a lost record)

    # ------------------------------------------------------------------ input
    def convert(self, records: Records) -> list[str]:
        enters: dict[tuple[int, int], Enter] = {}
        chunks: list[list[int | bytes]] = []  # strings are read at the exit: maybe on another CPU
        timeline: list[tuple[int, int, object]] = []
        for i, (kind, nums, text) in enumerate(records.items):
            try:
                vals = [int(x) for x in nums]
            except ValueError:
                continue
            if kind == b"E" and len(vals) >= 3:
                e = Enter(vals[1], vals[0], vals[2], vals[3:])
                enters[(e.tid, e.t)] = e
                timeline.append((e.t, i, e))
            elif kind == b"S" and len(vals) == 4:
                chunks.append([*vals, text])
            elif (kind == b"X" and len(vals) == 4) or (kind in (b"F", b"Q") and len(vals) == 3):
                timeline.append((vals[0], i, (kind, vals)))
        for t, tid, i, k, text in chunks:
            e2 = enters.get((tid, t))  # type: ignore[arg-type]
            if e2 is not None:
                e2.strings.setdefault(i, {})[k] = text  # type: ignore[index,assignment]
        timeline.sort(key=lambda x: (x[0], x[1]))
        lines: list[str] = []
        for _, _, item in timeline:
            if isinstance(item, Enter):
                self.pending[item.tid] = item
                continue
            kind, vals = item  # type: ignore[misc]
            if kind == b"F":
                self._fork(vals[1], vals[2])
            elif kind == b"Q":
                lines.append(self._exit(vals[0], vals[1], vals[2]))
            else:
                line = self._finish(vals[0], vals[1], vals[2], vals[3])
                if line is not None:
                    lines.append(line)
        if records.lost:  # not a trace line: the parser counts it as malformed and flags it
            lines.append(f"ebpf: lost {records.lost} events")
        return lines

    # ------------------------------------------------------------------ state
    def _task(self, tid: int) -> Task:
        task = self.tasks.get(tid)
        if task is None:  # never forked while traced: nothing known about it
            task = self.tasks[tid] = Task(Cell(None), Cell({}))
        return task

    def _fork(self, parent: int, child: int) -> None:
        p = self._task(parent)
        flags = 0
        e = self.pending.get(parent)
        if e is not None and self.names[e.nr] in ("clone", "clone3"):
            flags = e.nums[1] if self.names[e.nr] == "clone" else e.nums[0]
        cwd = p.cwd if flags & CLONE_FS else Cell(p.cwd.value)
        fds = p.fds if flags & CLONE_FILES else Cell(dict(p.fds.value))  # type: ignore[call-overload]
        self.tasks[child] = Task(cwd, fds)

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
    def _finish(self, t: int, tid: int, nr: int, ret: int) -> str | None:
        e = self.pending.pop(tid, None)
        if e is None or e.nr != nr:
            if not (0 <= nr < len(self.names) and self.names[nr] in
                    ("clone", "clone3", "fork", "vfork") and ret == 0):
                self.unpaired += 1  # a new child's return from clone needs no line
            return None
        task = self._task(tid)
        name = self.names[nr]
        if name not in SYSCALLS:
            self._fd_call(task, name, e.nums, ret)
            return None
        args = self._args(task, name, e)  # before the state changes (a chdir's own cwd)
        ann = ""
        if ret >= 0:
            ann = self._apply(task, name, e, ret)
        result = f"{ret}{ann}"
        if ret < 0:
            code = _errno.errorcode.get(-ret, f"E{-ret}")
            result = f"-1 {code} ({_strerror(-ret)})"
        return f"{tid} {self._ts(e.t)} {name}({', '.join(args)}) = {result}"

    def _fd_call(self, task: Task, name: str, nums: list[int], ret: int) -> None:
        fds: dict[int, tuple[bytes | None, bool]] = task.fds.value  # type: ignore[assignment]
        if ret < 0:
            return
        if name == "close":
            fds.pop(nums[0], None)
        elif name == "close_range":
            lo, hi, flags = nums[0], nums[1], nums[2]
            if flags & CLOSE_RANGE_UNSHARE:
                task.fds = Cell(dict(fds))
                fds = task.fds.value  # type: ignore[assignment]
            for fd in [fd for fd in fds if lo <= fd <= hi]:
                if flags & CLOSE_RANGE_CLOEXEC:
                    fds[fd] = (fds[fd][0], True)
                else:
                    del fds[fd]
        elif name in ("dup", "dup2", "dup3"):
            old = fds.get(nums[0])
            cloexec = name == "dup3" and bool(nums[2] & O_CLOEXEC)
            if old is None:
                fds.pop(ret, None)
            else:
                fds[ret] = (old[0], cloexec)
        elif name == "fcntl":
            fd, cmd, arg = nums
            if cmd == F_SETFD and fd in fds:
                fds[fd] = (fds[fd][0], bool(arg & 1))
            elif cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
                old = fds.get(fd)
                if old is None:
                    fds.pop(ret, None)
                else:
                    fds[ret] = (old[0], cmd == F_DUPFD_CLOEXEC)

    def _resolve(self, task: Task, dirfd: int | None, raw: bytes | None) -> bytes | None:
        if raw is None:
            return None
        if raw.startswith(b"/"):
            return _norm(raw)
        if dirfd is not None:
            dirfd = _s32(dirfd)
        if dirfd is None or dirfd == AT_FDCWD:
            base = task.cwd.value
        else:
            base = task.fds.value.get(dirfd, (None, False))[0]  # type: ignore[attr-defined]
        if base is None:
            return None
        return _norm(base + b"/" + raw) if raw else _norm(base)  # type: ignore[operator]

    def _apply(self, task: Task, name: str, e: Enter, ret: int) -> str:
        """Effects of a successful call on the cwd and the fd table; the returned fd's
        annotation (opens)."""
        spec = SYSCALLS[name]
        kinds = [k for _, k in spec]
        if name in ("open", "openat", "openat2", "creat"):
            si = kinds.index("str")
            dirfd = e.nums[0] if kinds[0] == "fd" else None
            if name == "creat":
                flags = 0x241
            elif name == "openat2":
                flags = e.nums[2]
            else:
                flags = e.nums[kinds.index("flags")]
            path = None if flags & O_TMPFILE_BIT else self._resolve(task, dirfd, e.string(si))
            task.fds.value[ret] = (path, bool(flags & O_CLOEXEC))  # type: ignore[index]
            return annotate(path) if path is not None else ""
        if name == "chdir":
            task.cwd.value = self._resolve(task, None, e.string(0))
        elif name == "fchdir":
            task.cwd.value = task.fds.value.get(_s32(e.nums[0]), (None, False))[0]  # type: ignore[attr-defined]
        elif name in ("execve", "execveat"):
            fds = {fd: v for fd, v in task.fds.value.items() if not v[1]}  # type: ignore[attr-defined]
            task.fds = Cell(fds)  # exec unshares the table and drops close-on-exec fds
        return ""

    def _args(self, task: Task, name: str, e: Enter) -> list[str]:
        out = []
        for i, (_, kind) in enumerate(SYSCALLS[name]):
            v = e.nums[i] if i < len(e.nums) else 0
            if kind == "fd":
                out.append(self._fd_text(task, v))
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
            elif kind == "how":
                out.append(f"{{flags=0x{v & (2**64 - 1):x}}}")
            elif kind == "cargs":
                out.append(f"{{flags=0x{v & (2**64 - 1):x}}}")
            else:
                out.append(str(v))
        if name == "clone":  # strace prints child_stack=..., flags=...: the parser reads flags=
            out = [f"child_stack={out[0]}", f"flags={out[1]}", *out[2:]]
        return out

    def _fd_text(self, task: Task, v: int) -> str:
        v = _s32(v)
        if v == AT_FDCWD:
            cwd = task.cwd.value
            return "-100" if cwd is None else "-100" + annotate(cwd)  # type: ignore[arg-type]
        entry = task.fds.value.get(v)  # type: ignore[attr-defined]
        if entry is None or entry[0] is None:
            return str(v)
        return f"{v}{annotate(entry[0])}"


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
