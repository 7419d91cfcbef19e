"""The packages of src/termcredit import each other without a cycle (lazy imports inside
functions count too), so each layer can be read, tested and replaced from the bottom up."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

SRC = Path(__file__).resolve().parents[2] / "src" / "termcredit"


def unit_of(path: Path) -> str:
    """The package (or top-level module) a file belongs to: ``tracer``, ``records``, ..."""
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def imported_units(path: Path) -> set[str]:
    rel = path.relative_to(SRC).with_suffix("").parts
    here = ["termcredit", *rel[:-1]]  # the package this file is in
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                mod = [*base, *(node.module.split(".") if node.module else [])]
            else:
                mod = (node.module or "").split(".")
            if mod[0] != "termcredit":
                continue
            if len(mod) > 1:
                out.add(mod[1])
            else:  # from termcredit import x / from .. import x: x is the unit
                out |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "termcredit" and len(parts) > 1:
                    out.add(parts[1])
    return out


def import_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for path in SRC.rglob("*.py"):
        if path.name == "shim.py" or path.parts[-2] == "data":
            continue  # runs inside the container, imports nothing of ours
        if path.parent == SRC and path.name == "__init__.py":
            continue  # the (empty) top package
        me = unit_of(path)
        g.add_node(me)
        for other in imported_units(path) - {me}:
            g.add_edge(me, other)
    return g


def test_the_scanner_sees_relative_and_lazy_imports(tmp_path):
    # the scanner must see what it is meant to forbid, or the cycle test below proves nothing
    f = SRC / "harness" / "episode.py"
    assert {"records", "sandbox", "tasks", "trialdir"} <= imported_units(f)
    cli = imported_units(SRC / "cli" / "__init__.py")  # imports every verb's package inside functions
    assert {"harness", "trainer", "depgpo"} <= cli


def test_no_import_cycle_among_packages():
    g = import_graph()
    cycles = list(nx.simple_cycles(g))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles)


def test_the_bottom_layers_import_nothing_above_them():
    g = import_graph()
    assert set(g.successors("tracer")) == set(), "the tracer is the bottom layer"
    assert set(g.successors("rawtext")) == set(), "how untrusted bytes are kept: imports nothing"
    assert set(g.successors("jsonl")) == {"rawtext"}, "JSON lines: rawtext's JSON, nothing else"
    assert set(g.successors("records")) <= {"tracer", "rawtext"}
    assert "depgpo" not in nx.descendants(g, "harness"), "graph.json is a hook the application passes to Episode"
    assert "harness" not in nx.descendants(g, "tasks"), "the task model knows no harness"


# bottom to top, as the README's source layout lists them: each imports only units before it
LAYERS = ["tracer", "rawtext", "shellsyntax", "jsonl", "records", "trialdir", "show", "sandbox", "tasks", "harness", "depgpo",
          "estimators", "trainer", "integrations", "llm", "serve", "tasktools", "refine", "bench", "viewer", "cli"]


def test_each_unit_imports_only_the_layers_below_it():
    g = import_graph()
    assert set(g.nodes) == set(LAYERS), "a new package: place it in LAYERS and the README"
    rank = {u: i for i, u in enumerate(LAYERS)}
    upward = sorted((a, b) for a, b in g.edges if rank[b] >= rank[a])
    assert not upward, f"imports that run back up: {upward}"
