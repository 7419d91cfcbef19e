"""Credit rules at their edges (each test kills a mutant `make mutants` found alive): expected
credit worked out by hand in the comments."""

from __future__ import annotations

import dataclasses

import pytest
from depgpo_testutil import cmd, episode, worked_example

from termcredit.depgpo import DepGPOConfig, assign_credit, build_graph
from termcredit.depgpo.credit import _reach, ancestors
from termcredit.depgpo.facts import EpisodeFacts

ANS = "/app/answer.txt"


def credit(facts, **cfg):
    cfg = DepGPOConfig(**cfg)
    return assign_credit(build_graph(facts, diff_rewrites=cfg.diff_rewrites, reuse=cfg.reuse), cfg)


def test_config_bounds_and_messages():
    assert DepGPOConfig(beta=1.0).beta == 1.0 and DepGPOConfig(beta=0.0).beta == 0.0
    with pytest.raises(ValueError, match=r"DepGPOConfig.beta must be in \[0, 1\], got 1.5"):
        DepGPOConfig(beta=1.5)
    with pytest.raises(ValueError, match=r"DepGPOConfig.diff_rewrites: one of \('if-read'"):
        DepGPOConfig(diff_rewrites="sometimes")


def test_ancestors_keep_every_character_of_the_path():
    assert ancestors("/app/dirX/X") == ["/app", "/app/dirX"]
    assert ancestors("/a/b/") == ["/a"]


def test_reach_counts_shortest_hops():
    assert _reach([{1, 2}, {2}, set()], 0) == {1: 1, 2: 1}
    assert _reach([{1}, {2}, set()], 0) == {1: 1, 2: 2}


def test_a_root_level_deletion_counts_when_the_verifier_listed_the_root():
    facts = EpisodeFacts("", [cmd(0, "rm /junk", deleted=["/junk"])], resources=[],
                         listed=["/"])
    r = credit(facts)
    assert r.credit == (1.0,) and r.classes == (("absence",),)


def test_a_graph_built_without_shell_state_gets_the_same_credit():
    dg = build_graph(worked_example())
    bare = dataclasses.replace(dg, shell_from=None, shell_set=None)
    assert assign_credit(bare).credit == assign_credit(dg).credit == (0.75, 1.0, 1.0)


def test_a_read_of_the_path_it_appends_to_does_not_hide_its_other_reads():
    # c1 reads /app/a (its own output: skipped) and /app/b (whose line it copies into /app/a)
    facts = episode(cmd(0, "echo x > /app/b", write={"/app/b": "x\n"}),
                    cmd(1, "cat /app/b >> /app/a", read=["/app/a", "/app/b"],
                        write={"/app/a": "old\nx\n"}, derived={"/app/a": "/app/a"}),
                    resources=["/app/a"])
    assert credit(facts).credit == (1.0, 1.0)


def test_an_in_place_rewrite_credits_only_the_lines_that_survive_it():
    f = "/app/f"
    facts = episode(cmd(0, "printf 'a\\nb\\n' > f", write={f: "a\nb\n"}),
                    cmd(1, "sed -i /b/d f; wc -l < f > out", read=[f],
                        write={f: "a\n", "/app/out": "1\n"}, derived={f: f}),
                    resources=[f, "/app/out"])
    # c0's "a" is still its own in f (direct) and survived c1's edit (indirect): 1 of 2 lines
    assert credit(facts).credit == (0.5, 1.0)


def test_resource_units_count_each_relevant_resource_write_once():
    def one(resources):
        return episode(cmd(0, "echo 1 > ans; echo 2 > /tmp/x; chmod 600 /app/m1 /tmp/y",
                           write={ANS: "1\n", "/tmp/x": "2\n"}, meta=["/app/m1", "/tmp/y"]),
                       resources=resources)
    # 2 lines (1 in E) + 2 chmods: (1 + 1) / (2 + 2) with one chmod on E, (1 + 2) / 4 with both
    assert credit(one([ANS, "/app/m1"]), resource_units=True).credit == (0.5,)
    assert credit(one([ANS, "/app/m1", "/tmp/y"]), resource_units=True).credit == (0.75,)


def _shell(c, cwd_after=None, **names):
    c.shell_set = dict(names)
    if cwd_after:
        c.cwd_before, c.cwd_after = "/app", cwd_after
    return c


def test_resource_units_count_the_cwd_and_shell_names_of_a_mixed_writer():
    setter = _shell(cmd(0, "cd /app/d; x=5; echo 1 > /app/answer.txt; echo 2 > /tmp/n",
                        write={ANS: "1\n", "/tmp/n": "2\n"}), cwd_after="/app/d", x="var:05")
    use = cmd(1, "echo $x > out", write={"/app/d/out": "5\n"})
    use.cwd_before = use.cwd_after = "/app/d"
    use.cwd_used = {"/app/d"}
    facts = episode(setter, use, resources=[ANS, "/app/d/out"])
    r = credit(facts, resource_units=True)
    # 2 lines (1 in E) + the cwd and x, both used by a relevant command: (1 + 2) / (2 + 2)
    assert r.credit == (0.75, 1.0)
    assert r.classes[0] == ("direct-write", "cwd", "shellvar")
    assert credit(facts).classes[0] == ("direct-write",)  # without units: lines only


def test_a_cd_and_a_variable_each_label_their_own_setter():
    cd = _shell(cmd(0, "cd /app/d"), cwd_after="/app/d")
    var = _shell(cmd(1, "x=5"), x="var:05")
    use = cmd(2, "echo $x > out", write={"/app/d/out": "5\n"})
    use.cwd_before = use.cwd_after = "/app/d"
    use.cwd_used = {"/app/d"}
    r = credit(episode(cd, var, use, resources=["/app/d/out"]))
    assert r.credit == (1.0, 1.0, 1.0)
    assert r.classes == (("cwd",), ("shellvar",), ("direct-write",))


def test_supporting_read_is_scaled_by_the_writers_credit():
    facts = episode(cmd(0, "cat /app/in", read=["/app/in"], stdout="token_abc123\n"),
                    cmd(1, "echo token_abc123 > ans; echo junk > /tmp/j",
                        write={ANS: "token_abc123\n", "/tmp/j": "junk\n"}),
                    resources=[ANS])
    # the writer: 1 of 2 lines -> 0.5; the reader one hop before it: 0.5 · 0.5
    assert credit(facts).credit == (0.25, 0.5)


def test_writer_support_never_lowers_a_writers_credit_nor_relabels_a_tie():
    def chain(extra):
        return episode(cmd(0, "compute | tee /app/log", stdout="val_xyz\n",
                           write={"/app/log": "val_xyz\n", **extra}),
                       cmd(1, "echo val_xyz > ans", write={ANS: "val_xyz\n"}),
                       resources=[ANS, "/app/log"])
    # c0 wrote the log the tests read (credit 1); its stdout fed c1: support 0.5 · 1
    r = credit(chain({}), writer_support=True)
    assert r.credit == (1.0, 1.0) and r.classes[0] == ("direct-write",)
    # with a second, unread line c0's credit is 0.5, equal to its support: nothing changes
    r = credit(chain({"/tmp/j": "x\n"}), writer_support=True)
    assert r.credit == (0.5, 1.0) and r.classes[0] == ("direct-write",)


def test_writer_support_leaves_a_cwd_setter_at_its_own_credit():
    cd = cmd(0, "cd /app/d && ls", stdout="report_2024.csv\n")
    cd.cwd_before, cd.cwd_after = "/app", "/app/d"
    rel = cmd(1, "cp report_2024.csv out", write={"/app/d/out": "r\n"})
    rel.cwd_before = rel.cwd_after = "/app/d"
    rel.cwd_used = {"/app/d"}
    other = cmd(2, "echo report_2024.csv > /app/ans", write={"/app/ans": "report_2024.csv\n"})
    facts = episode(cd, rel, other, resources=["/app/d/out", "/app/ans"])
    # β = 1: the cd's support is 1 (via the cwd) + 1 (its listing reused) = 2; writer support
    # is for writers, the cd keeps the credit of the cwd it set
    r = credit(facts, beta=1.0, writer_support=True)
    assert r.credit == (1.0, 1.0, 1.0) and r.classes[0] == ("cwd",)
