"""Syscall records -> file access events: which syscall, flags and result make which `Kind`.

Pure functions of one `Syscall` and the calling process's cwd; the process table that
supplies the cwd lives in `procs.py`. Flags are numbers thanks to `-X raw`.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from enum import Enum
from typing import Callable

from . import fast
from .decode import FdArg, parse_fd, parse_int, parse_str, parse_str_array, struct_field
from .lines import Syscall
from .protocol import is_marker_path

O_ACCMODE = 0o3
O_RDWR = 0o2
O_CREAT = 0x40
O_EXCL = 0x80
O_TRUNC = 0x200
O_APPEND = 0x400
O_DIRECTORY = 0x10000
O_TMPFILE_BIT = 0x400000  # __O_TMPFILE; O_TMPFILE also sets O_DIRECTORY, so test this first
AT_REMOVEDIR = 0x200
AT_EMPTY_PATH = 0x1000
RENAME_EXCHANGE = 0x2
CREAT_FLAGS = 0x241  # creat() == open(O_WRONLY|O_CREAT|O_TRUNC)
PROBE_ERRNOS = frozenset({"ENOENT", "ENOTDIR"})
_PROC_FD = re.compile(r"/proc/(?:self|thread-self|\d+)/fd/\d+")


class Kind(Enum):
    READ = "read"
    LIST = "list"  # directory opened with O_DIRECTORY: globbing, ls, find
    CREATE = "create"  # O_CREAT|O_EXCL, mknod: the path surely did not exist
    TRUNC = "trunc"  # writable open with O_TRUNC: new content, no dependency
    MODIFY = "modify"  # in-place write (no O_TRUNC), truncate(): depends on old content
    APPEND = "append"
    MOVE = "move"  # path -> dst (both ways when exchange)
    DELETE = "delete"
    RMDIR = "rmdir"
    LINK = "link"  # hard link: dst becomes another name of path
    SYMLINK = "symlink"  # path is the new link, target its (unresolved) text
    MKDIR = "mkdir"
    META = "meta"  # chmod/chown/utimes: metadata only
    EXEC = "exec"
    PROBE = "probe"  # failed lookup (ENOENT/ENOTDIR): a negative dependency
    STAT = "stat"  # stat/access of an existing path: its existence, mode, owner, times


@dataclass(frozen=True, slots=True)
class Event:
    kind: Kind
    path: str
    pid: int
    ts: float | None
    dst: str | None = None  # MOVE / LINK destination
    exchange: bool = False  # MOVE with RENAME_EXCHANGE
    target: str | None = None  # SYMLINK target text
    argv: tuple[str, ...] | None = None  # EXEC
    syscall: str = ""  # originating syscall, for diagnostics
    may_create: bool = False  # MODIFY from an O_CREAT open without O_EXCL/O_TRUNC (`touch`)


@fast.memoized
def norm(path: str) -> str:
    """Lexical normalisation. POSIX keeps a leading `//`; the kernel does not care, we do."""
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/") if out.startswith("//") else out


def resolve(cwd: str | None, dirfd: FdArg | None, path: str) -> str | None:
    """Absolute path for (dirfd, path): dirfd annotation + relative path, else cwd + path."""
    if path.startswith("/"):
        return norm(path)
    if dirfd is not None and dirfd.fs_path is not None:
        base: str | None = dirfd.fs_path  # also AT_FDCWD</cwd>: fresher than our own cwd
    elif dirfd is None or dirfd.is_cwd:
        base = cwd
    else:
        return None  # a real dirfd without annotation: nothing to join with
    if base is None or not base.startswith("/"):
        return None
    return norm(base + "/" + path) if path else norm(base)


def _arg(sc: Syscall, i: int) -> str | None:
    return sc.args[i] if 0 <= i < len(sc.args) else None


def arg_path(sc: Syscall, cwd: str | None, dirfd_i: int | None, path_i: int) -> str | None:
    """Resolve argument `path_i` against argument `dirfd_i` (None: the legacy call's cwd).

    An empty path (AT_EMPTY_PATH) or NULL (utimensat) means the dirfd itself.
    """
    raw = _arg(sc, path_i)
    if raw is None:
        return None
    dirfd = parse_fd(_arg(sc, dirfd_i) or "") if dirfd_i is not None else None
    s = parse_str(raw)
    if s is None:
        if raw.strip() == "NULL" and dirfd is not None and dirfd.fs_path and not dirfd.deleted:
            return norm(dirfd.fs_path)
        return None  # a bare address: strace could not read tracee memory
    if s.value == "" and (dirfd is None or dirfd.deleted or not sc.ok):
        return None  # a failed call on "" looked nothing up
    return resolve(cwd, dirfd, s.value)


def fd_path(sc: Syscall, i: int) -> str | None:
    fd = parse_fd(_arg(sc, i) or "")
    if fd is None or fd.fs_path is None or fd.deleted:
        return None
    return norm(fd.fs_path)


def _ev(kind: Kind, path: str | None, sc: Syscall, **kw: object) -> list[Event]:
    if path is None or is_marker_path(path):
        return []
    return [Event(kind, path, sc.pid, sc.ts, syscall=sc.name, **kw)]  # type: ignore[arg-type]


def _probe(sc: Syscall, path: str | None) -> list[Event]:
    return _ev(Kind.PROBE, path, sc) if sc.errno in PROBE_ERRNOS else []


def open_kinds(flags: int) -> list[Kind]:
    """The open row of the event table."""
    acc = flags & O_ACCMODE
    if acc == 0:
        return [Kind.LIST if flags & O_DIRECTORY else Kind.READ]
    if flags & O_TRUNC:
        return [Kind.TRUNC]
    if flags & O_CREAT and flags & O_EXCL:
        kinds = [Kind.CREATE]
    elif flags & O_APPEND:
        kinds = [Kind.APPEND]
    else:
        kinds = [Kind.MODIFY]
    if acc & O_RDWR:
        kinds.append(Kind.READ)  # after the write kind, so a CREATE still comes first
    return kinds


def _open(sc: Syscall, cwd: str | None) -> list[Event]:
    if sc.name == "creat":
        dirfd_i, path_i, flags = None, 0, CREAT_FLAGS
    elif sc.name == "open":
        dirfd_i, path_i, flags = None, 0, parse_int(_arg(sc, 1) or "")
    elif sc.name == "openat2":
        dirfd_i, path_i, flags = 0, 1, parse_int(struct_field(_arg(sc, 2) or "", "flags") or "")
    else:
        dirfd_i, path_i, flags = 0, 1, parse_int(_arg(sc, 2) or "")
    path = arg_path(sc, cwd, dirfd_i, path_i)
    if not sc.ok:
        if sc.errno == "ENOTDIR" and flags is not None and flags & O_DIRECTORY:
            return []  # usually "exists but is no directory" (cp/mv/ln probing a target)
        return _probe(sc, path)
    if flags is None or flags & O_TMPFILE_BIT:
        return []  # an O_TMPFILE inode has no name until linkat() gives it one
    if sc.ret_path is not None and sc.ret_path.startswith("/") and not sc.ret_deleted:
        path = norm(sc.ret_path)  # canonical: symlinks resolved by the kernel
    if path is None:
        return []
    if (flags & (O_ACCMODE | O_DIRECTORY)) == 0 and _is_dir_handle(sc, path_i, path, cwd):
        return []  # open(".") to save the cwd for a later fchdir (find, fts): no content read
    creat = bool(flags & O_CREAT)
    return [e for k in open_kinds(flags)
            for e in _ev(k, path, sc, **({"may_create": True} if creat and k is Kind.MODIFY
                                         else {}))]


def _is_dir_handle(sc: Syscall, path_i: int, path: str, cwd: str | None) -> bool:
    raw = parse_str(_arg(sc, path_i) or "")
    if raw is not None and raw.value.rstrip("/").rsplit("/", 1)[-1] in (".", ".."):
        return True
    return path == cwd


def _two_paths(sc: Syscall, cwd: str | None) -> tuple[str | None, str | None]:
    if sc.name in ("rename", "link"):
        return arg_path(sc, cwd, None, 0), arg_path(sc, cwd, None, 1)
    return arg_path(sc, cwd, 0, 1), arg_path(sc, cwd, 2, 3)


def _rename(sc: Syscall, cwd: str | None) -> list[Event]:
    src, dst = _two_paths(sc, cwd)
    if not sc.ok or dst is None or is_marker_path(dst):
        return []  # ENOENT may mean a missing *destination* dir: not a probe of src
    flags = parse_int(_arg(sc, 4) or "0") if sc.name == "renameat2" else 0
    exchange = bool(flags and flags & RENAME_EXCHANGE)
    return _ev(Kind.MOVE, src, sc, dst=dst, exchange=exchange)


def _link(sc: Syscall, cwd: str | None) -> list[Event]:
    src, dst = _two_paths(sc, cwd)
    if not sc.ok:
        return []  # as for rename: which of the two names was missing is unknown
    if sc.name == "linkat" and (parse_int(_arg(sc, 4) or "0") or 0) & AT_EMPTY_PATH:
        fd = parse_fd(_arg(sc, 0) or "")
        if fd is not None and (fd.deleted or fd.fs_path is None):
            return _ev(Kind.CREATE, dst, sc)  # naming an O_TMPFILE inode: all-new content
    if src is None or _PROC_FD.fullmatch(src):
        return _ev(Kind.CREATE, dst, sc)  # linkat("/proc/self/fd/N", ..., FOLLOW) idiom
    if dst is None or is_marker_path(dst):
        return []
    return _ev(Kind.LINK, src, sc, dst=dst)


def _unlink(sc: Syscall, cwd: str | None) -> list[Event]:
    if sc.name == "unlinkat":
        path = arg_path(sc, cwd, 0, 1)
        removedir = bool((parse_int(_arg(sc, 2) or "0") or 0) & AT_REMOVEDIR)
    else:
        path = arg_path(sc, cwd, None, 0)
        removedir = sc.name == "rmdir"
    if not sc.ok:
        return _probe(sc, path)
    return _ev(Kind.RMDIR if removedir else Kind.DELETE, path, sc)


def _symlink(sc: Syscall, cwd: str | None) -> list[Event]:
    target = parse_str(_arg(sc, 0) or "")
    path = arg_path(sc, cwd, 1, 2) if sc.name == "symlinkat" else arg_path(sc, cwd, None, 1)
    if not sc.ok:
        return _probe(sc, path)
    return _ev(Kind.SYMLINK, path, sc, target=target.value if target else None)


def _simple(kind: Kind, dirfd_i: int | None, path_i: int) -> Callable[[Syscall, str | None], list[Event]]:
    """Calls with one path argument: mkdir*, mknod*, truncate, the metadata family."""

    def handler(sc: Syscall, cwd: str | None) -> list[Event]:
        path = arg_path(sc, cwd, dirfd_i, path_i)
        return _ev(kind, path, sc) if sc.ok else _probe(sc, path)

    return handler


def _on_fd(kind: Kind) -> Callable[[Syscall, str | None], list[Event]]:
    """ftruncate(3</a>, 0), fchmod(...): the path comes from the -y annotation alone."""

    def handler(sc: Syscall, cwd: str | None) -> list[Event]:
        return _ev(kind, fd_path(sc, 0), sc) if sc.ok else []

    return handler


def _exec(sc: Syscall, cwd: str | None) -> list[Event]:
    if sc.name == "execveat":
        path, argv_i = arg_path(sc, cwd, 0, 1), 2
    else:
        path, argv_i = arg_path(sc, cwd, None, 0), 1
    if not sc.ok:
        return _probe(sc, path)  # $PATH search: a failed execve per directory
    return _ev(Kind.EXEC, path, sc, argv=parse_str_array(_arg(sc, argv_i) or ""))


def _chdir(sc: Syscall, cwd: str | None) -> list[Event]:
    # Success only moves the cwd (procs.py); a failed chdir is a lookup like any other.
    return [] if sc.ok else _probe(sc, arg_path(sc, cwd, None, 0))


def _stat(dirfd_i: int | None, path_i: int) -> Callable[[Syscall, str | None], list[Event]]:
    """The stat/access family (traced in the verifier's session only): success inspected the
    path's metadata, ENOENT/ENOTDIR found it missing. ``fstat``-style calls on an fd
    (AT_EMPTY_PATH with "") name an open file, whose open already is an event."""

    def handler(sc: Syscall, cwd: str | None) -> list[Event]:
        raw = parse_str(_arg(sc, path_i) or "")
        if raw is not None and raw.value == "":
            return []
        path = arg_path(sc, cwd, dirfd_i, path_i)
        return _ev(Kind.STAT, path, sc) if sc.ok else _probe(sc, path)

    return handler


HANDLERS: dict[str, Callable[[Syscall, str | None], list[Event]]] = {
    "open": _open,
    "openat": _open,
    "openat2": _open,
    "creat": _open,
    "rename": _rename,
    "renameat": _rename,
    "renameat2": _rename,
    "unlink": _unlink,
    "unlinkat": _unlink,
    "rmdir": _unlink,
    "link": _link,
    "linkat": _link,
    "symlink": _symlink,
    "symlinkat": _symlink,
    "mkdir": _simple(Kind.MKDIR, None, 0),
    "mkdirat": _simple(Kind.MKDIR, 0, 1),
    "mknod": _simple(Kind.CREATE, None, 0),
    "mknodat": _simple(Kind.CREATE, 0, 1),
    "truncate": _simple(Kind.MODIFY, None, 0),
    "ftruncate": _on_fd(Kind.MODIFY),
    "execve": _exec,
    "execveat": _exec,
    "chdir": _chdir,
    "utimensat": _simple(Kind.META, 0, 1),
    "futimesat": _simple(Kind.META, 0, 1),
    "fchmodat": _simple(Kind.META, 0, 1),
    "fchownat": _simple(Kind.META, 0, 1),
    "chmod": _simple(Kind.META, None, 0),
    "chown": _simple(Kind.META, None, 0),
    "lchown": _simple(Kind.META, None, 0),
    "utime": _simple(Kind.META, None, 0),
    "utimes": _simple(Kind.META, None, 0),
    "fchmod": _on_fd(Kind.META),  # not in the recommended set; cheap to understand anyway
    "fchown": _on_fd(Kind.META),
    "stat": _stat(None, 0),
    "lstat": _stat(None, 0),
    "newfstatat": _stat(0, 1),
    "fstatat64": _stat(0, 1),
    "statx": _stat(0, 1),
    "access": _stat(None, 0),
    "faccessat": _stat(0, 1),
    "faccessat2": _stat(0, 1),
}


_KNOWN = fast.new_table()  # call (all a handler reads but pid, ts) + cwd -> its events
_new_event = fast.slot_builder(Event)


def syscall_events(sc: Syscall, cwd: str | None) -> list[Event]:
    """Events of one finished syscall; [] for calls that touch no path (clone, fchdir...)."""
    if sc.orphan:
        return []  # the arguments were printed before the text we have
    handler = HANDLERS.get(sc.name)
    if handler is None:
        return []
    if not fast.ENABLED:
        return handler(sc, cwd)
    key = (sc.name, sc.args, sc.ret, sc.errno, sc.ret_path, sc.ret_deleted, cwd)
    try:
        known = _KNOWN.get(key)
    except TypeError:  # args given as a list: unhashable, no memo
        return handler(sc, cwd)
    if known is None:
        events = handler(sc, cwd)
        fast.remember(_KNOWN, key, tuple(events))
        return events
    pid, ts = sc.pid, sc.ts  # the same call again (another process, a later line)
    return [_new_event(e.kind, e.path, pid, ts, e.dst, e.exchange, e.target, e.argv, e.syscall,
                       e.may_create) for e in known]  # fmt: skip
