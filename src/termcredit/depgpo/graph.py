"""The dependency graph of an episode: commands, file versions and stdout (tracing.md §4.3).

A NetworkX ``MultiDiGraph`` built in one pass over ``EpisodeFacts`` (``GraphBuilder.add`` per
command, so a live episode can grow it step by step):

* nodes ``cmd:<i>`` (``type="command"``: ``index`` = ordinal i, ``step``, ``text``,
  ``exit_code``, ``traced``, ``n_tokens``, ``meta``/``noop`` paths; ``credit``/``classes``/
  ``weight`` once annotated), ``file:<path>@<v>`` (``type="file"``: ``path``, ``version``,
  ``sha256``, ``kind`` in content/deleted/dir/symlink/other, ``writer``, ``lines``,
  ``pre_episode`` for v0, the state of a path read before anyone wrote it; ``resource`` on the
  final version of each verifier-inspected path) and ``out:<i>`` (``type="stdout"``);
* edges keyed and tagged by ``kind``: ``read`` (version current at the start -> cmd),
  ``write`` (cmd -> its new version), ``derived`` (version -> version, ``how`` =
  append/in-place/rename/link), ``tombstone`` (last version -> deleted version), ``stdout``
  (cmd -> its stdout node), ``stdout-reuse`` (stdout node -> consumer cmd, ``values``),
  ``cwd`` (the command whose `cd` set the shell's cwd -> a later command that resolved
  relative paths in it, ``path``), ``shellvar`` (the command that set a shell variable,
  export, function or alias -> a later command whose text expands or calls it, ``name``);
  after credit, ``absence`` and ``metadata`` (cmd -> the
  ``verifier`` node, ``path``): a lasting deletion/chmod the verifier saw.

Next to it the builder keeps what credit needs in plain Python (NetworkX is for storage and
drawing; the hot path never walks it): the ownership tracker and ``succ``, the command-level
edges writer -> reader (owners of the records and resource effects it read) and producer ->
consumer (stdout reuse).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from .facts import CommandFacts, EpisodeFacts
from .ownership import CommandEffects, FileVersion, OwnershipTracker
from .shellvars import shell_uses
from .stdout_reuse import ReuseConfig, StdoutReuse


@dataclass
class DepGraph:
    graph: nx.MultiDiGraph
    tracker: OwnershipTracker
    commands: list[CommandFacts]
    succ: list[set[int]]  # command-level edges: writer -> reader, producer -> consumer
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


def cmd_node(i: int) -> str:
    return f"cmd:{i}"


class GraphBuilder:
    def __init__(self, instruction: str = "", *, diff_rewrites: str | bool = "if-read",
                 reuse: ReuseConfig = ReuseConfig()):
        self.graph = nx.MultiDiGraph()
        self.tracker = OwnershipTracker(diff_rewrites=diff_rewrites)
        self.reuse = StdoutReuse(instruction, reuse)
        self.commands: list[CommandFacts] = []
        self.succ: list[set[int]] = []
        self.sources: list[dict[int, tuple[str, ...]]] = []
        self._marked: list[str] = []
        self._placeholders: list[str] = []
        self.cwd_from: list[dict[int, str]] = []
        self.cwd_set: list[str | None] = []
        self._cwd: tuple[str, int] | None = None  # (shell cwd, the command that set it)
        self.shell_from: list[dict[int, set[str]]] = []
        self.shell_set: list[set[str]] = []
        # shell name -> (value digest, commands that set it since the value last changed:
        # `x=1` then `export x` are both behind a later `$x`)
        self._names: dict[str, tuple[str, list[int]]] = {}

    def _version(self, v: FileVersion) -> str:
        node = v.node
        if node not in self.graph:
            self.graph.add_node(
                node, type="file", path=v.path, version=v.v, kind=v.kind, sha256=v.sha256,
                writer=v.writer, lines=len(v.records), pre_episode=v.writer is None,
                resource=False)
        return node

    def add(self, cmd: CommandFacts) -> CommandEffects:
        g = self.graph
        eff = self.tracker.apply(cmd)
        c = eff.cmd
        me = cmd_node(c)
        self.commands.append(cmd)
        self.succ.append(set())
        g.add_node(me, type="command", index=c, step=cmd.index, text=cmd.command,
                   exit_code=cmd.exit_code, traced=cmd.traced, n_tokens=cmd.n_tokens,
                   meta=sorted(r.path for r in eff.resources if r.kind == "meta"),
                   noop=sorted(eff.noop), credit=None, classes=[])
        self.cwd_from.append({})
        self.cwd_set.append(None)
        self.shell_from.append({})
        self.shell_set.append(set())
        if not cmd.traced:
            self.sources.append({})
            return eff
        self._cwd_edges(c, cmd)
        self._shell_edges(c, cmd)
        for r in eff.reads:
            g.add_edge(self._version(r.version), me, key="read", kind="read")
            for w in r.version.owners | r.res_owners:
                if w != c:
                    self.succ[w].add(c)
        for v in eff.versions.values():
            node = self._version(v)
            g.add_edge(me, node, key="write", kind="write")
            if v.source is not None and v.how is not None:
                kind = "tombstone" if v.how == "tombstone" else "derived"
                g.add_edge(self._version(v.source), node, key=kind, kind=kind, how=v.how)
        out = f"out:{c}"
        g.add_node(out, type="stdout", index=c, step=cmd.index, chars=len(cmd.stdout),
                   sha256=hashlib.sha256(cmd.stdout.encode("utf-8", "replace")).hexdigest())
        g.add_edge(me, out, key="stdout", kind="stdout")
        found = self.reuse.add(c, cmd.command, cmd.stdout)
        self.sources.append(found)
        for p, values in found.items():
            g.add_edge(f"out:{p}", me, key="stdout-reuse", kind="stdout-reuse",
                       values=list(values))
            self.succ[p].add(c)
        return eff

    def _cwd_edges(self, c: int, cmd: CommandFacts) -> None:
        """Working directory: a command that resolved relative paths in the cwd an earlier
        command's `cd` set depends on it; a `cd` into the cwd the shell is already in sets
        nothing."""
        if self._cwd is not None:
            d, w = self._cwd
            if d in cmd.cwd_used and w != c:
                self.cwd_from[c][w] = d
                self.succ[w].add(c)
                self.graph.add_edge(cmd_node(w), cmd_node(c), key="cwd", kind="cwd", path=d)
        before = cmd.cwd_before if cmd.cwd_before is not None else (
            self._cwd[0] if self._cwd is not None else None)
        if cmd.cwd_after is not None and cmd.cwd_after != before:
            self._cwd = (cmd.cwd_after, c)
            self.cwd_set[c] = cmd.cwd_after

    def _shell_edges(self, c: int, cmd: CommandFacts) -> None:
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
                    self.graph.add_edge(cmd_node(w), cmd_node(c), key=f"shellvar:{name}",
                                        kind="shellvar", name=name)
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

    def mark_resources(self, resources: Iterable[str]) -> None:
        """``resource=True`` on the final version of each verifier-inspected path (a v0 node
        for one the episode never touched)."""
        for node in self._marked:
            self.graph.nodes[node]["resource"] = False
        for node in self._placeholders:  # v0 nodes that stood only for an earlier mark
            if node in self.graph and self.graph.degree(node) == 0:
                self.graph.remove_node(node)
        self._marked, self._placeholders = [], []
        for p in sorted(set(resources)):
            v = self.tracker.current.get(p)
            if v is None:
                node = f"file:{p}@0"
                if node not in self.graph:
                    self.graph.add_node(node, type="file", path=p, version=0, kind="content",
                                        sha256=None, writer=None, lines=0, pre_episode=True)
                    self._placeholders.append(node)
            else:
                node = self._version(v)
            self.graph.nodes[node]["resource"] = True
            self._marked.append(node)
        self.graph.graph["resources"] = sorted(set(resources))

    def result(self, resources: Iterable[str] = (), listed: Iterable[str] = ()) -> DepGraph:
        res = frozenset(resources)
        self.mark_resources(res)
        return DepGraph(self.graph, self.tracker, self.commands, self.succ, self.sources, res,
                        self.cwd_from, self.cwd_set, frozenset(listed), self.shell_from,
                        self.shell_set)


def build_graph(facts: EpisodeFacts, *, diff_rewrites: str | bool = "if-read",
                reuse: ReuseConfig = ReuseConfig()) -> DepGraph:
    b = GraphBuilder(facts.instruction, diff_rewrites=diff_rewrites, reuse=reuse)
    for cmd in facts.commands:
        b.add(cmd)
    return b.result(facts.resources, facts.listed)


def annotate(graph: nx.MultiDiGraph, credit: Sequence[float | None],
             classes: Sequence[Sequence[str]], weights: Mapping[int, float] | None = None) -> None:
    """Write per-command credit, classes and (per step) weights onto the command nodes."""
    for i, (cr, cl) in enumerate(zip(credit, classes)):
        d = graph.nodes[cmd_node(i)]
        d["credit"], d["classes"] = cr, list(cl)
        if weights is not None:
            d["weight"] = weights.get(d["step"])


def add_verifier_edges(graph: nx.MultiDiGraph,
                       deps: Sequence[Sequence[tuple[str, str, int | None]]]) -> None:
    """``absence``/``metadata`` edges cmd -> ``verifier`` from credit's per-command deps."""
    for c, ds in enumerate(deps):
        for kind, path, to in ds:
            if to is None:
                if "verifier" not in graph:
                    graph.add_node("verifier", type="verifier")
                graph.add_edge(cmd_node(c), "verifier", key=f"{kind}:{path}", kind=kind,
                               path=path)


def to_json(graph: nx.MultiDiGraph) -> str:
    """Node-link JSON with sorted keys (``graph.json``)."""
    return json.dumps(nx.node_link_data(graph, edges="edges"), sort_keys=True)


def from_json(text: str) -> nx.MultiDiGraph:
    return nx.node_link_graph(json.loads(text), edges="edges")
