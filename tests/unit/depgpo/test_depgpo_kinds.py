"""Issue #13: working-directory, absence and metadata dependencies earn credit; the unused
counterpart of each earns none."""

from __future__ import annotations

from depgpo_testutil import cmd, episode

from termcredit.depgpo import analyse


def _cd(i, d, before="/app"):
    c = cmd(i, f"cd {d}")
    c.cwd_before, c.cwd_after = before, d
    return c


def _credit(facts):
    res = analyse(facts)
    return res.credit.credit, res.credit.classes, res


def test_cd_used_by_a_relevant_relative_command_gets_credit():
    mv = cmd(1, "mv a.txt /app/sorted/", read=["/app/inbox/a.txt"],
             write={"/app/sorted/a.txt": "x\n"}, derived={"/app/sorted/a.txt": "/app/inbox/a.txt"},
             deleted=["/app/inbox/a.txt"])
    mv.cwd_before = mv.cwd_after = "/app/inbox"
    mv.cwd_used = {"/app/inbox"}
    credit, classes, res = _credit(episode(_cd(0, "/app/inbox"), mv,
                                           resources=["/app/sorted/a.txt"]))
    assert credit[0] == 1.0 and classes[0] == ("cwd",)
    assert [(k, d["path"]) for _, _, k, d in res.graph.graph.edges(keys=True, data=True)
            if k == "cwd"] == [("cwd", "/app/inbox")]
    assert res.credit.deps[0] == (("cwd", "/app/inbox", 1),)


def test_cd_followed_only_by_absolute_paths_gets_nothing():
    w = cmd(1, "echo x > /app/out.txt", write={"/app/out.txt": "x\n"})
    w.cwd_before = w.cwd_after = "/app/inbox"  # used no relative path
    credit, classes, _ = _credit(episode(_cd(0, "/app/inbox"), w, resources=["/app/out.txt"]))
    assert credit[0] == 0.0 and credit[1] == 1.0


def test_cd_into_the_current_dir_is_no_dependency():
    first, again = _cd(0, "/app/inbox"), _cd(1, "/app/inbox", before="/app/inbox")
    rm = cmd(2, "rm a", deleted=["/app/inbox/a"])
    rm.cwd_before = rm.cwd_after = "/app/inbox"
    rm.cwd_used = {"/app/inbox"}
    credit, _, _ = _credit(episode(first, again, rm, resources=["/app/inbox/a"]))
    assert credit[0] == 1.0 and credit[1] == 0.0 and credit[2] == 1.0


def test_cd_used_only_by_an_irrelevant_command_gets_nothing():
    junk = cmd(1, "echo x > junk", write={"/app/inbox/junk": "x\n"})
    junk.cwd_used = {"/app/inbox"}
    credit, _, _ = _credit(episode(_cd(0, "/app/inbox"), junk, resources=["/app/answer"]))
    assert credit[0] == 0.0


def test_deletion_the_verifier_probed_gets_credit_and_an_unchecked_one_none():
    facts = episode(cmd(0, "find -delete", deleted=["/app/data/empty"]),
                    cmd(1, "rm /app/other", deleted=["/app/other"]),
                    resources=["/app/data/empty"])
    credit, classes, res = _credit(facts)
    assert credit[0] == 1.0 and "absence" in classes[0]
    assert credit[1] == 0.0
    assert res.credit.deps[0] == (("absence", "/app/data/empty", None),)
    assert res.graph.graph.has_edge("cmd:0", "verifier")


def test_entry_removed_from_a_listed_directory_gets_credit():
    facts = episode(cmd(0, "rm dup.jpg", deleted=["/app/photos/dup.jpg"]),
                    cmd(1, "rm /app/other/x", deleted=["/app/other/x"]),
                    resources=["/app/removed.txt"])
    facts.listed = ["/app/photos"]
    credit, classes, _ = _credit(facts)
    assert credit[0] == 1.0 and "absence" in classes[0]
    assert credit[1] == 0.0


def test_deletion_undone_later_gets_nothing():
    facts = episode(cmd(0, "rm /app/f", deleted=["/app/f"]),
                    cmd(1, "echo > /app/f", write={"/app/f": "\n"}), resources=["/app/f"])
    credit, _, _ = _credit(facts)
    assert credit[0] == 0.0


def test_chmod_of_an_inspected_or_listed_dir_gets_credit_and_of_an_unseen_path_none():
    facts = episode(cmd(0, "chmod 1777 /app/site/uploads", meta=["/app/site/uploads"]),
                    cmd(1, "chmod 600 /app/site/conf/tls.key", meta=["/app/site/conf/tls.key"]),
                    cmd(2, "chmod 700 /app/elsewhere", meta=["/app/elsewhere"]),
                    resources=["/app/site/conf/tls.key"])
    facts.listed = ["/app/site/uploads"]
    credit, classes, res = _credit(facts)
    assert credit[0] == 1.0 and "metadata" in classes[0]
    assert credit[1] == 1.0 and "metadata" in classes[1]
    assert credit[2] == 0.0
    kinds = {k for _, _, k in res.graph.graph.edges(data="kind")}
    assert "metadata" in kinds


def _sets(c, **names):
    c.shell_set = dict(names)
    return c


def test_variable_set_then_expanded_by_a_relevant_command_gets_credit():
    # lost=$(git reflog | …) reads the reflog; `git merge "$lost"` writes what the tests read
    setter = _sets(cmd(0, "lost=$(git reflog | head -n 1)", read=["/app/.git/logs/HEAD"],
                       stdout=""), lost="var:aa")
    noise = _sets(cmd(1, "n=$(wc -l < /app/notes)", read=["/app/notes"]), n="var:bb")
    merge = cmd(2, 'git merge "$lost"', write={"/app/f.txt": "recovered\n"})
    facts = episode(cmd(-1, "echo 1 > /app/.git/logs/HEAD",
                        write={"/app/.git/logs/HEAD": "1\n"}),
                    setter, noise, merge, resources=["/app/f.txt"])
    credit, classes, res = _credit(facts)
    # the variable's setter is credited, and so is the writer of what it computed it from
    assert credit == (1.0, 1.0, 0.0, 1.0)
    assert classes[1] == ("shellvar",) and classes[0] == ("indirect-write",)
    assert res.credit.deps[1] == (("shellvar", "lost", 3),)
    assert [(k, d["name"]) for _, _, k, d in res.graph.graph.edges(keys=True, data=True)
            if d["kind"] == "shellvar"] == [("shellvar:lost", "lost")]


def test_unused_variable_and_one_only_an_irrelevant_command_uses_get_nothing():
    setter = _sets(cmd(0, "x=5; y=6"), x="var:01", y="var:02")
    junk = cmd(1, "echo $y > /app/junk", write={"/app/junk": "6\n"})
    answer = cmd(2, "echo 42 > /app/answer", write={"/app/answer": "42\n"})
    credit, _, _ = _credit(episode(setter, junk, answer, resources=["/app/answer"]))
    assert credit == (0.0, 0.0, 1.0)


def test_export_of_an_unchanged_value_keeps_the_first_setter_and_a_new_value_replaces_it():
    first = _sets(cmd(0, "tok=abc"), tok="var:d1")
    export = _sets(cmd(1, "export tok"), tok="export:d1")  # same value: both stand behind it
    use = cmd(2, 'echo "$tok" > /app/a', write={"/app/a": "abc\n"})
    credit, _, _ = _credit(episode(first, export, use, resources=["/app/a"]))
    assert credit == (1.0, 1.0, 1.0)
    again = _sets(cmd(2, "tok=xyz"), tok="var:d2")  # a new value: the earlier setters are moot
    use2 = cmd(3, 'echo "$tok" > /app/a', write={"/app/a": "xyz\n"})
    credit, _, _ = _credit(episode(first, export, again, use2, resources=["/app/a"]))
    assert credit == (0.0, 0.0, 1.0, 1.0)


def test_function_call_and_unset_and_shell_restart():
    define = _sets(cmd(0, "mk() { echo ok > /app/a; }"), **{"fn:mk": "function:f1"})
    call = cmd(1, "mk", write={"/app/a": "ok\n"})
    credit, classes, _ = _credit(episode(define, call, resources=["/app/a"]))
    assert credit == (1.0, 1.0) and classes[0] == ("shellvar",)
    # a name that was unset, or lost when the shell ended, links to nothing
    x = _sets(cmd(0, "x=1"), x="var:01")
    gone = _sets(cmd(1, "unset x"), x="unset:")
    use = cmd(2, "echo $x > /app/a", write={"/app/a": "\n"})
    assert _credit(episode(x, gone, use, resources=["/app/a"]))[0] == (0.0, 0.0, 1.0)
    restart = cmd(1, "exit")
    restart.shell_reset = True
    assert _credit(episode(x, restart, use, resources=["/app/a"]))[0] == (0.0, 0.0, 1.0)


def test_quoted_names_are_not_uses_and_options_link_nothing():
    setter = _sets(cmd(0, "x=1; shopt -s nullglob"), x="var:01",
                   **{"-o:nullglob": "option:-s"})
    use = cmd(1, "echo '$x' > /app/a; awk '{print $x}' f >> /app/a",
              write={"/app/a": "$x\n"})
    assert _credit(episode(setter, use, resources=["/app/a"]))[0] == (0.0, 1.0)
