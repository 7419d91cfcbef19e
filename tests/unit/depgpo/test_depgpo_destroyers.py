"""``depgpo.destroyers``: which commands destroyed what a later command needed, on hand-built
facts (the shapes the tracer recorded for the horizon tier's decoys: benchmarks/decoy_blame.py).
Every expected answer is read off the episode by hand in the test's comment."""

from __future__ import annotations

from depgpo_testutil import cmd, episode

from termcredit.depgpo import dependencies
from termcredit.depgpo.destroyers import destroyers
from termcredit.depgpo.facts import CommandFacts, EpisodeFacts


def probing(c: CommandFacts, *paths: str) -> CommandFacts:
    """``c`` that also looked ``paths`` up and found them missing."""
    c.accesses.probed |= set(paths)
    return c


def shell(c: CommandFacts, **changed: str) -> CommandFacts:
    c.shell_set = dict(changed)
    return c


def found(facts: EpisodeFacts) -> dict[int, set[str]]:
    return destroyers(dependencies(facts))


def test_a_deletion_a_later_step_found_missing() -> None:
    # 0 writes batch, 1 deletes it, 2's `cat batch >> ledger` finds it missing: 1 destroyed it
    ep = episode(cmd(0, "cat in > /tmp/batch", read=["/app/in"], write={"/tmp/batch": "x\n"}),
                 cmd(1, "rm -f /tmp/batch", deleted=["/tmp/batch"]),
                 probing(cmd(2, "cat /tmp/batch >> ledger", exit_code=1), "/tmp/batch"))
    assert found(ep) == {1: {"/tmp/batch"}}


def test_a_deleted_directory_a_later_step_looked_under() -> None:
    # `rm -rf archive` then `mv x archive/p/` probes archive/p/x: under the deleted archive/p
    ep = episode(cmd(0, "mkdir -p archive/p", dirs=["/app/archive", "/app/archive/p"]),
                 cmd(1, "rm -rf archive", deleted=["/app/archive", "/app/archive/p"]),
                 probing(cmd(2, "mv x archive/p/", exit_code=1), "/app/archive/p/x"))
    assert found(ep) == {1: {"/app/archive", "/app/archive/p"}}


def test_a_deletion_nobody_needed_later_or_repaired_first_is_no_destroyer() -> None:
    # 1 moves `a` away and nothing looks for it (the usual clean-up); 3 deletes `b`, 4 writes
    # it again, 5's probe meets 4's version, not 3's deletion: no destroyer
    ep = episode(cmd(0, "sort a > b", read=["/app/a"], write={"/app/b": "1\n"}),
                 cmd(1, "mv a done/a", read=["/app/a"], write={"/app/done/a": "1\n"},
                     derived={"/app/done/a": "/app/a"}, deleted=["/app/a"]),
                 cmd(2, "cat b > c", read=["/app/b"], write={"/app/c": "1\n"}),
                 cmd(3, "rm b", deleted=["/app/b"]),
                 cmd(4, "echo 2 > b", write={"/app/b": "2\n"}),
                 cmd(5, "cat b", read=["/app/b"]))
    assert found(ep) == {}


def test_an_overwrite_of_an_unused_version_that_a_later_step_read() -> None:
    # 1 writes all (a+b); 2 overwrites it with a alone before anything used it; 3 reads 2's
    # version: 2 destroyed it. 3's own write of ok is new: nothing replaced
    ep = episode(cmd(0, "sort -u a b > /tmp/all", read=["/app/a", "/app/b"],
                     write={"/tmp/all": "a\nb\n"}),
                 cmd(1, "head -n 1 /tmp/all", read=["/tmp/all"], stdout="a\n"),  # looks only
                 cmd(2, "sort -u a > /tmp/all", read=["/app/a"], write={"/tmp/all": "a\n"}),
                 cmd(3, "comm -23 /tmp/all ban > ok", read=["/tmp/all", "/app/ban"],
                     write={"/app/ok": "a\n"}))
    assert found(ep) == {2: {"/tmp/all"}}


def test_an_update_of_a_used_version_or_an_append_is_no_destroyer() -> None:
    # 1 backs conf up (uses version 0's read), 2 replaces it, 3 reads 2's: an update, not a
    # loss. 4 appends to log after 0 wrote it: continues the old content
    ep = episode(cmd(0, "cat conf > log", read=["/app/conf"], write={"/app/log": "c\n"}),
                 cmd(1, "cp conf bak", read=["/app/conf"], write={"/app/bak": "c\n"}),
                 cmd(2, "cp new conf", read=["/app/new"], write={"/app/conf": "n\n"}),
                 cmd(3, "sha256sum conf > sum", read=["/app/conf"], write={"/app/sum": "s\n"}),
                 cmd(4, "echo d >> log", read=["/app/log"], write={"/app/log": "c\nd\n"},
                     derived={"/app/log": "/app/log"}),
                 cmd(5, "cat log", read=["/app/log"]))
    assert found(ep) == {}


def test_an_unset_name_a_later_step_used() -> None:
    # 0 sets PORT and HOST, 1 unsets PORT, 2 expands $PORT (blamed on 1), 3 expands $HOST
    # (still set); 4 sets PORT again and 5's use is fine
    ep = episode(shell(cmd(0, ". env"), PORT="var:1", HOST="var:2"),
                 shell(cmd(1, "unset PORT"), PORT="unset:"),
                 cmd(2, 'sed "s/@P@/$PORT/" t > a'),
                 cmd(3, 'sed "s/@H@/$HOST/" t > b'),
                 shell(cmd(4, "PORT=80"), PORT="var:3"),
                 cmd(5, "echo $PORT"))
    assert found(ep) == {1: {"shell:PORT"}}


def test_an_ended_shell_destroys_the_names_set_before() -> None:
    # 0 sets X; 1 ends the shell; 2 uses $X: 1 lost it
    ended = cmd(1, "exit")
    ended.shell_reset = True
    ep = episode(shell(cmd(0, "X=1"), X="var:1"), ended, cmd(2, "echo $X"))
    assert found(ep) == {1: {"shell:X"}}


def test_two_destroyers() -> None:
    # 1 deletes ban (2 probes it), 3 overwrites 0's unused all (4 reads it)
    ep = episode(cmd(0, "sort a > all", read=["/app/a"], write={"/app/all": "a\n"}),
                 cmd(1, "rm ban", deleted=["/app/ban"]),
                 probing(cmd(2, "cat ban", exit_code=1), "/app/ban"),
                 cmd(3, "echo z > all", write={"/app/all": "z\n"}),
                 cmd(4, "cat all > out", read=["/app/all"], write={"/app/out": "z\n"}))
    assert found(ep) == {1: {"/app/ban"}, 3: {"/app/all"}}
