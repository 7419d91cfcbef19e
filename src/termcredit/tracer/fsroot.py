"""Paths resolved through the traced tasks' own filesystem, as the kernel names an open file.

strace's ``-y`` shows the path of the file an fd refers to, and of the cwd, as the kernel knows
it: symlinks resolved (``cat l`` with ``l -> a`` reads ``.../a``). The eBPF records carry the
path the program passed; joined lexically, ``cat l`` would read ``.../l``, and a write through a
link would not meet the verifier's read of the real file in the dependency graph. ``FsRoot``
resolves a path the way the kernel did, component by component, reading each link through the
traced tasks' root (``/proc/<pid>/root``, held open as an ``O_PATH`` descriptor, so it stays
readable after that process ended): an absolute link target starts again at that root, ``..``
goes up from where the links led. Nothing is opened: each component is only ``readlink``ed.

It resolves when the records are converted, not at the call: a link changed in between (in the
same step) is read as it is then; a component gone by then keeps the rest lexical. Bytes from
the agent only choose which links are read and what an annotation says (a directory swapped
for a link between two reads can make one annotation name a wrong path: credit, never reward,
reads the annotations, and no byte of the host's goes back to the agent).
"""

from __future__ import annotations

import errno
import os
import threading

MAX_LINKS = 40  # the kernel's limit on links followed in one lookup (ELOOP past it)
CACHE = 1 << 16  # resolved prefixes kept between clears


class FsRoot:
    def __init__(self, pid: int) -> None:
        self.fd: int | None = os.open(f"/proc/{pid}/root", os.O_PATH | os.O_DIRECTORY)
        self.base = f"/proc/self/fd/{self.fd}".encode()
        self._links: dict[bytes, bytes | None] = {}  # resolved path -> its link target, or None
        # close() against a read in another thread: a closed number reused by another open
        # would have the read walk some other tree
        self._lock = threading.Lock()

    @classmethod
    def of(cls, pid: int) -> FsRoot | None:
        """The root of ``pid``, or None where it cannot be held (the process is gone)."""
        try:
            return cls(pid)
        except OSError:
            return None

    def close(self) -> None:
        with self._lock:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None

    def forget(self) -> None:
        """Drop what was read of the links: they may have changed since."""
        self._links.clear()

    def resolve(self, path: bytes, follow_last: bool = True) -> bytes:
        """``path`` (absolute, not normalised: ``l/..`` is where ``l`` leads, then up) with
        every link in it resolved; the last component kept as is when ``follow_last`` is
        False. Past a missing component, or past MAX_LINKS, the rest is joined lexically."""
        todo = list(reversed(path.split(b"/")))
        out: list[bytes] = []
        links = 0
        lexical = False
        while todo:
            c = todo.pop()
            if c in (b"", b"."):
                continue
            if c == b"..":
                if out:
                    out.pop()
                continue
            out.append(c)
            if lexical or (not todo and not follow_last):
                continue
            target = self._link(b"/" + b"/".join(out))
            if target is None:
                continue
            if target is _MISSING:
                lexical = True
                continue
            links += 1
            if links > MAX_LINKS:
                lexical = True
                continue
            out.pop()
            if target.startswith(b"/"):
                out = []
            todo.extend(reversed(target.split(b"/")))
        return b"/" + b"/".join(out)

    def _link(self, path: bytes) -> bytes | None:
        """The target of ``path`` when it is a link, None when it is not, _MISSING when it
        cannot be read (gone, or a component is not a directory)."""
        if path in self._links:
            return self._links[path]
        with self._lock:
            if self.fd is None:
                return _MISSING
            try:
                got: bytes | None = os.readlink(self.base + path)
            except OSError as exc:
                got = None if exc.errno == errno.EINVAL else _MISSING  # there, not a link
        if len(self._links) >= CACHE:
            self._links.clear()
        self._links[path] = got
        return got


_MISSING = b"\0missing"  # no path holds a NUL byte
