"""The dependency graph of an episode as a NetworkX picture: commands, file versions, stdout.

A ``MultiDiGraph`` drawn from the plain dependencies of ``deps.py`` (``GraphBuilder.add`` per
command, so a live episode can grow it step by step). Credit and training never walk it: it
is for ``graph.json``, ``termcredit graph``/``credit``/``view`` and the pictures.

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
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields

import networkx as nx

from ..rawtext import to_bytes
from .deps import DepBuilder, Dependencies, feed
from .facts import CommandFacts, EpisodeFacts
from .ownership import CommandEffects, FileVersion
from .stdout_reuse import ReuseConfig


@dataclass
class DepGraph(Dependencies):
    """The dependencies and their picture (``graph``)."""

    graph: nx.MultiDiGraph = field(default_factory=lambda: nx.MultiDiGraph())


def cmd_node(i: int) -> str:
    return f"cmd:{i}"


class GraphBuilder:
    def __init__(self, instruction: str = "", *, diff_rewrites: str | bool = "if-read",
                 reuse: ReuseConfig = ReuseConfig()):
        self.graph = nx.MultiDiGraph()
        self.deps = DepBuilder(instruction, diff_rewrites=diff_rewrites, reuse=reuse)
        self._marked: list[str] = []
        self._placeholders: list[str] = []

    def _version(self, v: FileVersion) -> str:
        node = v.node
        if node not in self.graph:
            self.graph.add_node(
                node, type="file", path=v.path, version=v.v, kind=v.kind, sha256=v.sha256,
                writer=v.writer, lines=len(v.records), pre_episode=v.writer is None,
                resource=False)
        return node

    def add(self, cmd: CommandFacts) -> CommandEffects:
        eff = self.deps.add(cmd)
        self._draw(cmd, eff)
        return eff

    def _draw(self, cmd: CommandFacts, eff: CommandEffects) -> None:
        g, d = self.graph, self.deps
        c = eff.cmd
        me = cmd_node(c)
        g.add_node(me, type="command", index=c, step=cmd.index, text=cmd.command,
                   exit_code=cmd.exit_code, traced=cmd.traced, n_tokens=cmd.n_tokens,
                   meta=sorted(r.path for r in eff.resources if r.kind == "meta"),
                   noop=sorted(eff.noop), credit=None, classes=[])
        if not cmd.traced:
            return
        for w, path in d.cwd_from[c].items():
            g.add_edge(cmd_node(w), me, key="cwd", kind="cwd", path=path)
        for name, w in sorted((n, w) for w, names in d.shell_from[c].items() for n in names):
            g.add_edge(cmd_node(w), me, key=f"shellvar:{name}", kind="shellvar", name=name)
        for r in eff.reads:
            g.add_edge(self._version(r.version), me, key="read", kind="read")
        for v in eff.versions.values():
            node = self._version(v)
            g.add_edge(me, node, key="write", kind="write")
            if v.source is not None and v.how is not None:
                kind = "tombstone" if v.how == "tombstone" else "derived"
                g.add_edge(self._version(v.source), node, key=kind, kind=kind, how=v.how)
        out = f"out:{c}"
        g.add_node(out, type="stdout", index=c, step=cmd.index, chars=len(cmd.stdout),
                   sha256=hashlib.sha256(to_bytes(cmd.stdout)).hexdigest())
        g.add_edge(me, out, key="stdout", kind="stdout")
        for p, values in d.sources[c].items():
            g.add_edge(f"out:{p}", me, key="stdout-reuse", kind="stdout-reuse",
                       values=list(values))

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
            v = self.deps.tracker.current.get(p)
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
        deps = self.deps.result(res, listed)
        return DepGraph(**{f.name: getattr(deps, f.name) for f in fields(Dependencies)},
                        graph=self.graph)


def build_graph(facts: EpisodeFacts, *, diff_rewrites: str | bool = "if-read",
                reuse: ReuseConfig = ReuseConfig()) -> DepGraph:
    return feed(GraphBuilder(facts.instruction, diff_rewrites=diff_rewrites, reuse=reuse), facts)


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
    """``absence``/``metadata`` edges cmd -> ``verifier`` from credit's per-command deps
    (those of an earlier credit on the same graph replaced)."""
    if "verifier" in graph:
        graph.remove_node("verifier")
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
