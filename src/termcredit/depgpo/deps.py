"""An episode's dependencies in plain Python: everything credit walks, no NetworkX.

``DepBuilder.add`` takes the commands in order (a live episode can grow it step by step) and
keeps:

* the ownership tracker (file versions, line records, resource owners; ``ownership.py``);
* ``succ``: the command-level edges writer -> reader (owners of the records and resource
  effects a command read), stdout producer -> consumer (``stdout_reuse.py``), the `cd` that
  set a cwd -> a later command that resolved relative paths in it, and the setter of a shell
  variable, export, function or alias -> a later command whose text expands or calls it;
* per command: stdout producer -> the values reused from it (``sources``), the command whose
  `cd` set the cwd it used (``cwd_from``), the cwd its own `cd` set (``cwd_set``), the
  setters of the shell names it used (``shell_from``) and the names it set (``shell_set``).

Training computes step weights from these alone; ``graph.py`` draws the same facts as a
NetworkX graph for ``graph.json`` and the pictures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .facts import CommandFacts, EpisodeFacts
from .ownership import CommandEffects, OwnershipTracker
from .shellvars import shell_uses
from .stdout_reuse import ReuseConfig, StdoutReuse


@dataclass
class Dependencies:
    tracker: OwnershipTracker
    commands: list[CommandFacts]
    succ: list[set[int]]  # command-level edges: writer -> reader, producer -> consumer, ...
    sources: list[dict[int, tuple[str, ...]]]  # per command: stdout producer -> values reused
    resources: frozenset[str]  # cleaned verifier-inspected paths (E)
    cwd_from: list[dict[int, str]]  # per command: the command that set the cwd it used -> dir
    cwd_set: list[str | None]  # per command: the cwd its `cd` set (None: changed none)
    listed: frozenset[str] = frozenset()  # directories the verifier listed
    # per command: the commands that set a shell name it used -> those names
    shell_from: list[dict[int, set[str]]] | None = None
    shell_set: list[set[str]] | None = None  # per command: the shell names it set

    @property
    def effects(self) -> list[CommandEffects]:
        return self.tracker.effects


class DepBuilder:
    def __init__(self, instruction: str = "", *, diff_rewrites: str | bool = "if-read",
                 reuse: ReuseConfig = ReuseConfig()):
        self.tracker = OwnershipTracker(diff_rewrites=diff_rewrites)
        self.reuse = StdoutReuse(instruction, reuse)
        self.commands: list[CommandFacts] = []
        self.succ: list[set[int]] = []
        self.sources: list[dict[int, tuple[str, ...]]] = []
        self.cwd_from: list[dict[int, str]] = []
        self.cwd_set: list[str | None] = []
        self._cwd: tuple[str, int] | None = None  # (shell cwd, the command that set it)
        self.shell_from: list[dict[int, set[str]]] = []
        self.shell_set: list[set[str]] = []
        # shell name -> (value digest, commands that set it since the value last changed:
        # `x=1` then `export x` are both behind a later `$x`)
        self._names: dict[str, tuple[str, list[int]]] = {}

    def add(self, cmd: CommandFacts) -> CommandEffects:
        eff = self.tracker.apply(cmd)
        c = eff.cmd
        self.commands.append(cmd)
        self.succ.append(set())
        self.cwd_from.append({})
        self.cwd_set.append(None)
        self.shell_from.append({})
        self.shell_set.append(set())
        if not cmd.traced:
            self.sources.append({})
            return eff
        self._cwd_deps(c, cmd)
        self._shell_deps(c, cmd)
        for r in eff.reads:
            for w in r.version.owners | r.res_owners:
                if w != c:
                    self.succ[w].add(c)
        found = self.reuse.add(c, cmd.command, cmd.stdout)
        self.sources.append(found)
        for p in found:
            self.succ[p].add(c)
        return eff

    def _cwd_deps(self, c: int, cmd: CommandFacts) -> None:
        """Working directory: a command that resolved relative paths in the cwd an earlier
        command's `cd` set depends on it; a `cd` into the cwd the shell is already in sets
        nothing."""
        if self._cwd is not None:
            d, w = self._cwd
            if d in cmd.cwd_used and w != c:
                self.cwd_from[c][w] = d
                self.succ[w].add(c)
        before = cmd.cwd_before if cmd.cwd_before is not None else (
            self._cwd[0] if self._cwd is not None else None)
        if cmd.cwd_after is not None and cmd.cwd_after != before:
            self._cwd = (cmd.cwd_after, c)
            self.cwd_set[c] = cmd.cwd_after

    def _shell_deps(self, c: int, cmd: CommandFacts) -> None:
        """Shell state: a command whose text expands a variable (or calls a function or alias)
        that earlier commands set depends on them. Options are recorded, never linked: which
        command an option like nullglob changed cannot be read from text."""
        uses = shell_uses(cmd.command)
        wanted = [*uses.variables, *(f"{p}:{n}" for n in uses.commands for p in ("fn", "alias"))]
        for name in sorted(set(wanted)):
            for w in self._names.get(name, ("", []))[1]:
                if w != c:
                    self.shell_from[c].setdefault(w, set()).add(name)
                    self.succ[w].add(c)
        if cmd.shell_reset:
            self._names.clear()
        for name, value in sorted(cmd.shell_set.items()):
            kind, _, digest = value.partition(":")
            if kind == "unset":
                self._names.pop(name, None)
            elif kind != "option":
                self.shell_set[c].add(name)
                old = self._names.get(name)
                setters = old[1] + [c] if old is not None and old[0] == digest else [c]
                self._names[name] = (digest, setters)

    def result(self, resources: Iterable[str] = (), listed: Iterable[str] = ()) -> Dependencies:
        return Dependencies(self.tracker, self.commands, self.succ, self.sources,
                            frozenset(resources), self.cwd_from, self.cwd_set, frozenset(listed),
                            self.shell_from, self.shell_set)


def feed(builder: Any, facts: EpisodeFacts) -> Any:
    """Every command of the episode into ``builder`` (a DepBuilder, or the graph's), in order;
    its result for the verifier's resources."""
    for cmd in facts.commands:
        builder.add(cmd)
    return builder.result(facts.resources, facts.listed)


def dependencies(facts: EpisodeFacts, *, diff_rewrites: str | bool = "if-read",
                 reuse: ReuseConfig = ReuseConfig()) -> Dependencies:
    return feed(DepBuilder(facts.instruction, diff_rewrites=diff_rewrites, reuse=reuse), facts)
