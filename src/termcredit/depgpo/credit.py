"""Credit per command: walk back from the verifier's resources over the dependencies.

* **Direct** records of c: lines c introduced that sit, still owned by c, in the final version
  of a verifier-inspected file (E). Ownership is by record identity, so a line that moved by a
  rename stays c's, and an overwritten line is nobody's.
* **Indirect** records of c: records c owned in a version that a *relevant* command read
  while writing some *other* path (the reader's output goes elsewhere). If the reader also
  rewrote the path it read, only the records that survive its rewrite qualify (the
  reference's "not overwritten in place"; deleting what it read is no overwrite). Relevance
  starts at the direct writers and the relevant resource writers and spreads backward over
  these qualifying reads (a worklist BFS); every record version is expanded once.
* **Write credit** ``c_w = |direct ∪ indirect| / |records of c|``.
* **Resource writes** (dirs, symlinks, meta, deletes, line-free edits) of resource-only
  writers: credit 1 when a write touches a path in E, an ancestor directory of a path in E, or
  an ancestor of a path a relevant command wrote, *and its effect lasts to the end*
  (``resource_must_persist``: the dir/mode/edit is still the path's, the tombstone is the final
  state; off: the bare path rule), or when a relevant command read the path while the effect
  was current ("feeds a relevant writer"). Relevant resource writers also spread relevance
  over their own qualifying reads (information flowed into the verified result through them).
  With ``resource_units`` a mixed command counts each resource write as one more record.
* **Working directory, shell state, absence, metadata**: a command whose `cd` set the cwd a
  *relevant* command resolved relative paths in is a relevant resource writer of that cwd
  (label ``cwd``); one that set a shell variable, export, function or alias a relevant
  command's text expands or calls is one of that name (label ``shellvar``), and what it read
  to compute the value spreads relevance as a writer's reads do; a lasting deletion of a path
  in E, or of an entry of a directory the verifier listed (a rename's source included), is
  relevant (label ``absence``); a lasting chmod/chown/touch of a path in E or of a listed
  directory is relevant (label ``metadata``).
* **Supporting reads** (traced commands that changed nothing):
  ``c_r = Σ_w β^d(r,w) · c_w`` over distinct writer commands w reachable over command-level
  edges (writer -> reader of its records/effects, stdout producer -> consumer), d the shortest
  hop count. ``writer_support`` (off by default, not in the reference) lets a writer take
  ``max(c_w, its own supporting credit)``, for writers whose stdout fed a relevant command.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

from .deps import Dependencies
from .ownership import REWRITE_MODES, FileVersion, LineRecord, Read
from .stdout_reuse import ReuseConfig


@dataclass(frozen=True)
class DepGPOConfig:
    beta: float = 0.5  # decay of supporting-read credit per hop (paper default)
    subtract_min: bool = True  # f_t = K(C_t - min C)/Σ(C - min C); False: K·C_t/ΣC
    diff_rewrites: str = "if-read"  # rewrite keeps owners of unchanged lines: if-read|always|never
    resource_must_persist: bool = True  # a resource write counts only if its effect lasts
    resource_units: bool = False  # mixed writers: resource writes count as records
    writer_support: bool = False  # writers get max(c_w, supporting credit)
    untraced_weight: float = 1.0  # f_t of a step where no command ran (advantage.step_weights)
    reuse: ReuseConfig = field(default_factory=ReuseConfig)

    def __post_init__(self) -> None:
        if not 0.0 <= self.beta <= 1.0:
            raise ValueError(f"DepGPOConfig.beta must be in [0, 1], got {self.beta}")
        if self.diff_rewrites not in REWRITE_MODES:
            raise ValueError(f"DepGPOConfig.diff_rewrites: one of {REWRITE_MODES}")
        if not (math.isfinite(self.untraced_weight) and self.untraced_weight >= 0):
            raise ValueError("DepGPOConfig.untraced_weight must be finite and >= 0, "
                             f"got {self.untraced_weight}")


@dataclass(frozen=True)
class CreditResult:
    credit: tuple[float | None, ...]  # per command ordinal; None: untraced
    classes: tuple[tuple[str, ...], ...]
    relevant: frozenset[int]  # commands on a path to the verified result (writers)
    n_records: tuple[int, ...]
    n_direct: tuple[int, ...]
    n_indirect: tuple[int, ...]
    # per command: (kind, path, to) with kind cwd|shellvar|absence|metadata (path: the shell
    # name for shellvar); to: the later command that used it, None for the verifier
    deps: tuple[tuple[tuple[str, str, int | None], ...], ...] = ()


def ancestors(path: str) -> list[str]:
    """Proper ancestor directories: ``/a/b/c`` -> ``/a``, ``/a/b``."""
    parts = path.rstrip("/").split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts)) if "/".join(parts[:i])]


def _reach(succ: list[set[int]], start: int) -> dict[int, int]:
    """Shortest hop counts from ``start`` (excluded) over command-level edges."""
    dist, frontier, d = {}, [start], 0
    seen = {start}
    while frontier:
        d += 1
        nxt = []
        for u in frontier:
            for v in succ[u]:
                if v not in seen:
                    seen.add(v)
                    dist[v] = d
                    nxt.append(v)
        frontier = nxt
    return dist


# a labelled dependency: (kind, path or shell name, the later command that used it)
Label = tuple[str, str, int | None]


@dataclass
class _Flow:
    """What the walk back from the verifier's resources found (``_seeds``, then ``_spread``)."""

    direct: dict[int, set[LineRecord]]  # writer -> its lines in the final verified files
    rel_res: set[tuple[int, str]]  # relevant resource writes (command, path, or cwd:/var:NAME)
    relevant: set[int] = field(default_factory=set)  # commands on a path to the result
    indirect: dict[int, set[LineRecord]] = field(default_factory=dict)
    cwd_used_by: dict[int, dict[int, str]] = field(default_factory=dict)  # setter -> user -> dir
    names_used_by: dict[int, set[tuple[str, int]]] = field(default_factory=dict)  # (name, user)


def assign_credit(dg: Dependencies, cfg: DepGPOConfig = DepGPOConfig()) -> CreditResult:
    """Credit per command, in the module doc's phases: walk back from the verifier's resources
    (seeds, then spread), label the dependencies found, credit writers, then readers."""
    flow, res_at = _seeds(dg, cfg)
    _spread(dg, flow, res_at)
    kinds_of, deps, by_cmd_res = _labels(dg, flow)
    credit, classes, n_rec, n_dir, n_ind, readers = _writer_credit(dg, cfg, flow, kinds_of,
                                                                   by_cmd_res)
    _reader_credit(dg, cfg, credit, classes, kinds_of, readers)
    return CreditResult(tuple(credit), tuple(classes), frozenset(flow.relevant), tuple(n_rec),
                        tuple(n_dir), tuple(n_ind), tuple(tuple(x) for x in deps))


def _shell(dg: Dependencies) -> tuple[list[dict[int, set[str]]], list[set[str]]]:
    """Per command: who set the shell names it used, and the names it set (empty when the
    dependencies were built without shell names)."""
    n = len(dg.effects)
    return dg.shell_from or [{} for _ in range(n)], dg.shell_set or [set() for _ in range(n)]


def _persists(dg: Dependencies, cfg: DepGPOConfig, c: int, path: str, kind: str) -> bool:
    """Whether command ``c``'s resource write of ``path`` is still in effect at the end."""
    if not cfg.resource_must_persist:
        return True
    if kind == "delete":
        v = dg.tracker.current.get(path)
        return v is not None and v.kind == "deleted" and v.writer == c
    return c in dg.tracker.res_owners.get(path, ())


def _direct(dg: Dependencies) -> dict[int, set[LineRecord]]:
    """Writer -> its records that sit, still its own, in the final version of a verified file."""
    direct: dict[int, set[LineRecord]] = {}
    for p in dg.resources:
        v = dg.tracker.current.get(p)
        if v is not None and v.live:
            for r in v.records:
                direct.setdefault(r.writer, set()).add(r)
    return direct


def _seeds(dg: Dependencies, cfg: DepGPOConfig) -> tuple[_Flow, dict[str, set[int]]]:
    """Where the walk starts: the direct writers of the verified files and the lasting resource
    writes the verifier saw; with ``res_at``, path -> commands whose lasting resource effect
    is there (an ancestor of a relevant command's path makes them relevant later)."""
    effects, E = dg.effects, dg.resources
    e_anc = {a for p in E for a in ancestors(p)}
    direct = _direct(dg)
    rel_res: set[tuple[int, str]] = set()
    res_at: dict[str, set[int]] = {}
    for c, e in enumerate(effects):
        for rw in e.resources:
            if _persists(dg, cfg, c, rw.path, rw.kind):
                res_at.setdefault(rw.path, set()).add(c)
                if rw.path in E or rw.path in e_anc:
                    rel_res.add((c, rw.path))
    listed = dg.listed
    for c, e in enumerate(effects):  # what the verifier's listings saw: gone entries, modes
        for rw in e.resources:
            parent = rw.path.rpartition("/")[0] or "/"
            seen = ((rw.kind == "delete" and parent in listed)
                    or (rw.kind == "meta" and rw.path in listed))
            if seen and _persists(dg, cfg, c, rw.path, rw.kind):
                rel_res.add((c, rw.path))
    return _Flow(direct, rel_res, relevant=set(direct) | {c for c, _ in rel_res}), res_at


def _spread(dg: Dependencies, flow: _Flow, res_at: dict[str, set[int]]) -> None:
    """Spread relevance backward (a worklist BFS) from each relevant command to what it used:
    the records of its qualifying reads (indirect), the resource writers of what it read and
    of its paths' ancestors, the `cd` behind its cwd, the setters of the shell names it used."""
    effects = dg.effects
    shell_from, shell_set = _shell(dg)
    queue = deque(sorted(flow.relevant))
    expanded: set[int] = set()  # id() of versions whose records were credited in full
    # a command's outputs: paths it wrote, and shell names it set (a value computed from reads)
    outs = [e.written_paths | {"var:" + name for name in shell_set[c]}
            for c, e in enumerate(effects)]

    def mark(w: int) -> None:
        if w not in flow.relevant:
            flow.relevant.add(w)
            queue.append(w)

    while queue:
        c = queue.popleft()
        e = effects[c]
        for rd in e.reads:
            if not outs[c] - {rd.path}:
                continue  # its output does not go to a different path
            for r in _qualifying_records(rd, e.versions.get(rd.path), expanded):
                if r.writer != c:
                    flow.indirect.setdefault(r.writer, set()).add(r)
                    mark(r.writer)
            for w in rd.res_owners:
                if w != c:
                    flow.rel_res.add((w, rd.path))
                    mark(w)
        for p in e.versions:
            for a in ancestors(p):
                for w in res_at.get(a, ()):
                    flow.rel_res.add((w, a))
                    mark(w)
        for w, d in dg.cwd_from[c].items():  # the `cd` that set the cwd it used
            flow.rel_res.add((w, "cwd:" + d))
            flow.cwd_used_by.setdefault(w, {})[c] = d
            mark(w)
        for w, names in shell_from[c].items():  # the commands that set names it expanded
            for name in names:
                flow.rel_res.add((w, "var:" + name))
                flow.names_used_by.setdefault(w, set()).add((name, c))
            mark(w)


def _qualifying_records(rd: Read, mine: FileVersion | None,
                        expanded: set[int]) -> Sequence[LineRecord]:
    """The records of the version ``rd`` read that flowed on: all of them once per version
    when the reader did not rewrite that path (``mine``: its own version of it, if any),
    else only those that survive its rewrite."""
    v = rd.version
    if mine is None or not mine.live:  # deleting what it read overwrites nothing
        if id(v) in expanded:
            return ()
        expanded.add(id(v))
        return v.records
    keep = set(mine.records)
    return [r for r in v.records if r in keep]


def _labels(dg: Dependencies, flow: _Flow
            ) -> tuple[list[set[str]], list[list[Label]], dict[int, int]]:
    """Per command: the kinds of its relevant resource writes, the dependencies they label
    (absence, metadata, cwd, shellvar; to whom), and how many relevant resource writes it has."""
    n = len(dg.effects)
    by_cmd_res: dict[int, int] = {}
    for c, _ in flow.rel_res:
        by_cmd_res[c] = by_cmd_res.get(c, 0) + 1
    res_kinds = [{rw.path: rw.kind for rw in e.resources} for e in dg.effects]
    deps: list[list[Label]] = [[] for _ in range(n)]
    kinds_of: list[set[str]] = [set() for _ in range(n)]
    for c, p in sorted(flow.rel_res):
        if p.startswith("cwd:"):
            kinds_of[c].add("cwd")
            continue
        if p.startswith("var:"):
            kinds_of[c].add("shellvar")
            continue
        k = res_kinds[c].get(p)
        label = {"delete": "absence", "meta": "metadata"}.get(k or "", "resource-write")
        kinds_of[c].add(label)
        if label != "resource-write":
            deps[c].append((label, p, None))
    for w, users in flow.cwd_used_by.items():
        deps[w].extend(("cwd", d, u) for u, d in sorted(users.items()))
    for w, uses in flow.names_used_by.items():
        deps[w].extend(("shellvar", name, u) for name, u in sorted(uses))
    return kinds_of, deps, by_cmd_res


def _writer_credit(dg: Dependencies, cfg: DepGPOConfig, flow: _Flow,
                   kinds_of: list[set[str]], by_cmd_res: dict[int, int]) -> tuple[
        list[float | None], list[tuple[str, ...]], list[int], list[int], list[int], list[int]]:
    """``c_w`` and the classes of each traced writer; with the record counts per command and
    the traced commands that changed nothing (the readers, credited next)."""
    n = len(dg.effects)
    _, shell_set = _shell(dg)
    credit: list[float | None] = [None] * n
    classes: list[tuple[str, ...]] = [("untraced",)] * n
    n_rec, n_dir, n_ind = [0] * n, [0] * n, [0] * n
    readers: list[int] = []
    for c, e in enumerate(dg.effects):
        if not dg.commands[c].traced:
            continue
        if not e.is_writer:
            readers.append(c)
            continue
        d, i = flow.direct.get(c, set()), flow.indirect.get(c, set())
        n_rec[c], n_dir[c], n_ind[c] = len(e.records), len(d), len(i)
        n_res = (len({rw.path for rw in e.resources}) + (dg.cwd_set[c] is not None)
                 + len(shell_set[c]))
        good_res = min(by_cmd_res.get(c, 0), n_res)
        if e.records:
            good, total = len(d | i), len(e.records)
            if cfg.resource_units:
                good, total = good + good_res, total + n_res
            else:
                good_res = 0  # labels say what earned credit
            credit[c] = good / total
        else:
            credit[c] = 1.0 if good_res else 0.0
        labels = [name for name, on in (("direct-write", d), ("indirect-write", i)) if on]
        if good_res:
            labels += [k for k in ("resource-write", "absence", "metadata", "cwd", "shellvar")
                       if k in kinds_of[c]]
        classes[c] = tuple(labels) or ("no-flow",)
    return credit, classes, n_rec, n_dir, n_ind, readers


def _reader_credit(dg: Dependencies, cfg: DepGPOConfig, credit: list[float | None],
                   classes: list[tuple[str, ...]], kinds_of: list[set[str]],
                   readers: list[int]) -> None:
    """Supporting-read credit ``c_r`` of the readers (and, with ``writer_support``, of the
    writers), from the writers' credit as ``_writer_credit`` left it; in place."""
    effects = dg.effects
    writer_credit = list(credit)
    beta = cfg.beta

    def support(c: int) -> float:
        total = 0.0
        for w, hops in _reach(dg.succ, c).items():
            cw = writer_credit[w]
            if cw and effects[w].is_writer:
                total += beta ** hops * cw
        return total

    for c in readers:
        # changed no file, but set the cwd or a shell name a relevant command used
        shell_kinds = tuple(k for k in ("cwd", "shellvar") if k in kinds_of[c])
        if shell_kinds:
            credit[c], classes[c] = 1.0, shell_kinds
            continue
        cr = support(c)
        credit[c] = cr
        classes[c] = ("supporting-read",) if cr > 0 else ("no-flow",)
    if cfg.writer_support:
        for c, e in enumerate(effects):
            if e.is_writer and dg.commands[c].traced:
                s = support(c)
                if s > (credit[c] or 0.0):
                    credit[c] = s
                    kept = tuple(x for x in classes[c] if x != "no-flow")
                    classes[c] = kept + ("supporting-read",)
