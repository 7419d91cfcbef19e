"""The shim's file requests (see shim.py): the state of what a command wrote, the verifier's
private folders, what an executed path really runs. Runs inside the sandbox. Stdlib only.

Every answer is bounded whatever the agent made, and a bound degrades the record, never the
request: a reply's header stays under REPLY_HEADER_CAP (the host asks again for the paths it
left out), kept text under CONTENT_BUDGET, and no file is read past its hash cap (a 4 TiB sparse
file is hashed by its size and first allocated bytes, and flagged ``partial``).
"""
import errno
import hashlib
import json
import os
import stat as st

HASH_CAP = 256 << 20  # bytes of one file read for its hash; past it the hash covers a part
HASH_BUDGET = 1 << 30  # bytes read for hashes in one reply; past it each file gets MIN_HASH
MIN_HASH = 1 << 20
CONTENT_BUDGET = 32 << 20  # text kept in one reply; past it files are hashed, their text not sent
REPLY_HEADER_CAP = 768 << 10  # JSON of one reply's entries (the host refuses frames over 1 MiB)
TREE_MAX_ENTRIES = 4096  # entries of one collected folder (smallest first)
PATH_MAX = 4096
SEEK_DATA, SEEK_HOLE = 3, 4


def _safe_rel(rel):
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError("bad relative path %r" % rel)
    return rel


def write_tree(base, files, blobs):
    """Write files under a fresh private folder (the verifier's /tests): nothing else writes
    there before the verifier starts, so exclusive creation and no symlinks are enough."""
    for entry, data in zip(files, blobs):
        path = os.path.join(base, _safe_rel(entry["path"]))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     entry.get("mode", 0o644) & 0o777)
        with os.fdopen(fd, "wb") as f:
            f.write(data)


def _cost(entry):
    return len(json.dumps(entry)) + 16  # its JSON, a comma and its blob size


def read_tree(base, max_file, max_total, max_entries=TREE_MAX_ENTRIES):
    """Regular files under ``base`` (never following links), each up to ``max_file`` bytes,
    ``max_total`` in all, smallest first (a huge file cannot crowd out reward.txt); other kinds
    are listed so the host can say why they were skipped. Past ``max_entries`` entries or the
    reply's header cap, the rest are counted, not listed (the third value: entries left out)."""
    found = []
    for folder, dirs, names in os.walk(base, followlinks=False):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            try:
                found.append((path, os.lstat(path)))
            except OSError:
                continue
    out, total, used = {}, 0, 0
    found.sort(key=lambda f: (f[1].st_size, f[0]))
    for path, info in found[:max_entries]:
        rel = os.path.relpath(path, base)
        if not st.S_ISREG(info.st_mode):
            entry, data = {"path": rel, "kind": "symlink" if st.S_ISLNK(info.st_mode) else "other"}, b""
        else:
            data = b""
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as f:
                    data = f.read(max(0, min(max_file, max_total - total)))
            except OSError:
                pass
            entry = {"path": rel, "kind": "file", "size": info.st_size,
                     "truncated": len(data) < info.st_size}
        used += _cost(entry)
        if used > REPLY_HEADER_CAP:
            break
        total += len(data)
        out[rel] = (entry, data)
    rels = sorted(out)
    return [out[r][0] for r in rels], [out[r][1] for r in rels], len(found) - len(out)


STAT_CACHE = {}  # path -> ((ino, size, mtime_ns, ctime_ns), sha256, partial): skip rehashing


def _partial_file_digest(fd, size, cap):
    """A hash of the file's size and its first ``cap`` bytes of data, read extent by extent
    (SEEK_DATA/SEEK_HOLE): holes are never read, so a huge sparse file costs nothing."""
    h = hashlib.sha256(b"termcredit-partial\0%d\0" % size)
    off, left = 0, cap
    while left > 0 and off < size:
        try:
            start = os.lseek(fd, off, SEEK_DATA)
            end = os.lseek(fd, start, SEEK_HOLE)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data past off
                break
            start, end = off, size  # no extent map here: the bytes as they come
        os.lseek(fd, start, os.SEEK_SET)
        h.update(b"@%d\0" % start)
        want = min(end - start, left)
        while want > 0:
            chunk = os.read(fd, min(want, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            want -= len(chunk)
            left -= len(chunk)
        off = end
    return h.hexdigest()


def _file_digest(fd, size, cap):
    """(sha256, partial): of the whole content when it is at most ``cap`` bytes (also when it
    grew since lstat), else of its size and first ``cap`` bytes of data."""
    if size <= cap:
        h, read = hashlib.sha256(), 0
        while read <= cap:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return h.hexdigest(), False
            h.update(chunk)
            read += len(chunk)
        size = os.fstat(fd).st_size  # it grew past the cap meanwhile
    return _partial_file_digest(fd, size, cap), True


def file_state(path, content_cap, hash_cap=HASH_CAP):
    """(entry, content) for one path after a command: what the content check compares."""
    if len(path) >= PATH_MAX:  # the kernel refuses it anyway; its entry stays small
        return {"path": path, "kind": "unreadable", "error": "path longer than PATH_MAX"}, b""
    try:
        info = os.lstat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return {"path": path, "kind": "missing"}, b""
        return {"path": path, "kind": "unreadable", "error": os.strerror(exc.errno or 0)}, b""
    if st.S_ISLNK(info.st_mode):
        return {"path": path, "kind": "symlink", "target": os.readlink(path)}, b""
    if st.S_ISDIR(info.st_mode):
        return {"path": path, "kind": "dir", "mode": info.st_mode & 0o7777}, b""
    if not st.S_ISREG(info.st_mode):
        return {"path": path, "kind": "other"}, b""
    key = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    entry = {"path": path, "kind": "file", "size": info.st_size, "mode": info.st_mode & 0o7777}
    content, partial = b"", False
    cached = STAT_CACHE.get(path)
    try:
        # no link, no blocking open: the file may have been swapped for a FIFO since lstat
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not st.S_ISREG(os.fstat(fd).st_mode):
                return {"path": path, "kind": "other"}, b""
            if info.st_size <= content_cap:
                data = b""
                while len(data) <= content_cap:
                    chunk = os.read(fd, content_cap + 1 - len(data))
                    if not chunk:
                        break
                    data += chunk
                if b"\0" not in data:
                    try:
                        data.decode("utf-8")
                        content = data
                    except UnicodeDecodeError:
                        pass
                digest = hashlib.sha256(data).hexdigest()
            elif cached and cached[0] == key:
                digest, partial = cached[1], cached[2]
            else:
                digest, partial = _file_digest(fd, info.st_size, hash_cap)
        finally:
            os.close(fd)
    except OSError as exc:
        return {"path": path, "kind": "unreadable", "error": os.strerror(exc.errno or 0)}, b""
    STAT_CACHE[path] = (key, digest, partial)
    entry.update(sha256=digest, text=bool(content) or info.st_size == 0)
    if partial:
        entry["partial"] = True
    return entry, content


def resolve(paths, header_cap=REPLY_HEADER_CAP):
    """For each executed path, what the kernel really ran: the end of its symlink chain and,
    for a script, its ``#!`` interpreter (neither shows in the trace). The first paths whose
    answer fits under ``header_cap`` (always one): the host asks again for the rest."""
    out, used = [], 0
    for path in paths:
        real, interp = os.path.realpath(path), None
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                head = f.read(256) if st.S_ISREG(os.fstat(fd).st_mode) else b""
            words = head[2:].split(b"\n")[0].split() if head.startswith(b"#!") else []
            if words and words[0].startswith(b"/"):
                interp = os.path.realpath(words[0].decode("utf-8", "replace"))
        except OSError:
            pass
        targets = sorted({t for t in (real, interp) if t and t != path})
        used += _cost(targets)
        if out and used > header_cap:
            break
        out.append(targets)
    return out


def snapshot(paths, content_cap, header_cap=REPLY_HEADER_CAP):
    """The state of the first paths whose entries fit under ``header_cap`` (always one): the
    host asks again for the rest. Text past CONTENT_BUDGET is hashed but not sent."""
    entries, blobs, used = [], [], 0
    content_left, hash_left = CONTENT_BUDGET, HASH_BUDGET
    for path in paths:
        cap = max(MIN_HASH, min(HASH_CAP, hash_left))
        entry, content = file_state(path, content_cap, cap)
        if len(content) > content_left:
            content = b""
        used += _cost(entry)
        if entries and used > header_cap:
            break
        content_left -= len(content)
        if entry.get("kind") == "file" and entry.get("size", 0) > content_cap:
            hash_left -= min(entry["size"], cap)
        entries.append(entry)
        blobs.append(content)
    return {"op": "snapshot", "entries": entries}, blobs
