"""Which of the verifier's lookups (stat, access, a failed open) count as inspected resources."""

from __future__ import annotations

from termcredit.tasks.resources import verifier_resources

MARK = "/__termcredit__/0123456789abcdef"
TRACE = "\n".join([
    f'5 0.9 chdir("{MARK}/s1") = -1 ENOENT (No such file or directory)',
    '5 0.95 clone(child_stack=NULL, flags=0x1200011, child_tidptr=0x1) = 7',
    '7 1.0 execve("/usr/bin/python3", ["python3", "t.py"], 0x1 /* 3 vars */) = 0',
    '7 1.1 newfstatat(-100</app>, "/app/site/uploads", {st_mode=S_IFDIR|01777, ...}, 0) = 0',
    '7 1.2 stat("/app/data/a.empty", 0x7ffd) = -1 ENOENT (No such file or directory)',
    '7 1.3 stat("/app/conftest.py", 0x7ffd) = -1 ENOENT (No such file or directory)',
    '7 1.4 stat("/app", {st_mode=S_IFDIR|0755, ...}) = 0',
    '7 1.5 openat(-100</app>, "report.txt", 0x80000) = 3</app/report.txt>',
    '7 1.6 access("/tests/test_outputs.py", 4) = 0',
    "7 1.7 +++ exited with 0 +++",
    f'5 1.8 chdir("{MARK}/e1.0.feedc0de") = -1 ENOENT (No such file or directory)',
]) + "\n"


def test_lookups_of_paths_the_agent_changed_are_resources() -> None:
    changed = {"/app/site/uploads", "/app/data/a.empty", "/app/notes.txt"}
    res = verifier_resources(TRACE, agent_written=changed)
    # the chmod-ed dir it stat-ed and the deleted file it found missing count; its own
    # runtime's lookups (/app, a conftest search) and /tests do not
    assert res["cleaned"] == ["/app/data/a.empty", "/app/report.txt", "/app/site/uploads"]
    assert res["statted"] == ["/app", "/app/site/uploads", "/tests/test_outputs.py"]
    assert res["probed"] == ["/app/conftest.py", "/app/data/a.empty"]


def test_lookups_alone_add_nothing_the_agent_did_not_change() -> None:
    assert verifier_resources(TRACE)["cleaned"] == ["/app/report.txt"]
