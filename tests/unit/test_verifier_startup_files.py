"""Files the verifier's own interpreter reads at start-up (readline's /etc/inputrc and terminal
database, OpenSSL's configuration) are the environment, not resources the tests inspected."""

from __future__ import annotations

from termcredit.tasks.resources import verifier_resources

MARK = "/__termcredit__/0123456789abcdef"
TRACE = "\n".join([
    f'5 0.9 chdir("{MARK}/s1") = -1 ENOENT (No such file or directory)',
    '5 0.95 clone(child_stack=NULL, flags=0x1200011, child_tidptr=0x1) = 7',
    '7 1.0 execve("/usr/bin/python3", ["python3", "-m", "pytest"], 0x1 /* 3 vars */) = 0',
    '7 1.1 openat(-100</app>, "/etc/inputrc", 0x80000) = 3</etc/inputrc>',
    '7 1.2 openat(-100</app>, "/etc/terminfo/d/dumb", 0x80000) = 3</etc/terminfo/d/dumb>',
    '7 1.3 openat(-100</app>, "/usr/lib/ssl/openssl.cnf", 0x80000) = 3</etc/ssl/openssl.cnf>',
    '7 1.4 openat(-100</app>, "/etc/ssl/openssl.cnf", 0x80000) = 3</etc/ssl/openssl.cnf>',
    '7 1.5 openat(-100</app>, "report.txt", 0x80000) = 3</app/report.txt>',
    "7 1.7 +++ exited with 0 +++",
    f'5 1.8 chdir("{MARK}/e1.0.feedc0de") = -1 ENOENT (No such file or directory)',
]) + "\n"


def test_interpreter_start_up_files_are_not_inspected_resources() -> None:
    res = verifier_resources(TRACE)
    assert res["cleaned"] == ["/app/report.txt"]
    # still read, as the raw list says; only the set credit starts from leaves them out
    assert {"/etc/inputrc", "/etc/ssl/openssl.cnf"} <= set(res["raw_read"])
