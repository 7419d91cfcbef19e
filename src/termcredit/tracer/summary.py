"""Per-command access summary from an ordered event list: the last stage of trace parsing,
after lines became events and events were attributed to the command that caused them.

Rules, applied per path in event order:
* First access: the command depends on the pre-command version only if its first access
  needed the old content (READ, EXEC, MODIFY, APPEND, META, LIST, MOVE/LINK source); a
  first STAT depends on the old path's existence and metadata only (``statted``).
  TRUNC, CREATE, MKDIR, SYMLINK, MOVE/LINK destination, DELETE and PROBE do not. Later
  reads of content the command itself produced (`cat a > a`) are internal.
* Final state: a path that exists at the end and was written, created, moved-to or linked
  is `written`; a path gone at the end is `temporary` if this command brought it into
  being (or first saw it missing) and `deleted` otherwise.

Trace-level caveats that the caller resolves against its file-version store:
* an open with O_CREAT but neither O_EXCL nor O_TRUNC (`touch`, `dd conv=notrunc`) is a
  MODIFY: the path is in `read` even if it did not exist; drop reads with no version;
* a path truncated without being read and then removed (`echo > a; mv a b` when `a`
  existed) is `temporary`; give it a tombstone if a version existed before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from fnmatch import fnmatchcase

from . import fast
from .events import Event, Kind, is_marker_path

DEFAULT_ENV_PREFIXES: tuple[str, ...] = (
    "/proc", "/sys", "/dev", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
    "/etc/ld.so*", "/etc/locale.alias", "/etc/localtime", "/etc/nsswitch.conf",
    # what interpreters read as they start: readline (pytest, python3 -i), OpenSSL's config
    # (any TLS context); task data only in the rare task about them
    "/etc/inputrc", "/etc/terminfo", "/etc/ssl/openssl.cnf*",
)  # fmt: skip
DEFAULT_ENV_GLOBS: tuple[str, ...] = ("*/__pycache__", "*/__pycache__/*", "*.pyc")


@dataclass(frozen=True)
class EnvironmentLayer:
    """Which paths are the environment (system files, caches) rather than task data.

    `prefixes` match whole path components (`/usr` covers `/usr/x`, not `/usrx`); a
    trailing `*` makes a raw string prefix (`/etc/ld.so*`). `globs` use fnmatch, where
    `*` also matches `/`. The marker directory is excluded everywhere regardless.
    """

    prefixes: tuple[str, ...] = DEFAULT_ENV_PREFIXES
    globs: tuple[str, ...] = DEFAULT_ENV_GLOBS

    def contains(self, path: str) -> bool:
        return _contains(self.prefixes, self.globs, path)

    def extended(self, prefixes: Iterable[str] = (), globs: Iterable[str] = ()) -> EnvironmentLayer:
        return EnvironmentLayer(self.prefixes + tuple(prefixes), self.globs + tuple(globs))


@fast.memoized_args  # a session asks about the same few hundred paths again and again
def _contains(prefixes: tuple[str, ...], globs: tuple[str, ...], path: str) -> bool:
    for prefix in prefixes:
        if prefix.endswith("*"):
            if path.startswith(prefix[:-1]):
                return True
        elif path == prefix or path.startswith(prefix.rstrip("/") + "/"):
            return True
    return any(fnmatchcase(path, g) for g in globs)


@dataclass
class AccessSets:
    read: set[str] = field(default_factory=set)  # depended on the pre-command version
    written: set[str] = field(default_factory=set)  # new content (or new entry) at the end
    deleted: set[str] = field(default_factory=set)  # removed, and not created by this command
    temporary: set[str] = field(default_factory=set)  # created (or first missing) and removed
    executed: set[str] = field(default_factory=set)
    listed: set[str] = field(default_factory=set)  # directories listed in their old state
    probed: set[str] = field(default_factory=set)  # first looked up while missing
    meta: set[str] = field(default_factory=set)  # metadata changed, path exists at the end
    # existence/metadata of the pre-command path inspected (stat, access) before anything
    # else touched it; only where the stat family is traced (the verifier's session)
    statted: set[str] = field(default_factory=set)
    # written path -> pre-command path whose content it continues (append, in-place modify,
    # rename, hard link). Absent: content made from scratch by this command.
    derived_from: dict[str, str] = field(default_factory=dict)
    # in `read` only because an O_CREAT open (no O_EXCL/O_TRUNC) came first: the trace cannot
    # tell whether the path existed; the caller checks it against its file-version store
    maybe_new: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for f in fields(AccessSets):
            value = getattr(self, f.name)
            out[f.name] = dict(sorted(value.items())) if isinstance(value, dict) else sorted(value)
        return out


@dataclass
class AccessSummary(AccessSets):
    """Task-level sets; the same sets for environment paths sit in `environment`."""

    environment: AccessSets = field(default_factory=AccessSets)
    events: int = 0

    def as_dict(self) -> dict[str, object]:
        out = super().as_dict()
        out["environment"] = self.environment.as_dict()
        out["events"] = self.events
        return out


_NEEDS_OLD = frozenset({Kind.READ, Kind.EXEC, Kind.MODIFY, Kind.APPEND, Kind.META, Kind.LIST})
_CREATES = frozenset({Kind.TRUNC, Kind.CREATE, Kind.MKDIR, Kind.SYMLINK})


@dataclass(slots=True)
class _State:
    old: bool  # still holds the pre-command content, which the command depends on
    born: bool  # this command created it, or first saw it missing
    origin: str | None  # pre-command path whose content it holds now
    exists: bool | None = None  # None: no state-changing event seen
    changed: bool = False
    meta: bool = False


class _Walker:
    def __init__(self) -> None:
        self.states: dict[str, _State] = {}
        self.sets = AccessSets()

    def state(self, path: str, first: str) -> _State:
        """`first`: 'old' (needs old content), 'new' (creates), 'probe', 'gone' (removes)."""
        st = self.states.get(path)
        if st is None:
            st = _State(old=first == "old", born=first in ("new", "probe"), origin=path)
            self.states[path] = st
            if first == "probe":
                self.sets.probed.add(path)
        return st

    def use_old(self, path: str, st: _State, into: set[str]) -> None:
        if st.old:
            into.add(path)

    def event(self, e: Event) -> None:
        k, p = e.kind, e.path
        if k is Kind.MOVE and e.dst is not None:
            self.move(p, e.dst, e.exchange)
        elif k is Kind.LINK and e.dst is not None:
            src = self.state(p, "old")
            self.use_old(p, src, self.sets.read)
            self.write_new(e.dst, origin=src.origin)
        elif k in _NEEDS_OLD:
            if e.may_create and p not in self.states:
                self.sets.maybe_new.add(p)
            st = self.state(p, "old")
            self.use_old(p, st, self.sets.listed if k is Kind.LIST else self.sets.read)
            if k is Kind.EXEC:
                self.sets.executed.add(p)
            elif k is Kind.META:
                st.meta, st.exists = True, True
            elif k in (Kind.MODIFY, Kind.APPEND):
                st.exists, st.changed = True, True  # content continues from `origin`
        elif k in _CREATES:
            self.write_new(p, origin=None)
        elif k in (Kind.DELETE, Kind.RMDIR):
            self.remove(self.state(p, "gone"))
        elif k is Kind.PROBE:
            self.state(p, "probe")
        elif k is Kind.STAT:
            self.use_old(p, self.state(p, "old"), self.sets.statted)

    def write_new(self, path: str, origin: str | None) -> None:
        st = self.state(path, "new")
        st.old, st.exists, st.changed, st.origin = False, True, True, origin

    def remove(self, st: _State) -> None:
        st.old, st.exists, st.changed, st.meta, st.origin = False, False, False, False, None

    def move(self, src: str, dst: str, exchange: bool) -> None:
        if src == dst:
            return  # rename(a, a) succeeds and does nothing
        s = self.state(src, "old")
        self.use_old(src, s, self.sets.read)
        if exchange:  # both names keep existing, with each other's content
            d = self.state(dst, "old")
            self.use_old(dst, d, self.sets.read)
            s.origin, d.origin = d.origin, s.origin
            for st in (s, d):
                st.old, st.exists, st.changed = False, True, True
            return
        origin = s.origin
        self.remove(s)
        self.write_new(dst, origin)

    def finish(self) -> AccessSets:
        sets = self.sets
        for path, st in self.states.items():
            if st.exists is False:
                (sets.temporary if st.born else sets.deleted).add(path)
            elif st.exists and st.changed:
                sets.written.add(path)
                if st.origin is not None:
                    sets.derived_from[path] = st.origin
            if st.meta and st.exists:
                sets.meta.add(path)
        return sets


def summarize(events: Iterable[Event], env: EnvironmentLayer | None = None) -> AccessSummary:
    """Fold one command's events (in trace order) into an AccessSummary."""
    env = env if env is not None else EnvironmentLayer()
    walker = _Walker()
    count = 0
    for e in events:
        if is_marker_path(e.path) or (e.dst is not None and is_marker_path(e.dst)):
            continue
        walker.event(e)
        count += 1
    return split_environment(walker.finish(), env, count)


def split_environment(sets: AccessSets, env: EnvironmentLayer, count: int = 0) -> AccessSummary:
    task, envs = AccessSummary(events=count), AccessSets()
    for f in fields(AccessSets):
        value = getattr(sets, f.name)
        if isinstance(value, dict):
            for key, v in value.items():
                (getattr(envs, f.name) if env.contains(key) else getattr(task, f.name))[key] = v
        else:
            for path in value:
                (getattr(envs, f.name) if env.contains(path) else getattr(task, f.name)).add(path)
    task.environment = envs
    return task
