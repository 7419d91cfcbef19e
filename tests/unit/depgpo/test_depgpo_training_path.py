"""The training path: ``depgpo_step_weights`` gives exactly ``analyse(...).weights`` without
drawing a NetworkX graph, and the facts of a recorded trial point at its records."""

from __future__ import annotations

from pathlib import Path

import networkx
import pytest
from depgpo_testutil import cmd, episode, random_episodes, untraced, worked_example
from hypothesis import given, settings

from termcredit.depgpo import DepGPOConfig, analyse, depgpo_step_weights, graph
from termcredit.depgpo.load import facts_from_trajectory
from termcredit.trialdir import load_trajectory

TRIAL = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "trial-50"
A, B, ANS = "/app/a.txt", "/tmp/b", "/app/answer.txt"

CONFIGS = [
    DepGPOConfig(),
    DepGPOConfig(subtract_min=False, diff_rewrites="always"),
    DepGPOConfig(beta=0.3, diff_rewrites="never", resource_must_persist=False,
                 resource_units=True, writer_support=True),
]


def _shell(c, **names):
    c.shell_set = dict(names)
    return c


def _cwd(c, before, after, used=()):
    c.cwd_before, c.cwd_after, c.cwd_used = before, after, set(used)
    return c


def hand_built():
    """Episodes that exercise every kind of dependency credit walks."""
    rename = episode(
        cmd(0, "seq 3 > /tmp/b", write={B: "1\n2\n3\n"}),
        cmd(1, "sed -i 2d /tmp/b", read=[B], write={B: "1\n3\n"}, derived={B: B}),
        cmd(2, "mv /tmp/b /app/answer.txt", read=[B], write={ANS: "1\n3\n"},
            derived={ANS: B}, deleted=[B]),
        cmd(3, "chmod 600 /app/answer.txt", meta=[ANS]),
        untraced(4), resources=[ANS])
    reuse = episode(
        cmd(0, "cat /app/a.txt", read=[A], stdout="token_abc123 4711\n"),
        cmd(1, "echo 4711 > /app/answer.txt", write={ANS: "4711\n"}),
        cmd(2, "ls /app", listed=["/app"], stdout="a.txt answer.txt\n"),
        cmd(3, "rm /app/junk", deleted=["/app/junk"]),
        cmd(4, "mkdir /app/out", dirs=["/app/out"]),
        cmd(5, "cp x /app/out/y", write={"/app/out/y": b"\x00bin"}),
        resources=[ANS, "/app/out/y"], instruction="Put the code into /app/answer.txt.")
    reuse.listed = ["/app"]
    shell = episode(
        _shell(cmd(0, "X=/app/answer.txt"), X="var:1"),
        _cwd(cmd(1, "cd /app"), "/", "/app"),
        _cwd(cmd(2, 'echo hi > "$X"', write={ANS: "hi\n"}), "/app", "/app", ["/app"]),
        _shell(cmd(3, "f() { :; }"), **{"fn:f": "function:2"}),
        cmd(4, "f", read=[ANS]), resources=[ANS])
    return [worked_example(), rename, reuse, shell]


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("which", range(4))
def test_hand_built_episodes_weigh_the_same_without_the_graph(which, cfg):
    facts = hand_built()[which]
    assert depgpo_step_weights(facts, cfg) == analyse(facts, cfg).weights


@settings(max_examples=100, deadline=None, database=None)
@given(random_episodes())
def test_random_episodes_weigh_the_same_without_the_graph(facts):
    for cfg in CONFIGS:
        assert depgpo_step_weights(facts, cfg) == analyse(facts, cfg).weights


def test_the_training_path_builds_no_networkx_graph(monkeypatch):
    facts = hand_built()[2]
    expected = analyse(facts).weights

    def refuse(*args, **kwargs):
        raise AssertionError("a NetworkX graph was built on the training path")

    monkeypatch.setattr(networkx, "MultiDiGraph", refuse)
    monkeypatch.setattr(graph, "GraphBuilder", refuse)
    assert depgpo_step_weights(facts) == expected
    with pytest.raises(AssertionError, match="NetworkX"):
        analyse(facts)  # the patch does catch the drawing path


def test_recorded_trial_facts_point_at_its_records():
    traj = load_trajectory(TRIAL)
    facts = facts_from_trajectory(traj)
    pairs = [(s.command, f) for s, f in zip(traj.steps, facts.commands) if s.command]
    assert pairs
    for rec, f in pairs:
        assert f.accesses is rec.accesses
        assert all(f.after[st.path] is st for st in rec.files)
    texts = [st for rec, _ in pairs for st in rec.files if st.text]
    assert texts and all(st.content is not None for st in texts)  # loaded from content/
    for cfg in CONFIGS:
        assert depgpo_step_weights(facts, cfg) == analyse(facts, cfg).weights
