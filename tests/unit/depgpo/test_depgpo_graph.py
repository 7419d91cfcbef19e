"""The NetworkX dependency graph: nodes, edge kinds, resources, JSON round trip."""

from __future__ import annotations

import json

import networkx as nx
from depgpo_testutil import cmd, episode, random_episodes, untraced, worked_example
from hypothesis import given, settings

from termcredit.depgpo import analyse
from termcredit.depgpo.graph import GraphBuilder, build_graph, from_json, to_json

A, B, C = "/w/a.txt", "/w/b.txt", "/w/c.txt"


def seven() -> list:
    """The tracing prototype's 7-command sequence."""
    return [
        cmd(0, "echo hello > a.txt", write={A: "hello\n"}),
        cmd(1, "cat a.txt | tr a-z A-Z > b.txt", read=[A], write={B: "HELLO\n"}),
        cmd(2, "sed -i s/O/O!/ b.txt", read=[B], write={B: "HELLO!\n"}, derived={B: B}),
        cmd(3, "mv b.txt c.txt", read=[B], write={C: "HELLO!\n"}, derived={C: B}, deleted=[B]),
        cmd(4, "echo more >> c.txt", read=[C], write={C: "HELLO!\nmore\n"}, derived={C: C}),
        cmd(5, "cat c.txt a.txt", read=[C, A], stdout="HELLO!\nmore\nhello\n"),
        cmd(6, "rm a.txt", deleted=[A]),
    ]


def edges(g, kind):
    return {(u, v) for u, v, k in g.edges(data="kind") if k == kind}


def test_seven_command_sequence():
    g = build_graph(episode(*seven())).graph
    assert edges(g, "write") == {
        ("cmd:0", f"file:{A}@1"), ("cmd:1", f"file:{B}@1"), ("cmd:2", f"file:{B}@2"),
        ("cmd:3", f"file:{C}@1"), ("cmd:3", f"file:{B}@3"), ("cmd:4", f"file:{C}@2"),
        ("cmd:6", f"file:{A}@2")}
    assert edges(g, "read") == {
        (f"file:{A}@1", "cmd:1"), (f"file:{B}@1", "cmd:2"), (f"file:{B}@2", "cmd:3"),
        (f"file:{C}@1", "cmd:4"), (f"file:{C}@2", "cmd:5"), (f"file:{A}@1", "cmd:5")}
    assert edges(g, "derived") == {
        (f"file:{B}@1", f"file:{B}@2"), (f"file:{B}@2", f"file:{C}@1"),
        (f"file:{C}@1", f"file:{C}@2")}
    assert edges(g, "tombstone") == {(f"file:{B}@2", f"file:{B}@3"), (f"file:{A}@1", f"file:{A}@2")}
    assert len(edges(g, "stdout")) == 7
    hows = {(u, v): d["how"] for u, v, d in g.edges(data=True) if d["kind"] == "derived"}
    assert hows[(f"file:{B}@2", f"file:{C}@1")] == "rename"
    assert hows[(f"file:{C}@1", f"file:{C}@2")] == "append"
    assert hows[(f"file:{B}@1", f"file:{B}@2")] == "in-place"
    assert g.nodes[f"file:{B}@3"]["kind"] == "deleted"
    assert nx.is_directed_acyclic_graph(g)


def test_node_attributes():
    g = analyse(worked_example()).graph.graph
    c = g.nodes["cmd:2"]
    assert c["type"] == "command" and c["step"] == 2 and c["index"] == 2
    assert c["text"].startswith("sed") and c["exit_code"] == 0 and c["credit"] == 1.0
    assert c["classes"] == ["direct-write"] and c["weight"] == 1.5
    f = g.nodes["file:/app/answer.txt@1"]
    assert f["type"] == "file" and f["kind"] == "content" and f["version"] == 1
    assert f["resource"] is True and f["writer"] == 2 and f["lines"] == 1 and len(f["sha256"]) == 64
    v0 = g.nodes["file:/app/input.txt@0"]
    assert v0["pre_episode"] and v0["sha256"] is None and v0["resource"] is False
    assert g.nodes["out:0"]["type"] == "stdout"
    reuse = [(u, v, d) for u, v, d in g.edges(data=True) if d["kind"] == "stdout-reuse"]
    assert reuse == [("out:0", "cmd:1", {"kind": "stdout-reuse", "values": ["90417"]})]


def test_resources_marked_on_final_versions_only():
    facts = episode(cmd(0, write={A: "1\n"}), cmd(1, write={A: "2\n"}),
                    resources=[A, "/w/never_touched"])
    g = build_graph(facts).graph
    assert g.nodes[f"file:{A}@2"]["resource"] and not g.nodes[f"file:{A}@1"]["resource"]
    assert g.nodes["file:/w/never_touched@0"]["resource"]
    assert g.graph["resources"] == [A, "/w/never_touched"]


def test_command_level_edges():
    dg = build_graph(worked_example())
    assert dg.succ == [{1}, {2}, set()]
    assert dg.sources == [{}, {0: ("90417",)}, {}]


def test_resource_owner_edges_link_to_readers():
    sh = "/app/run.sh"
    dg = build_graph(episode(cmd(0, write={sh: "echo 1\n"}), cmd(1, "chmod +x", meta=[sh]),
                             cmd(2, "./run.sh > out", read=[sh], write={"/app/out": "1\n"})))
    assert dg.succ[0] == {2} and dg.succ[1] == {2}
    assert dg.graph.nodes["cmd:1"]["meta"] == [sh]


def test_untraced_command_node_without_edges():
    dg = build_graph(episode(cmd(0, write={A: "x\n"}), untraced(1)))
    g = dg.graph
    assert g.nodes["cmd:1"]["traced"] is False and g.degree("cmd:1") == 0
    assert "out:1" not in g


def test_incremental_builder_matches_one_shot():
    facts = episode(*seven(), resources=[C])
    b = GraphBuilder(facts.instruction)
    for c in facts.commands:
        b.add(c)
    b.mark_resources(["/w/other"])  # marks are replaced, not accumulated
    dg = b.result(facts.resources)
    assert to_json(dg.graph) == to_json(build_graph(facts).graph)


def test_json_round_trip_sorted_keys():
    g = analyse(episode(*seven(), resources=[C])).graph.graph
    text = to_json(g)
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True)
    assert set(data) >= {"nodes", "edges", "directed", "multigraph"}
    back = from_json(text)
    assert isinstance(back, nx.MultiDiGraph)
    assert dict(back.nodes(data=True)) == dict(g.nodes(data=True))
    assert sorted(back.edges(keys=True, data="kind")) == sorted(g.edges(keys=True, data="kind"))
    assert to_json(back) == text


@settings(max_examples=100, deadline=None, database=None)
@given(random_episodes())
def test_random_graphs_are_dags_and_round_trip(facts):
    g = analyse(facts).graph.graph
    assert nx.is_directed_acyclic_graph(g)
    text = to_json(g)
    assert to_json(from_json(text)) == text
    for u, v, kind in g.edges(data="kind"):
        assert kind in {"read", "write", "derived", "tombstone", "stdout", "stdout-reuse",
                        "cwd", "absence", "metadata"}
        if kind == "stdout-reuse":
            assert g.nodes[u]["index"] < g.nodes[v]["index"]
