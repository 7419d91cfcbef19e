"""Line-level ownership: version chains, records, resource writes."""

from __future__ import annotations

from depgpo_testutil import cmd
from hypothesis import given, settings
from hypothesis import strategies as st

from termcredit.depgpo.ownership import (
    WHOLE_FILE,
    LineRecord,
    ResourceWrite,
    inherit,
    split_lines,
    track_ownership,
)

SETTINGS = settings(max_examples=200, deadline=None, database=None)
A = "/app/a.txt"


def owners(t, path):
    v = t.current[path]
    return [r.writer for r in v.records]


def test_fresh_write_owns_every_line():
    t = track_ownership([cmd(0, write={A: "x\ny\n"})])
    assert t.records_by_cmd[0] == [LineRecord(0, A, 1), LineRecord(0, A, 2)]
    assert t.final_ownership() == {A: {LineRecord(0, A, 1): 0, LineRecord(0, A, 2): 0}}
    assert t.current[A].v == 1 and t.current[A].lines == ("x", "y")


def test_noop_write_makes_no_version_and_no_records():
    t = track_ownership([cmd(0, write={A: "x\n"}), cmd(1, "echo x > a", write={A: "x\n"})])
    e = t.effects[1]
    assert e.records == [] and e.versions == {} and e.noop == [A] and not e.is_writer
    assert t.current[A].v == 1 and 1 not in t.records_by_cmd


def test_touch_existing_file_is_meta_only():
    t = track_ownership([cmd(0, write={A: "x\n"}),
                         cmd(1, "touch a", read=[A], write={A: "x\n"}, meta=[A])])
    assert t.effects[1].resources == [ResourceWrite(A, "meta")]
    assert t.effects[1].records == [] and t.current[A].v == 1


def test_append_keeps_old_owners():
    t = track_ownership([cmd(0, write={A: "x\ny\n"}),
                         cmd(1, "echo z >> a", read=[A], write={A: "x\ny\nz\n"}, derived={A: A})])
    assert owners(t, A) == [0, 0, 1]
    assert t.current[A].how == "append" and t.current[A].source.v == 1
    assert t.records_by_cmd[1] == [LineRecord(1, A, 3)]


def test_in_place_edit_replaces_only_changed_lines():
    t = track_ownership([
        cmd(0, write={A: "a\nb\nc\nd\n"}),
        cmd(1, "sed -i s/b/B/ a", read=[A], write={A: "a\nB\nc\nd\n"}, derived={A: A}),
        cmd(2, "sed -i 1i0 a", read=[A], write={A: "0\na\nB\nc\nd\n"}, derived={A: A})])
    assert owners(t, A) == [2, 0, 1, 0, 0]
    assert t.current[A].how == "in-place"
    # records keep their birth line numbers when later lines shift
    assert t.current[A].records[2] == LineRecord(1, A, 2)


def test_rewrite_from_scratch_diffs_only_what_it_read_by_default():
    blind = [cmd(0, write={A: "keep\nold\n"}), cmd(1, "printf > a", write={A: "keep\nnew\n"})]
    seen = [cmd(0, write={A: "keep\nold\n"}),
            cmd(1, "sort -o a a", read=[A], write={A: "keep\nnew\n"})]
    assert owners(track_ownership(blind), A) == [1, 1]  # repeating a line by chance is not reuse
    assert owners(track_ownership(seen), A) == [0, 1]  # it read the old version: kept lines stay
    assert owners(track_ownership(blind, diff_rewrites="always"), A) == [0, 1]
    assert owners(track_ownership(seen, diff_rewrites="never"), A) == [1, 1]
    assert owners(track_ownership(blind, diff_rewrites=True), A) == [0, 1]  # bools: always/never


def test_bad_rewrite_mode():
    import pytest

    with pytest.raises(ValueError):
        track_ownership([], diff_rewrites="sometimes")


def test_rename_moves_lines_with_their_owners():
    tmp = "/tmp/w.txt"
    t = track_ownership([cmd(0, write={tmp: "42\n"}),
                         cmd(1, "mv /tmp/w.txt /app/a.txt", read=[tmp], write={A: "42\n"},
                   derived={A: tmp}, deleted=[tmp])])
    assert t.final_ownership() == {A: {LineRecord(0, tmp, 1): 0}}
    assert t.current[tmp].kind == "deleted" and t.current[tmp].how == "tombstone"
    assert t.current[A].how == "rename" and t.current[A].source.path == tmp
    assert t.effects[1].records == []
    assert ResourceWrite(A, "rename") in t.effects[1].resources
    assert ResourceWrite(tmp, "delete") in t.effects[1].resources


def test_rename_and_edit_in_one_command():
    tmp = "/tmp/w.txt"
    t = track_ownership([cmd(0, write={tmp: "a\nb\n"}),
                         cmd(1, "mv && echo c >>", read=[tmp], write={A: "a\nb\nc\n"},
                   derived={A: tmp}, deleted=[tmp])])
    assert owners(t, A) == [0, 0, 1]


def test_hard_link_keeps_the_source():
    t = track_ownership([
        cmd(0, write={A: "x\n"}),
        cmd(1, "ln a b", read=[A], write={"/app/b": "x\n"}, derived={"/app/b": A})])
    assert owners(t, "/app/b") == [0]
    assert t.current["/app/b"].how == "link" and t.current[A].live


def test_pre_episode_file_unknown_text_writer_owns_all():
    t = track_ownership([cmd(0, "echo z >> log", read=["/app/log"], write={"/app/log": "old\nz\n"},
                   derived={"/app/log": "/app/log"})])
    chain = t.history["/app/log"]
    assert [v.v for v in chain] == [0, 1] and chain[0].writer is None
    assert owners(t, "/app/log") == [0, 0]


def test_binary_is_one_whole_file_record():
    bin_ = "/app/model.bin"
    t = track_ownership([
        cmd(0, write={bin_: b"\x00\x01"}),
        cmd(1, "patch", read=[bin_], write={bin_: b"\x00\x02"}, derived={bin_: bin_}),
        cmd(2, "to text", write={bin_: "now text\n"})])
    assert t.records_by_cmd[0] == [LineRecord(0, bin_, WHOLE_FILE)]
    assert t.history[bin_][1].records == (LineRecord(1, bin_, WHOLE_FILE),)
    assert owners(t, bin_) == [2]  # unknown previous text: the writer owns all


def test_delete_ends_the_chain():
    t = track_ownership([cmd(0, write={A: "x\n"}), cmd(1, "rm a", deleted=[A]),
                         cmd(2, write={A: "x\n"})])
    assert [(v.v, v.kind) for v in t.history[A]] == [(1, "content"), (2, "deleted"), (3, "content")]
    assert owners(t, A) == [2]  # same text, but a new chain: no diff against a tombstone
    assert t.effects[1].resources == [ResourceWrite(A, "delete")]


def test_delete_of_pre_episode_path_gets_v0_then_tombstone():
    t = track_ownership([cmd(0, "rm /app/old", deleted=["/app/old"])])
    assert [(v.v, v.kind) for v in t.history["/app/old"]] == [(0, "content"), (1, "deleted")]


def test_ownership_at_any_time():
    t = track_ownership([cmd(0, write={A: "a\n"}), cmd(1, "cat a", read=[A]),
                         cmd(2, write={A: "b\n"}), cmd(3, "rm", deleted=[A])])
    assert t.ownership_at(A, 0) == {}
    assert t.ownership_at(A, 1) == {LineRecord(0, A, 1): 0}
    assert t.ownership_at(A, 2) == {LineRecord(0, A, 1): 0}
    assert t.ownership_at(A, 3) == {LineRecord(2, A, 1): 2}
    assert t.ownership_at(A, 4) == {}
    assert t.effects[1].reads[0].version is t.history[A][0]


def test_resource_writes_and_their_owners():
    d, link_, sh = "/app/out", "/app/latest", "/app/run.sh"
    t = track_ownership([cmd(0, "mkdir", dirs=[d]), cmd(1, "ln -s", symlinks={link_: "out"}),
                         cmd(2, write={sh: "echo 1\n"}), cmd(3, "chmod +x", meta=[sh]),
                         cmd(4, "rewrite", write={sh: "echo 2\n"})])
    assert t.effects[0].resources == [ResourceWrite(d, "dir")]
    assert t.effects[1].resources == [ResourceWrite(link_, "symlink")]
    assert t.current[d].kind == "dir" and t.current[link_].kind == "symlink"
    assert t.res_owners[d] == {0: "dir"}
    assert t.res_owners[sh] == {3: "meta"}  # the mode survives a rewrite


def test_line_free_edit_is_a_resource_write_that_a_rewrite_erases():
    t = track_ownership([cmd(0, write={A: "a\ndebug\n"}),
                         cmd(1, "sed -i /debug/d a", read=[A], write={A: "a\n"}, derived={A: A})])
    assert t.effects[1].records == [] and t.effects[1].resources == [ResourceWrite(A, "edit")]
    assert t.res_owners[A] == {1: "edit"}
    t2 = track_ownership([cmd(0, write={A: "a\ndebug\n"}),
                          cmd(1, "sed", read=[A], write={A: "a\n"}, derived={A: A}),
                          cmd(2, "echo > a", write={A: "z\n"})])
    assert t2.res_owners[A] == {}


def test_written_path_missing_after_is_a_delete():
    c = cmd(1, "weird", write={A: "x\n"})
    c.after[A].kind = "missing"
    t = track_ownership([cmd(0, write={A: "y\n"}), c])
    assert t.current[A].kind == "deleted"


def test_untraced_commands_do_nothing():
    c = cmd(0, write={A: "x\n"}, traced=False)
    t = track_ownership([c])
    assert t.current == {} and t.effects[0].records == []


def test_inherit_and_split_lines():
    assert split_lines("a\nb\n") == ("a", "b") and split_lines("a\nb") == ("a", "b")
    assert split_lines("") == () and split_lines("\n") == ("",)
    old = (LineRecord(0, "p", 1), LineRecord(0, "p", 2), LineRecord(0, "p", 3))
    assert inherit(("a", "b", "c"), old, ("a", "c"), 1, "p") == (old[0], old[2])
    assert inherit(("a", "b", "c"), old, ("x", "a", "b", "c", "y"), 1, "p") == (
        LineRecord(1, "p", 1), *old, LineRecord(1, "p", 5))


# ---------------------------------------------------------------- properties
LINES = st.lists(st.sampled_from(["a", "b", "c", "d", ""]), max_size=8)
PATHS = ["/w/p", "/w/q"]


@st.composite
def episodes(draw):
    cmds, exists = [], set()
    for i in range(draw(st.integers(1, 12))):
        p = draw(st.sampled_from(PATHS))
        op = draw(st.sampled_from(["write", "append", "edit", "rename", "delete", "binary"]))
        text = "".join(x + "\n" for x in draw(LINES))
        if op == "delete" and p in exists:
            cmds.append(cmd(i, deleted=[p]))
            exists.discard(p)
        elif op == "rename" and p in exists:
            q = [x for x in PATHS if x != p][0]
            cmds.append(cmd(i, read=[p], write={q: text}, derived={q: p}, deleted=[p]))
            exists.discard(p)
            exists.add(q)
        elif op in ("append", "edit") and p in exists:
            cmds.append(cmd(i, read=[p], write={p: text}, derived={p: p}))
        elif op == "binary":
            cmds.append(cmd(i, write={p: text.encode() + b"\x00"}))
            exists.add(p)
        else:
            cmds.append(cmd(i, write={p: text}))
            exists.add(p)
    return cmds


@SETTINGS
@given(episodes(), st.sampled_from(["if-read", "always", "never"]))
def test_records_carry_their_birth_text(cmds, diff_rewrites):
    t = track_ownership(cmds, diff_rewrites=diff_rewrites)
    born: dict[LineRecord, str] = {}
    for c, e in enumerate(t.effects):
        for r in e.records:
            assert r.writer == c
            v = e.versions[r.path]
            born[r] = "<bin>" if r.line == WHOLE_FILE else v.lines[r.line - 1]
    for chain in t.history.values():
        for v in chain:
            if v.kind != "content" or v.writer is None:
                continue
            if v.lines is None:
                assert len(v.records) == 1 and v.records[0].line == WHOLE_FILE
                continue
            assert len(v.records) == len(v.lines)
            for line, r in zip(v.lines, v.records):
                assert born[r] == line  # ownership follows content, never a stale line
    for path, own in t.final_ownership().items():
        assert all(r in t.records_by_cmd[w] for r, w in own.items())
