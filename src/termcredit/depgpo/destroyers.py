"""Which commands destroyed something a later command needed: the blame of a failed episode.

The dependency graph credits what reached the verifier; a command that deleted, truncated,
overwrote, moved away or unset what a later step needed sends nothing forward, so its credit
is 0 (a deletion) or the chain's (an overwrite that a later step read). This finds those
commands from the same facts the graph is built from, for ``depgpo[negative=destroyers]``.

A command *destroyed* a resource a later command *needed* when:

* **deleted / moved away** (the tracker's tombstone of a path): a later command, while the
  path was still gone, looked it up and found it missing (``probed`` without creating it) or
  looked up a path under it (a deleted directory);
* **truncated / overwrote** (a new version of a path not continued from its own previous one:
  a rewrite from scratch, or another file moved or linked onto it): the replaced version was
  one the episode knew (written or read in it) and nobody had *used* yet (no command that read
  it wrote a file or set a shell name), and a later command read the replacement. A version
  that was already used is an update (back up, then replace: the usual pipeline); one that
  was never used is lost, and the later reader got the replacement instead;
* **unset** (the shim's ``unset:`` for a shell name) or ended the shell (``shell_reset``, for
  the names commands had set): a later command's text used the name before anyone set it again.

Not seen: the pre-episode state of a path no command touched before it was overwritten (the
trace cannot tell a truncating open of an existing file from the creation of a new one, so
such an overwrite is not counted), and a destroyed name a program read from its environment.
"""

from __future__ import annotations

from .deps import Dependencies
from .ownership import FileVersion
from .shellvars import shell_uses


def _used(deps: Dependencies, version: FileVersion, upto: int) -> bool:
    """Some command up to ``upto`` read ``version`` and made something of it (wrote a file or
    set a shell name); a read that only printed (a look-around) does not use it up."""
    for e in range(upto + 1):
        eff = deps.effects[e]
        if any(r.version is version for r in eff.reads) and (
                eff.is_writer or deps.commands[e].shell_set):
            return True
    return False


def _found_missing(deps: Dependencies, c: int, path: str) -> bool:
    """A later command looked ``path`` (or a path under it) up while c's deletion held."""
    tomb = deps.effects[c].versions[path]
    for d in range(c + 1, len(deps.commands)):
        if deps.tracker.version_at(path, d) is not tomb:
            return False  # re-created: what comes later did not meet c's deletion
        acc = deps.commands[d].accesses
        looked = (acc.probed - acc.written) | acc.read
        if any(p == path or p.startswith(path.rstrip("/") + "/") for p in looked):
            return True
    return False


def _read_replacement(deps: Dependencies, c: int, version: FileVersion) -> bool:
    """A later command read the version c wrote."""
    return any(r.version is version for e in deps.effects[c + 1:] for r in e.reads)


def _file_destroyers(deps: Dependencies) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for c, eff in enumerate(deps.effects):
        for path, v in eff.versions.items():
            if v.kind == "deleted":
                hit = _found_missing(deps, c, path)
            elif v.how in ("append", "in-place"):
                hit = False  # continues the old content: nothing destroyed
            else:
                old = deps.tracker.version_at(path, c)
                hit = (old is not None and old.live and not _used(deps, old, c)
                       and _read_replacement(deps, c, v))
            if hit:
                out.setdefault(c, set()).add(path)
    return out


def _shell_destroyers(deps: Dependencies) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    alive: set[str] = set()  # names commands set and nothing has removed since
    gone: dict[str, int] = {}  # name -> the command that unset it (or ended the shell)
    for c, cmd in enumerate(deps.commands):
        if not cmd.traced:
            continue
        uses = shell_uses(cmd.command)
        for name in uses.variables | {f"{p}:{n}" for n in uses.commands for p in ("fn", "alias")}:
            if name in gone:
                out.setdefault(gone[name], set()).add(f"shell:{name}")
        if cmd.shell_reset:
            gone.update(dict.fromkeys(alive, c))
            alive.clear()
        for name, value in cmd.shell_set.items():
            kind = value.partition(":")[0]
            if kind == "unset":  # the shim reports changes: the name had a value
                gone[name] = c
                alive.discard(name)
            elif kind != "option":
                alive.add(name)
                gone.pop(name, None)
    return out


def destroyers(deps: Dependencies) -> dict[int, set[str]]:
    """Command ordinal -> what it destroyed that a later command needed (paths, and
    ``shell:NAME`` for shell names); commands that destroyed nothing needed are absent."""
    out = _file_destroyers(deps)
    for c, names in _shell_destroyers(deps).items():
        out.setdefault(c, set()).update(names)
    return out
