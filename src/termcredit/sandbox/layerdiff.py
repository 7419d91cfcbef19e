"""A container's filesystem changes, read on the host from its overlay2 layers.

Docker 20.10's ``docker diff`` on overlay2 is the naive diff (graphdriver.NaiveDiffDriver →
archive.ChangesDirs): it mounts the container's layer and its ``-init`` parent and walks both
whole trees, about half a core-second in dockerd even when nothing changed. Every path outside
the writable (upper) dir is the same file in both trees, so walking the upper dir alone and
looking each entry up in the lower dirs gives the same answer:

- an entry with nothing visible below it is added (1), and so is everything under a new dir;
- an entry with something below is changed (0) when ``statDifferent`` says so (mode, uid, gid,
  rdev; for non-dirs also size and mtime, equal if same second and one side has 0 ns) or the
  ``security.capability`` xattr differs; a copied-up but identical file is not reported;
- unlike Docker, a copied-up file or link that ``statDifferent`` calls equal is compared by
  content (a link by its target): an edit at the same size with its times put back is a change;
  past ``MAX_COMPARE_BYTES`` read in one diff the rest are reported changed unread;
- a whiteout (char device 0:0) over something visible is deleted (2); so is every visible lower
  child of an opaque upper dir that the upper dir does not hold; children of a deleted or
  replaced dir are not listed;
- every dir above a reported path, except ``/``, is changed unless reported itself.

The upper dir belongs to the agent (root in its container): nothing is followed. Directories are
opened one component at a time with O_NOFOLLOW relative to their parent's fd, entries are
lstat'ed through that fd, lower dirs are looked up component by component with lstat. Entries
that vanish mid-walk are skipped, as Docker's walk would have missed them a moment later.
Names are ``os.fsdecode``d (surrogateescape), as the tracer decodes paths, so undecodable bytes
round-trip (the API gives U+FFFD for them instead).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence

CHANGED, ADDED, DELETED = 0, 1, 2
MAX_ENTRIES = 200_000  # beyond this the caller asks Docker instead (a hostile file count)
MAX_DEPTH = 128  # one open fd per level while walking
_OPAQUE = "trusted.overlay.opaque"
_REDIRECT = "trusted.overlay.redirect"  # redirect_dir: a renamed dir's content lives elsewhere
_CAP = "security.capability"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_COMPARE_BYTES = 1 << 30  # content read to compare copied-up files, per diff


class LayerDiffUnsupported(Exception):
    """These layers cannot stand for Docker's diff (unreadable, too big, redirect dirs)."""


def _is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _stat_different(old: os.stat_result, new: os.stat_result) -> bool:
    """archive.statDifferent (changes_unix.go, 20.10)."""
    if (old.st_mode, old.st_uid, old.st_gid, old.st_rdev) != \
            (new.st_mode, new.st_uid, new.st_gid, new.st_rdev):
        return True
    if stat.S_ISDIR(old.st_mode):
        return False  # a dir's size and mtime are no measure of change (moby#9874)
    (s1, n1), (s2, n2) = divmod(old.st_mtime_ns, 10**9), divmod(new.st_mtime_ns, 10**9)
    same_time = s1 == s2 and (n1 == n2 or n1 == 0 or n2 == 0)
    return not same_time or old.st_size != new.st_size


def _xattr(path: str | int, name: str) -> bytes | None:
    try:
        if isinstance(path, int):
            return os.getxattr(path, name)
        return os.getxattr(path, name, follow_symlinks=False)
    except OSError:  # ENODATA, or no xattrs there: Docker ignores the error too
        return None


def _opaque(path: str) -> bool:
    return _xattr(path, _OPAQUE) == b"y"


def _entry_stat(entry: os.DirEntry[str]) -> os.stat_result:
    return entry.stat(follow_symlinks=False)  # fstatat(dir fd, name, AT_SYMLINK_NOFOLLOW)


def _lookup(active: Sequence[str], name: str) -> tuple[str, os.stat_result, list[str]] | None:
    """``name`` in the merged lower dir made of ``active`` (top first): the path and stat of
    what is visible, and if it is a dir, the lower dirs that make it up; None if nothing is.
    Lower layers are the image's: they do not change under us."""
    for i, layer in enumerate(active):
        path = os.path.join(layer, name)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if _is_whiteout(st):
            return None
        if not stat.S_ISDIR(st.st_mode):
            return path, st, []
        stack = [path]
        if not _opaque(path):  # older layers show through until an opaque dir or a non-dir
            for lower in active[i + 1:]:
                below = os.path.join(lower, name)
                try:
                    if not stat.S_ISDIR(os.lstat(below).st_mode):
                        break
                except (FileNotFoundError, NotADirectoryError):
                    continue
                stack.append(below)
                if _opaque(below):
                    break
        return path, st, stack
    return None


def _lower_names(active: Sequence[str]) -> Iterator[str]:
    seen: set[str] = set()
    for layer in active:
        try:
            with os.scandir(layer) as it:
                for entry in it:
                    if entry.name not in seen:
                        seen.add(entry.name)
                        yield entry.name
        except (FileNotFoundError, NotADirectoryError):
            continue


def _open_child(fd: int, name: str) -> int | None:
    """openat(fd, name) as a dir without following a link; None if it is not a dir now (gone,
    a file, or a link: ELOOP), as the agent may have swapped it since it was listed."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except PermissionError:
        raise
    except OSError:
        return None


def _open_under(root: str, parts: Sequence[str]) -> int | None:
    """An fd of root/parts, one component at a time, no link followed below ``root``."""
    fd: int | None = os.open(root, _DIR_FLAGS)
    for part in parts:
        assert fd is not None
        try:
            nxt = _open_child(fd, part)
        finally:
            os.close(fd)
        if nxt is None:
            return None
        fd = nxt
    return fd


class _Walk:
    def __init__(self, max_entries: int, max_depth: int):
        self.changes: dict[str, int] = {}
        self.seen = 0
        self.compared = 0  # bytes read by _same_content
        self.max_entries = max_entries
        self.max_depth = max_depth

    def count(self) -> None:
        self.seen += 1
        if self.seen > self.max_entries:
            raise LayerDiffUnsupported(f"more than {self.max_entries} entries in the layer")

    def visit(self, fd: int, path: str, active: list[str]) -> list[tuple[str, list[str]]]:
        """Record the changes among one upper dir's entries; return its subdirs to walk, each
        with the lower dirs that make up what it replaces."""
        names = os.listxattr(fd)
        if _REDIRECT in names:
            raise LayerDiffUnsupported(f"redirect dir at {path or '/'}")
        opaque = _OPAQUE in names and _xattr(fd, _OPAQUE) == b"y"
        subdirs: list[tuple[str, list[str]]] = []
        upper_names: set[str] = set()
        with os.scandir(fd) as it:
            for entry in it:
                self.count()
                name = entry.name
                upper_names.add(name)
                try:
                    st = _entry_stat(entry)
                except FileNotFoundError:
                    continue
                child = f"{path}/{name}"
                old = _lookup(active, name) if active else None
                if _is_whiteout(st):
                    if old is not None:
                        self.changes[child] = DELETED
                    continue
                if old is None:
                    self.changes[child] = ADDED
                elif _stat_different(old[1], st) or \
                        _xattr(old[0], _CAP) != _xattr(f"/proc/self/fd/{fd}/{name}", _CAP) or \
                        not self._same_content(old[0], fd, name, st):
                    self.changes[child] = CHANGED
                if stat.S_ISDIR(st.st_mode):
                    subdirs.append((name, old[2] if old is not None else []))
        if opaque and active:  # the old children that the opaque dir hides are deleted
            for name in _lower_names(active):
                if name not in upper_names:
                    self.count()
                    if _lookup(active, name) is not None:
                        self.changes[f"{path}/{name}"] = DELETED
        return subdirs

    def _same_content(self, lower: str, fd: int, name: str, st: os.stat_result) -> bool:
        """A regular file's bytes or a link's target, upper against lower (stats equal)."""
        try:
            if stat.S_ISLNK(st.st_mode):
                return os.readlink(lower) == os.readlink(name, dir_fd=fd)
            if not stat.S_ISREG(st.st_mode):
                return True
            if self.compared + st.st_size > MAX_COMPARE_BYTES:
                return False
            self.compared += st.st_size
            a = os.open(lower, _FILE_FLAGS)
            try:
                b = os.open(name, _FILE_FLAGS, dir_fd=fd)
            except OSError:
                os.close(a)
                raise
            with os.fdopen(a, "rb") as fa, os.fdopen(b, "rb") as fb:
                while True:
                    ca, cb = fa.read(1 << 20), fb.read(1 << 20)
                    if ca != cb:
                        return False
                    if not ca:
                        return True
        except OSError:
            return False  # unreadable or gone: not shown equal

    def run(self, upper: str, lowers: list[str]) -> dict[str, int]:
        root = _open_under(upper, ())
        assert root is not None
        # depth-first with one fd per level: no recursion, and fds bounded by max_depth
        stack: list[tuple[int, str, list[tuple[str, list[str]]]]] = []
        try:
            stack.append((root, "", []))
            stack[-1] = (root, "", self.visit(root, "", lowers))
            while stack:
                fd, path, todo = stack[-1]
                if not todo:
                    os.close(fd)
                    stack.pop()
                    continue
                name, active = todo.pop()
                if len(stack) >= self.max_depth:
                    raise LayerDiffUnsupported(f"more than {self.max_depth} dirs deep")
                sub = _open_child(fd, name)
                if sub is None:
                    continue  # gone or swapped for a link since it was listed
                sub_path = f"{path}/{name}"
                stack.append((sub, sub_path, []))  # in the stack first: closed if visit raises
                stack[-1] = (sub, sub_path, self.visit(sub, sub_path, active))
        finally:
            for fd, _, _ in stack:
                os.close(fd)
        return self.changes


def layer_diff(upper: str, lowers: Sequence[str], *, max_entries: int = MAX_ENTRIES,
               max_depth: int = MAX_DEPTH) -> dict[str, int]:
    """Docker's diff (path -> 0 changed, 1 added, 2 deleted) of an overlay2 container from its
    upper dir and lower dirs (top first, as inspect's ``LowerDir`` lists them). Must run as
    root: overlay's ``trusted.*`` xattrs are invisible to others. Raises LayerDiffUnsupported
    when the answer would not be Docker's: the caller then asks Docker."""
    if not os.path.isabs(upper) or not all(os.path.isabs(p) for p in lowers):
        raise LayerDiffUnsupported("layer paths must be absolute")
    for lower in lowers:
        try:
            if not stat.S_ISDIR(os.lstat(lower).st_mode):
                raise LayerDiffUnsupported(f"lower dir {lower} is not a directory")
        except OSError as e:
            raise LayerDiffUnsupported(f"lower dir {lower}: {e}") from e
    try:
        changes = _Walk(max_entries, max_depth).run(upper, list(lowers))
    except OSError as e:  # no such dir here (a remote engine's path), no permission, EMFILE
        raise LayerDiffUnsupported(f"cannot walk the layer: {e}") from e
    for path in list(changes):  # every dir above a change is changed (archive.addChanges)
        parent = path.rpartition("/")[0]
        while parent and parent not in changes:
            changes[parent] = CHANGED
            parent = parent.rpartition("/")[0]
    return changes
