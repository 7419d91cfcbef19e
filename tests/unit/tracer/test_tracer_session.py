"""Whole-session parsing: per-SEQ attribution across segments (recorded + synthetic)."""

from __future__ import annotations

from tracer_testutil import NONCE, load, rel, segment

from termcredit.tracer import Kind, parse_session, summarize_segment


def test_background_job_stays_with_the_command_that_started_it() -> None:
    """§5 #30 in the persistent shell: the `&` job writes bgfile while command 2 runs."""
    text = load("c30_background")
    trace = parse_session(text, NONCE)
    assert list(trace.commands) == [1, 2, 3]
    assert rel(trace.summary(1).written) == {"bgfile", "fgfile"}
    assert rel(trace.summary(2).written) == {"nfile"}
    assert rel(trace.summary(3).read) == {"bgfile", "nfile"}
    assert rel(trace.summary(3).written) == {"both"}
    # the bgfile write really is inside segment 2's lines ...
    assert '"bgfile", 0x241' in segment(text, 2)
    # ... so a segment on its own misattributes it; parse_session does not
    assert "bgfile" in rel(summarize_segment(segment(text, 2)).written)
    bg_writer = next(e.pid for e in trace.commands[1].events if e.path.endswith("/bgfile"))
    assert trace.attribution[bg_writer] == 1
    seqs = sorted(trace.attribution.values(), key=str)
    assert seqs == [1, 1, 2, 3]  # subshell + its sleep, sleep 0.5, cat


def test_markers_shell_and_timestamps() -> None:
    trace = parse_session(load("c30_background"))  # nonce adopted from the first marker
    assert trace.nonce == NONCE
    assert trace.shell_pid == trace.processes[0].pid
    assert trace.shell_pid not in trace.attribution
    assert len(trace.markers) == 12  # bash issues each failing cd twice
    for cmd in trace.commands.values():
        assert cmd.start_ts is not None and cmd.end_ts is not None and cmd.start_ts < cmd.end_ts
    # startup reads and the marker redirections' /dev/null opens belong to no command
    assert {e.path for e in trace.unattributed} >= {"/dev/null", "/etc/passwd"}


def test_shell_state_carries_over_and_fake_markers_are_ignored() -> None:
    trace = parse_session(load("x_session"), NONCE)
    assert list(trace.commands) == [1, 2, 3, 4, 5]
    assert rel(trace.summary(1).written) == {"f"}
    # `cd sub` touches nothing but the end marker's own `2>/dev/null`
    assert {e.path for e in trace.commands[2].events} == {"/dev/null"}
    assert not any(v for k, v in trace.summary(2).as_dict().items() if k not in ("environment", "events"))
    assert rel(trace.summary(3).read) == {"sub/f2"}  # cwd of the shell carried from command 2
    assert rel(trace.summary(3).written) == {"sub/g"}
    assert rel(trace.summary(4).written) == {"sub/z"}  # `cd /__termcredit__/deadbeef/s99`
    assert 99 not in trace.commands
    assert rel(trace.summary(5).deleted) == {"f"}


def test_killed_process_mid_syscall() -> None:
    """cat blocks opening a FIFO and is SIGKILLed: `<... openat resumed>) = ?`, and under
    `-e signal=none` strace prints no `+++ killed by +++` line at all."""
    text = load("x_kill")
    assert "+++ killed" not in text and "resumed>) = ?" in text
    trace = parse_session(text, NONCE)
    assert trace.stats.skipped == 0
    s1 = trace.summary(1)
    assert rel(s1.written) == {"p", "out", "k"} and not s1.read
    assert rel(trace.summary(2).written) == {"k2"}
    cat = next(p for p in trace.processes if p.argv and p.argv[0] == "cat")
    assert not cat.exited and trace.attribution[cat.pid] == 1


def test_child_of_background_job_inherits_attribution_synthetic() -> None:
    text = (
        '10 1.0 chdir("/__termcredit__/ab/s1") = -1 ENOENT (x)\n'
        "10 1.1 clone(child_stack=NULL, flags=0x1200000|17) = 11\n"
        '10 1.2 chdir("/__termcredit__/ab/e1") = -1 ENOENT (x)\n'
        '10 1.3 chdir("/__termcredit__/ab/s2") = -1 ENOENT (x)\n'
        "11 1.4 fork( <unfinished ...>\n"
        '12 1.5 openat(-100</w>, "late", 0x241, 0666) = 3</w/late>\n'  # grandchild, before fork result
        "11 1.6 <... fork resumed>) = 12\n"
        '10 1.7 openat(-100</w>, "now", 0x241, 0666) = 3</w/now>\n'
        '10 1.8 chdir("/__termcredit__/ab/e2") = -1 ENOENT (x)\n'
    )
    trace = parse_session(text)
    assert trace.attribution == {11: 1, 12: 1}
    assert rel(trace.summary(1).written) == {"late"}
    assert rel(trace.summary(2).written) == {"now"}
    assert trace.commands[1].pids == [11, 12]


def test_pid_reuse_after_exit_is_a_new_process() -> None:
    text = (
        '10 1.0 chdir("/__termcredit__/ab/s1") = -1 ENOENT (x)\n'
        "10 1.1 clone(child_stack=NULL, flags=0x11) = 11\n"
        "11 1.2 +++ exited with 0 +++\n"
        '10 1.3 chdir("/__termcredit__/ab/e1") = -1 ENOENT (x)\n'
        '10 1.4 chdir("/__termcredit__/ab/s2") = -1 ENOENT (x)\n'
        "10 1.5 clone(child_stack=NULL, flags=0x11) = 11\n"
        '11 1.6 openat(-100</w>, "x", 0x241, 0666) = 3</w/x>\n'
        '10 1.8 chdir("/__termcredit__/ab/e2") = -1 ENOENT (x)\n'
    )
    trace = parse_session(text)
    assert [(p.pid, p.seq) for p in trace.processes if p.pid == 11] == [(11, 1), (11, 2)]
    assert rel(trace.summary(2).written) == {"x"} and not trace.summary(1).written


def test_segment_that_never_closes_and_wrapper_shell() -> None:
    """The shell need not be the root process; a timed-out command has no end marker."""
    text = (
        '1 1.0 execve("/usr/bin/sh", ["sh"], 0x1 /* 1 vars */) = 0\n'
        "1 1.1 clone(child_stack=NULL, flags=0x11) = 2\n"
        '2 1.2 execve("/usr/bin/bash", ["bash"], 0x1 /* 1 vars */) = 0\n'
        '2 1.3 chdir("/__termcredit__/ab/s7") = -1 ENOENT (x)\n'
        '2 1.4 unlinkat(-100</w>, "gone", 0) = 0\n'
    )
    trace = parse_session(text, "ab")
    assert trace.shell_pid == 2
    cmd = trace.commands[7]
    assert cmd.end_ts is None and [e.kind for e in cmd.events] == [Kind.DELETE]
    assert [e.kind for e in trace.unattributed] == [Kind.EXEC, Kind.EXEC]


def test_wrong_nonce_means_no_segments() -> None:
    trace = parse_session(load("c01_echo_new"), nonce="0000")
    assert trace.commands == {} and trace.shell_pid is None
    assert any(e.path == "/w/a" for e in trace.unattributed)


def test_sandbox_protocol_exit_codes_cwd_reports_and_shell_restart() -> None:
    """The shim's real shape: `e<SEQ>.$?` end markers, `cwd<PATH>` reports from the EXIT
    trap, and after `exit` a new strace + bash (new root pid) continuing with the same nonce."""
    text = load("x_shim_restart")
    trace = parse_session(text, NONCE)
    assert trace.stats.skipped == 0
    assert list(trace.commands) == [1, 2, 3, 4, 5]
    assert [trace.commands[i].exit_code for i in (1, 2, 3, 4, 5)] == [0, 1, None, 0, 0]
    assert trace.commands[3].end_ts is None  # `exit 3` killed the shell inside the segment
    assert len(trace.shell_pids) == 2 and trace.shell_pid == trace.shell_pids[1]
    assert rel(trace.summary(1).written) == {"f"}
    assert rel(trace.summary(4).read) == {"f"} and rel(trace.summary(4).written) == {"sub/g"}
    # the background job outlives its shell; its write comes after the last marker
    assert rel(trace.summary(5).written) == {"sub/bg"}
    assert not any(e.path.startswith("/__termcredit__") for e in trace.unattributed)
    assert set(trace.attribution.values()) == {4, 5}


def test_a_commands_process_cannot_take_over_the_shell() -> None:
    text = (
        '10 1.0 chdir("/__termcredit__/ab/s1") = -1 ENOENT (x)\n'
        "10 1.1 clone(child_stack=NULL, flags=0x11) = 11\n"
        '11 1.2 chdir("/__termcredit__/ab/s9") = -1 ENOENT (x)\n'  # knows the nonce: still ignored
        '11 1.3 chdir("/__termcredit__/ab/e1.0") = -1 ENOENT (x)\n'
        '11 1.4 openat(-100</w>, "x", 0x241, 0666) = 3</w/x>\n'
        '10 1.5 chdir("/__termcredit__/ab/e1.0") = -1 ENOENT (x)\n'
    )
    trace = parse_session(text)
    assert list(trace.commands) == [1] and trace.shell_pids == [10]
    assert rel(trace.summary(1).written) == {"x"} and trace.commands[1].exit_code == 0
