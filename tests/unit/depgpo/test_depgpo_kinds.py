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
