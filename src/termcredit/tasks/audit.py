"""Provenance audit: toolchain files the verifier ran or loaded that the agent made.

The agent is root in its container (DESIGN.md, "Threat model"). A verifier that passes
because it imported an agent-written ``conftest.py``, ran an agent-replaced ``python3`` or
loaded a patched ``_pytest`` module proves nothing about the task, so its reward is *suspect*.
Pure functions, no Docker: the caller supplies the verifier's strace text and the paths that an
agent process created or modified (``docker diff`` plus the agent's own trace).

What the verifier loaded: over every command of the verifier's traced session and its
unattributed events (the shell's own start-up), the files it read (needing their content),
executed, in the task layer and the environment layer alike. Opens name the file the kernel
resolved (the ``-y`` annotation); the name the process asked for is kept too, so a toolchain
file that the agent replaced with a symlink (``site-packages/x.py -> /tmp/evil.py``, or a
symlinked package directory) is still judged by the name that made it toolchain.

A *hit* is a loaded file that
* is toolchain (``toolchain_reason``: executed files, shared libraries, Python libraries,
  a venv's ``pyvenv.cfg``, ``.pth`` files, ``sitecustomize.py``/``usercustomize.py``, ``conftest.py``, pytest
  configuration, shell start-up files, loader configuration; bytecode in ``__pycache__``
  counts as the source it caches), and
* an agent process created or modified (exact path membership in ``agent_changed``; for a
  file reached through a symlink, either name), and
* is not exempt. Exempt: everything under ``/tests`` (the harness re-creates it); paths
  matching a ``may_modify`` glob (the task's ``[verifier] agent_may_modify``); paths the
  instruction names verbatim (the absolute path); and, because the task's own work is the
  answer, paths under ``workdir`` (a ``solution.py`` the tests import, a binary the agent
  built), except the test-runner *hooks* -- ``conftest.py``, pytest configuration,
  ``sitecustomize.py``/``usercustomize.py`` and ``.pth`` files -- which stay hits there
  unless the instruction names them (by absolute path, by path under ``workdir`` or by
  basename, each as a word of its own). A basename never exempts a path outside
  ``workdir``: an instruction that mentions ``main.py`` must not let the agent patch
  ``_pytest/main.py``. A ``workdir`` of ``/`` exempts nothing.

Known blind spots (the trace cannot show them): the file behind an executed symlink (execve
names the link) and the interpreter of a ``#!`` script or the ELF loader, which the kernel
opens without a traced call.
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache

from ..tracer import EnvironmentLayer, SessionTrace, parse_records, parse_session, summarize
from ..tracer.events import arg_path, is_marker_path, norm
from ..tracer.lines import Syscall
from .resources import TESTS_DIR, under
PYTEST_CONFIG = frozenset({"pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"})
CUSTOMIZE = frozenset({"sitecustomize.py", "usercustomize.py"})
SHELL_STARTUP_NAMES = frozenset({".bashrc", ".bash_profile", ".bash_login", ".profile"})
SHELL_STARTUP_PATHS = frozenset({"/etc/profile", "/etc/bash.bashrc", "/etc/environment"})
LOADER_PATHS = frozenset({"/etc/ld.so.preload", "/etc/ld.so.cache"})
LOADER_CACHE = "/etc/ld.so.cache"
# what ldconfig makes the cache from, besides the libraries (judged on their own when loaded)
LOADER_INPUTS = ("/etc/ld.so.conf", "/etc/ld.so.conf.d/", "/sbin/ldconfig", "/usr/sbin/ldconfig")
# merged /usr: /lib -> usr/lib and so on (Debian since bookworm)
MERGED_USR = ("/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/")
_SHARED_LIB = re.compile(r".*\.so(?:\.[^/]*)?")
_PY_LIB = re.compile(r"(?:.*/(?:site|dist)-packages/.*|/usr(?:/local)?/lib/python3[^/]*/.*)")
_PYC = re.compile(r"(?P<dir>.*)/__pycache__/(?P<stem>[^/.]+)\.[^/]*pyc")
_OPENS = {"open": (None, 0), "openat": (0, 1), "openat2": (0, 1), "creat": (None, 0)}
# modules a test run imports by name: a file of that name at the top of the working directory
# (the verifier's cwd, first on sys.path for `python3 -m pytest`) replaces the real one
SHADOWABLE = frozenset(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "py",
                                                   "iniconfig", "packaging"}


# ------------------------------------------------------------------ classification


def source_of(path: str) -> str | None:
    """The source file a ``__pycache__/NAME.TAG.pyc`` caches (``None`` for other paths)."""
    m = _PYC.fullmatch(path)
    return f"{m['dir']}/{m['stem']}.py" if m else None


def _hook_kind(base: str) -> str | None:
    """Test-runner hooks: toolchain even under the workdir."""
    if base == "conftest.py":
        return "conftest.py"
    if base in PYTEST_CONFIG:
        return "pytest configuration"
    if base in CUSTOMIZE:
        return base
    if base.endswith(".pth"):
        return ".pth file"
    if base == "entry_points.txt":
        return "entry points (pytest plugins load from them)"
    return None


def toolchain_reason(path: str, *, executed: bool = False) -> str | None:
    """Why ``path`` is part of a verifier's toolchain, or None when it is not."""
    src = source_of(path)
    if src is not None:
        reason = toolchain_reason(src)
        return f"{reason} (cached bytecode)" if reason else None
    base = posixpath.basename(path)
    hook = _hook_kind(base)
    if hook:
        return hook
    if executed:
        return "executed"
    if path in LOADER_PATHS or path.startswith("/etc/ld.so.conf"):
        return "loader configuration"  # before libraries: ld.so.cache looks like one
    if _SHARED_LIB.fullmatch(base):
        return "shared library"
    if _PY_LIB.fullmatch(path):
        return "python library"
    if base == "pyvenv.cfg":
        return "python configuration"  # a venv's home and site-packages switches
    if (path in SHELL_STARTUP_PATHS or path.startswith("/etc/profile.d/")
            or base in SHELL_STARTUP_NAMES):
        return "shell start-up file"
    return None


def is_hook(path: str) -> bool:
    """conftest.py, pytest configuration, *customize.py, .pth (or bytecode of one)."""
    return _hook_kind(posixpath.basename(source_of(path) or path)) is not None


def shadows_module(path: str, workdir: str) -> bool:
    """``path`` is a Python module at the top of ``workdir`` (a file, or a package folder)
    named like a standard-library or test-runner module: ``/app/pytest.py`` or
    ``/app/_pytest/main.py`` is what ``python3 -m pytest`` imports when run from /app."""
    path = source_of(path) or path
    if not path.endswith((".py", ".pyc")) or not under(path, workdir) or path == workdir:
        return False
    parts = path[len(workdir.rstrip("/")) + 1 :].split("/")
    top = parts[0].rsplit(".", 1)[0] if len(parts) == 1 else parts[0]  # a sourceless .pyc too
    return top in SHADOWABLE


# ------------------------------------------------------------------ globs and naming


@lru_cache(maxsize=512)
def _glob_re(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.S)


def glob_match(pattern: str, path: str) -> bool:
    """``**`` matches across ``/`` (``/a/**/b`` also matches ``/a/b``), ``*`` and ``?``
    within one path component; everything else is literal."""
    return _glob_re(pattern).fullmatch(path) is not None


def _named(text: str, token: str) -> bool:
    """``token`` occurs in ``text`` as a word of its own: not inside a longer name or path
    (``/app/conftest.py`` names neither ``/conftest.py`` nor ``conftest.py``); a trailing
    sentence dot is fine."""
    pattern = rf"(?<![\w.\-/]){re.escape(token)}(?![\w\-/]|\.\w)"
    return re.search(pattern, text) is not None


# ------------------------------------------------------------------ what the verifier loaded


def verifier_loaded(trace_text: str, env: EnvironmentLayer | None = None, *,
                    session: SessionTrace | None = None,
                    ) -> tuple[set[str], set[str], dict[str, set[str]]]:
    """(read, executed, aliases) of a verifier's traced session.

    ``read``: files whose content the verifier's processes read (both layers, the session's
    unattributed events included); ``executed``: files they executed (the name execve got);
    ``aliases``: resolved path -> the other names processes opened it by (symlinks).
    ``session``: ``parse_session(trace_text, env=env)`` when the caller has it already.
    """
    env = env or EnvironmentLayer()
    if session is None:
        session = parse_session(trace_text, env=env)
    summaries = [c.summary for c in session.commands.values()]
    summaries.append(summarize(session.unattributed, env))
    read: set[str] = set()
    executed: set[str] = set()
    for s in summaries:
        read |= s.read | s.environment.read
        executed |= s.executed | s.environment.executed
    return read, executed, _open_aliases(trace_text)


def _open_aliases(trace_text: str) -> dict[str, set[str]]:
    aliases: dict[str, set[str]] = {}
    records, _ = parse_records(trace_text)
    for sc in records:
        if not isinstance(sc, Syscall) or sc.name not in _OPENS or not sc.ok or sc.orphan:
            continue
        if sc.ret_path is None or not sc.ret_path.startswith("/") or sc.ret_deleted:
            continue
        dirfd_i, path_i = _OPENS[sc.name]
        asked = arg_path(sc, None, dirfd_i, path_i)
        got = norm(sc.ret_path)
        if asked is not None and asked != got and not is_marker_path(asked):
            aliases.setdefault(got, set()).add(asked)
    return aliases


# ------------------------------------------------------------------ the audit


def usr_spelling(path: str) -> str | None:
    """``/lib/x`` -> ``/usr/lib/x`` (the same file on a merged-/usr image); None otherwise.
    Used only to match ``agent_may_modify``: on an image without merged /usr the two are
    different files, but what the /lib name may hold is then judged by the same name a task
    declares (a /lib/.../libc.so.6 is never covered by a declared /usr/lib/.../libfoo*)."""
    return "/usr" + path if path.startswith(MERGED_USR) else None


def loader_cache_regenerated(changed: set[str], regenerates: Callable[[], bool] | None) -> bool:
    """Is the agent's ``/etc/ld.so.cache`` what ldconfig makes from the library folders?
    Then it is regenerated state, not a hook: with the loader's configuration and ldconfig
    untouched it lists only ``lib*.so*`` files of the system's library folders, and each of
    those the verifier loads is judged itself (a shared library). ``regenerates``: the caller
    runs the image's ldconfig into a scratch file and compares (None: unknown, not clean)."""
    if regenerates is None or any(p == i or (i.endswith("/") and p.startswith(i))
                                  for p in changed for i in LOADER_INPUTS):
        return False
    return regenerates()


def audit_verifier(trace_text: str, agent_changed: Iterable[str], *, workdir: str,
                   instruction: str, may_modify: Sequence[str] = (),
                   resolve: Callable[[list[str]], Mapping[str, Iterable[str]]] | None = None,
                   session: SessionTrace | None = None,
                   loader_cache_regenerates: Callable[[], bool] | None = None,
                   ) -> list[dict[str, str]]:
    """Toolchain files the verifier executed or loaded that an agent process created or
    modified, not exempt; ``[{"path", "reason"}]`` sorted by path (empty: not suspect).

    ``resolve``: called once with the executed paths (sorted), returns executed path -> the
    files the kernel really ran for it, which the trace cannot show (the end of a symlink
    chain, a ``#!`` interpreter); the caller resolves them in the container.
    ``session``: ``parse_session(trace_text)`` (default environment layer), if the caller has
    parsed the trace already; the text is still read for the names opens asked for.
    ``loader_cache_regenerates``: see ``loader_cache_regenerated`` (an agent-changed
    ``/etc/ld.so.cache`` is a hit unless it is regenerated state)."""
    read, executed, aliases = verifier_loaded(trace_text, session=session)
    exec_targets = resolve(sorted(executed)) if resolve is not None and executed else {}
    changed = {norm(p) for p in agent_changed if isinstance(p, str) and p.startswith("/")}
    work = norm(workdir) if workdir and workdir.startswith("/") else "/"

    def exempt(path: str) -> bool:
        src = source_of(path)  # bytecode is exempt with its source
        names = [path] if src is None else [path, src]
        usr = usr_spelling(path)  # a declared /usr/lib/x also covers its /lib/x spelling
        if under(path, TESTS_DIR) or any(glob_match(g, n) for g in may_modify
                                         for n in names + ([usr] if usr else [])):
            return True
        if any(_named(instruction, n) for n in names):
            return True
        if work == "/" or not under(path, work):
            return False
        if shadows_module(path, work):
            return False
        if not is_hook(path):
            return True  # the task's own work: an answer the tests read, run or import
        src = names[-1]  # a hook the instruction names by its path under the workdir or
        rel = src[len(work.rstrip("/")) + 1:]  # by its basename, each a word of its own
        return any(_named(instruction, w) for w in {rel, posixpath.basename(src)})

    hits: dict[str, str] = {}
    for path in read | executed:
        names = [path] + sorted(aliases.get(path, ()))
        for name in names:  # the resolved name first; another name only if it did not hit
            reason = toolchain_reason(name, executed=path in executed and name == path)
            if reason is None and work != "/" and shadows_module(name, work):
                reason = "shadows a python module"
            if reason is None or not (name in changed or path in changed) or exempt(name):
                continue
            if path == LOADER_CACHE and loader_cache_regenerated(changed, loader_cache_regenerates):
                continue
            hits.setdefault(name, reason)
            break
    for path in sorted(executed):
        for target in sorted(exec_targets.get(path, ())):
            if target != path and target in changed and not exempt(target):
                hits.setdefault(target, f"executed (as {path})")
    return [{"path": p, "reason": hits[p]} for p in sorted(hits)]


_SITE = re.compile(r"(?P<head>.*/(?:site|dist)-packages)/.*")
_PYVER = re.compile(r"python3(?:\.\d+)?")
_STDLIB = re.compile(r"(?P<head>/usr(?:/local)?/lib/python3[^/]*)/.*")


def propose_may_modify(hits: Iterable[dict[str, str]]) -> list[str]:
    """A short sorted list of ``agent_may_modify`` globs that exempt ``hits``: a Python
    library file becomes its whole ``site-packages``/``dist-packages`` (or standard library)
    folder with the version generalised (``python3.11`` -> ``python3*``); anything else
    (an executable, a conftest.py, a shared library) stays its own exact path."""
    out: set[str] = set()
    for hit in hits:
        path = hit.get("path", "") if isinstance(hit, dict) else ""
        if not path.startswith("/"):
            continue
        m = _SITE.fullmatch(path) or _STDLIB.fullmatch(path)
        if m:
            head = "/".join(_PYVER.sub("python3*", c) if _PYVER.fullmatch(c) else c
                            for c in m["head"].split("/"))
            out.add(head + "/**")
        else:
            out.add(path)
    return sorted(out)
