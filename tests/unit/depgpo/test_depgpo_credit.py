"""Credit per command on hand-built episodes."""

from __future__ import annotations

import pytest
from depgpo_testutil import cmd, episode, random_episodes, untraced, worked_example
from hypothesis import given, settings

from termcredit.depgpo import DepGPOConfig, analyse, assign_credit, build_graph
from termcredit.depgpo.credit import ancestors

ANS = "/app/answer.txt"


def credit(facts, **cfg):
    cfg = DepGPOConfig(**cfg)
    return assign_credit(build_graph(facts, diff_rewrites=cfg.diff_rewrites, reuse=cfg.reuse), cfg)


def test_worked_example_read_stage_answer():
    r = credit(worked_example())
    assert r.credit == (0.75, 1.0, 1.0)
    assert r.classes == (("supporting-read",), ("indirect-write",), ("direct-write",))
    assert r.relevant == {1, 2}
    assert r.n_records == (0, 1, 1) and r.n_direct == (0, 0, 1) and r.n_indirect == (0, 1, 0)


def test_beta_is_configurable():
    assert credit(worked_example(), beta=0.9).credit[0] == pytest.approx(0.9 + 0.81)
    assert credit(worked_example(), beta=0.0).credit[0] == 0.0
    with pytest.raises(ValueError):
        DepGPOConfig(beta=1.5)


def test_overwritten_answer_gets_zero():
    r = credit(episode(cmd(0, "echo 41 > answer", write={ANS: "41\n"}),
                       cmd(1, "echo 42 > answer", write={ANS: "42\n"}), resources=[ANS]))
    assert r.credit == (0.0, 1.0)
    assert r.classes[0] == ("no-flow",) and r.relevant == {1}


def test_debug_line_halves_a_writers_credit():
    r = credit(episode(cmd(0, "solve", write={ANS: "42\n", "/tmp/debug.log": "dbg\n"}),
                       resources=[ANS]))
    assert r.credit == (0.5,)


def test_partly_kept_lines_give_a_fraction():
    r = credit(episode(cmd(0, write={ANS: "a\nb\nc\nd\n"}),
                       cmd(1, "sed -i", read=[ANS], write={ANS: "a\nB\nc\nD\n"},
                           derived={ANS: ANS}), resources=[ANS]))
    assert r.credit == (0.5, 1.0)


def test_distractors_get_zero():
    r = credit(episode(
        cmd(0, "ls -la /app", listed=["/app"], stdout="total 4\nnotes.txt\n"),
        cmd(1, "echo started > /tmp/debug.log", write={"/tmp/debug.log": "started\n"}),
        cmd(2, "cat /etc/motd", read=["/etc/motd"], stdout="Welcome to Debian\n"),
        cmd(3, "echo 42 > /app/answer.txt", write={ANS: "42\n"}),
        resources=[ANS]))
    assert r.credit == (0.0, 0.0, 0.0, 1.0)
    assert r.classes[:3] == (("no-flow",),) * 3


def test_noop_write_gives_no_records():
    r = credit(episode(cmd(0, "echo 42 > a", write={ANS: "42\n"}),
                       cmd(1, "echo 42 > a again", write={ANS: "42\n"}), resources=[ANS]))
    assert r.credit == (1.0, 0.0) and r.n_records == (1, 0)
    assert r.classes[1] == ("no-flow",)  # changed nothing: a read-only command with no flow


def test_rename_into_the_answer_file():
    tmp = "/tmp/draft"
    r = credit(episode(cmd(0, write={tmp: "42\n"}),
                       cmd(1, "mv /tmp/draft /app/answer.txt", read=[tmp], write={ANS: "42\n"},
                           derived={ANS: tmp}, deleted=[tmp]), resources=[ANS]))
    assert r.credit == (1.0, 1.0)
    assert "direct-write" in r.classes[0] and r.classes[1] == ("resource-write",)


def test_reader_that_deletes_its_input_still_credits_it():
    x = "/tmp/x.txt"
    r = credit(episode(cmd(0, write={x: "42\n"}),
                       cmd(1, "proc x > answer && rm x", read=[x], write={ANS: "42\n"},
                           deleted=[x]), resources=[ANS]))
    assert r.credit == (1.0, 1.0) and r.classes[0] == ("indirect-write",)


def test_indirect_chain_of_writers():
    r = credit(episode(
        cmd(0, write={"/w/raw.csv": "1\n2\n"}),
        cmd(1, "sort raw > sorted", read=["/w/raw.csv"], write={"/w/sorted.csv": "1\n2\n"}),
        cmd(2, "sum sorted > answer", read=["/w/sorted.csv"], write={ANS: "3\n"}),
        cmd(3, "cat raw > /tmp/copy", read=["/w/raw.csv"], write={"/tmp/copy": "1\n2\n"}),
        resources=[ANS]))
    assert r.credit == (1.0, 1.0, 1.0, 0.0)
    assert r.relevant == {0, 1, 2}


def test_reader_that_rewrites_its_input_credits_only_surviving_records():
    data = "/w/data.txt"
    r = credit(episode(
        cmd(0, write={data: "keep\ndrop\n"}),
        cmd(1, "extract and prune", read=[data], write={data: "keep\n", ANS: "x\n"},
            derived={data: data}),
        resources=[ANS]))
    # cmd 1 is relevant (answer) and reads data.txt while writing elsewhere; it overwrote
    # "drop" in place, so only "keep" counts for cmd 0
    assert r.credit == (0.5, 1.0)  # the prune is a line-free edit: cmd 1 owns only "x"


def test_reader_writing_only_the_same_path_does_not_qualify():
    r = credit(episode(cmd(0, write={ANS: "a\n"}),
                       cmd(1, "echo b >> answer", read=[ANS], write={ANS: "a\nb\n"},
                           derived={ANS: ANS}), resources=[ANS]))
    assert r.credit == (1.0, 1.0) and r.n_indirect == (0, 0)


def test_supporting_read_of_a_file_that_feeds_nothing_is_zero():
    r = credit(episode(cmd(0, write={"/w/x": "1\n"}), cmd(1, "cat x", read=["/w/x"], stdout="1\n"),
                       cmd(2, write={ANS: "a\n"}), resources=[ANS]))
    assert r.credit == (0.0, 0.0, 1.0)


def test_supporting_read_sums_distinct_writers_once_at_shortest_distance():
    r = credit(episode(
        cmd(0, "cat in", read=["/w/in"], stdout="alpha_7 beta_9\n"),
        cmd(1, "echo alpha_7 beta_9 > /app/answer.txt", write={ANS: "alpha_7 beta_9\n"}),
        cmd(2, "echo beta_9 > /app/b.txt", write={"/app/b.txt": "beta_9\n"}),
        resources=[ANS, "/app/b.txt"]))
    assert r.credit == (1.0, 1.0, 1.0)  # 0.5·1 + 0.5·1


def test_resource_writers():
    out = "/app/out"
    r = credit(episode(
        cmd(0, "mkdir /app/out", dirs=[out]),
        cmd(1, "mkdir /tmp/junk", dirs=["/tmp/junk"]),
        cmd(2, "echo 42 > /app/out/answer.txt", write={f"{out}/answer.txt": "42\n"}),
        cmd(3, "rm /app/secret.txt", deleted=["/app/secret.txt"]),
        cmd(4, "rm /tmp/x", deleted=["/tmp/x"]),
        resources=[f"{out}/answer.txt", "/app/secret.txt"]))
    assert r.credit == (1.0, 0.0, 1.0, 1.0, 0.0)
    assert r.classes[0] == ("resource-write",) and r.classes[1] == ("no-flow",)


def test_mkdir_of_a_staging_dir_used_by_a_relevant_writer():
    r = credit(episode(
        cmd(0, "mkdir /tmp/work", dirs=["/tmp/work"]),
        cmd(1, write={"/tmp/work/s.txt": "42\n"}),
        cmd(2, "cp", read=["/tmp/work/s.txt"], write={ANS: "42\n"}),
        resources=[ANS]))
    assert r.credit == (1.0, 1.0, 1.0)


def test_chmod_feeds_a_relevant_writer():
    sh = "/app/run.sh"
    r = credit(episode(cmd(0, write={sh: "echo 42\n"}), cmd(1, "chmod +x run.sh", meta=[sh]),
                       cmd(2, "chmod 600 /tmp/y", meta=["/tmp/y"]),
                       cmd(3, "./run.sh > answer", read=[sh], write={ANS: "42\n"}),
                       resources=[ANS]))
    assert r.credit == (1.0, 1.0, 0.0, 1.0)


def test_resource_effect_must_last_unless_switched_off():
    facts = episode(cmd(0, "touch answer", write={ANS: ""}),
                    cmd(1, "echo 42 > answer", write={ANS: "42\n"}),
                    cmd(2, "rm answer2", deleted=["/app/a2"]),
                    cmd(3, "echo again > a2", write={"/app/a2": "x\n"}),
                    resources=[ANS, "/app/a2"])
    assert credit(facts).credit == (0.0, 1.0, 0.0, 1.0)
    assert credit(facts, resource_must_persist=False).credit == (1.0, 1.0, 1.0, 1.0)


def test_resource_units_switch_for_mixed_writers():
    facts = episode(cmd(0, "mkdir /tmp/x && echo 42 > answer", dirs=["/tmp/x"],
                        write={ANS: "42\n"}), resources=[ANS])
    assert credit(facts).credit == (1.0,)
    assert credit(facts, resource_units=True).credit == (0.5,)


def test_writer_support_switch():
    facts = episode(cmd(0, "compute | tee /tmp/log", write={"/tmp/log": "val_xyz\n"},
                        stdout="val_xyz\n"),
                    cmd(1, "echo val_xyz > answer", write={ANS: "val_xyz\n"}), resources=[ANS])
    assert credit(facts).credit == (0.0, 1.0)
    r = credit(facts, writer_support=True)
    assert r.credit == (0.5, 1.0) and r.classes[0] == ("supporting-read",)


def test_diff_rewrites_switch_changes_credit():
    blind = episode(cmd(0, write={ANS: "header\n1\n"}),
                    cmd(1, "python gen.py", write={ANS: "header\n2\n"}), resources=[ANS])
    assert credit(blind).credit == (0.0, 1.0)
    assert credit(blind, diff_rewrites="always").credit == (0.5, 1.0)
    seen = episode(cmd(0, write={ANS: "header\n1\n"}),
                   cmd(1, "python fix.py", read=[ANS], write={ANS: "header\n2\n"}),
                   resources=[ANS])
    assert credit(seen).credit == (0.5, 1.0)
    assert credit(seen, diff_rewrites="never").credit == (0.0, 1.0)
    with pytest.raises(ValueError):
        DepGPOConfig(diff_rewrites="sometimes")


def test_untraced_and_no_resources():
    r = credit(episode(cmd(0, write={ANS: "42\n"}), untraced(1)))
    assert r.credit == (0.0, None) and r.classes == (("no-flow",), ("untraced",))
    assert r.relevant == frozenset()


def test_binary_answer_is_one_record():
    r = credit(episode(cmd(0, write={"/app/out.bin": b"\x00"}),
                       cmd(1, "patch", read=["/app/out.bin"], write={"/app/out.bin": b"\x01"},
                           derived={"/app/out.bin": "/app/out.bin"}),
                       resources=["/app/out.bin"]))
    assert r.credit == (0.0, 1.0)  # last content-changing writer owns the whole file


def test_ancestors():
    assert ancestors("/a/b/c") == ["/a", "/a/b"]
    assert ancestors("/a") == [] and ancestors("/a/b/") == ["/a"]


# ---------------------------------------------------------------- properties
@settings(max_examples=150, deadline=None, database=None)
@given(random_episodes())
def test_credit_invariants(facts):
    a = analyse(facts)
    r = a.credit
    for c, (cr, cl) in enumerate(zip(r.credit, r.classes)):
        if not facts.commands[c].traced:
            assert cr is None and cl == ("untraced",)
            continue
        assert cr is not None and cr >= 0
        if a.graph.effects[c].records:
            assert cr <= 1.0 + 1e-12
            assert r.n_direct[c] <= r.n_records[c] and r.n_indirect[c] <= r.n_records[c]
        assert (cr > 0) == (cl != ("no-flow",))
    if not facts.resources:
        assert all(not cr for cr in r.credit if cr is not None)
