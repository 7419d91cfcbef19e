"""The tracer facts DepGPO's working-directory edges rest on: the shell's cwd at each
segment's markers and the cwds a command resolved relative paths against."""

from __future__ import annotations

from termcredit.tracer import parse_session

TRACE = (
    '10 1.0 chdir("/__termcredit__/ab/s1") = -1 ENOENT (x)\n'
    '10 1.1 chdir("/app/inbox") = 0\n'  # step 1: `cd /app/inbox`
    '10 1.2 chdir("/__termcredit__/ab/e1") = -1 ENOENT (x)\n'
    '10 1.3 chdir("/__termcredit__/ab/s2") = -1 ENOENT (x)\n'
    "10 1.4 clone(child_stack=NULL, flags=0x1200011) = 11\n"  # step 2: `mv a.txt /app/sorted/`
    '11 1.5 renameat2(-100</app/inbox>, "a.txt", -100</app/inbox>, "/app/sorted/a.txt", 0) = 0\n'
    '10 1.6 chdir("/__termcredit__/ab/e2") = -1 ENOENT (x)\n'
    '10 1.7 chdir("/__termcredit__/ab/s3") = -1 ENOENT (x)\n'
    "10 1.8 clone(child_stack=NULL, flags=0x1200011) = 12\n"  # step 3: absolute paths only
    '12 1.9 openat(-100</app/inbox>, "/app/out.txt", 0x241, 0666) = 3</app/out.txt>\n'
    '12 2.0 unlinkat(4</app/inbox>, "b.txt", 0) = 0\n'  # relative to an open dir, not the cwd
    '10 2.1 chdir("/__termcredit__/ab/e3") = -1 ENOENT (x)\n'
    '10 2.2 chdir("/__termcredit__/ab/s4") = -1 ENOENT (x)\n'
    '10 2.3 chdir("sub") = 0\n'  # step 4: `cd sub` (relative: used the cwd)
    '10 2.4 chdir("/__termcredit__/ab/e4") = -1 ENOENT (x)\n'
)


def test_segment_cwds_and_relative_uses() -> None:
    t = parse_session(TRACE)
    c = t.commands
    assert (c[1].cwd_start, c[1].cwd_end, c[1].cwd_used) == (None, "/app/inbox", set())
    assert (c[2].cwd_start, c[2].cwd_end, c[2].cwd_used) == ("/app/inbox", "/app/inbox",
                                                            {"/app/inbox"})
    assert c[3].cwd_used == set()  # absolute paths and a dirfd-relative unlink
    assert (c[4].cwd_start, c[4].cwd_end, c[4].cwd_used) == ("/app/inbox", "/app/inbox/sub",
                                                            {"/app/inbox"})
