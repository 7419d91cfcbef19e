"""A sandbox traced end to end by the shared host eBPF tracer (#33): real Docker, real bpftrace.

The shim starts each session's nsinit without strace and paused; the host registers it with
its one tracer (started once per test process: tens of seconds), and each step's lines come
from the host's stream, cut at the step's end marker. The same commands run in a sandbox
under strace, and each step's accesses must agree. Attacks from inside (a forged end marker,
signals to the namespace init, a registration of its own, a detached job) must change
nothing or be flagged. Skipped with the reason where eBPF is unavailable.
"""

from __future__ import annotations

import pytest

from termcredit.records import CommandRecord
from termcredit.tracer import parse_session
from termcredit.tracer.ebpf import available
from termcredit.tracer.ebpf_shared import REGISTER

WHY = available()
pytestmark = [pytest.mark.docker,
              pytest.mark.skipif(WHY is not None, reason=f"eBPF backend unavailable: {WHY}")]

STEPS = [
    "mkdir -p /work && cd /work && echo a > f",
    "cat f > g; rm f; false",
    "(sleep 0.3; echo bg > h) & wait",
    "python3 -c \"open('/work/p', 'w').write(open('/work/g').read())\"",
    "cp p q && mv q r && ls /work >/dev/null",
]
SETS = ("read", "written", "deleted")


def _summaries(sb, records: list[CommandRecord]) -> list[dict[str, set[str]]]:
    tokens = {r.seq: r.end_token for r in records}
    parsed = parse_session("".join(sb.shell.session_trace), sb.shell.nonce, tokens=tokens)
    assert not parsed.flagged, parsed.integrity
    return [{k: getattr(parsed.summary(r.seq), k) for k in SETS} for r in records]


def test_each_step_reads_and_writes_as_under_strace(sandbox):
    runs = {}
    for tracer in ("strace", "ebpf"):
        sb = sandbox(tracer=tracer)
        records = [sb.run(cmd) for cmd in STEPS]
        runs[tracer] = (records, _summaries(sb, records))
    (s_rec, s_sum), (e_rec, e_sum) = runs["strace"], runs["ebpf"]
    assert [(r.exit_code, r.stdout, r.integrity) for r in e_rec] == \
        [(r.exit_code, r.stdout, r.integrity) for r in s_rec]
    assert [r.exit_code for r in e_rec] == [0, 1, 0, 0, 0]
    assert e_sum == s_sum
    # by hand: the second step read f, wrote g, removed f
    assert e_sum[1] == {"read": {"/work/f"}, "written": {"/work/g"}, "deleted": {"/work/f"}}
    assert e_sum[2]["written"] == {"/work/h"}  # the background job's write is its step's
    assert e_sum[4] == {"read": {"/work/p"}, "written": {"/work/r"}, "deleted": set()}


def test_a_forged_end_marker_is_flagged_and_the_step_ends_at_its_own(sandbox):
    sb = sandbox(tracer="ebpf")
    sb.run("true")
    mark = sb.shell.marker_dir
    r = sb.run(f"cd {mark}/e2.0.0123456789abcdef 2>/dev/null; echo after > /tmp/after; "
               "echo done")
    assert r.stdout == "done\n" and r.exit_code == 0
    assert "forged end marker for step 2" in r.integrity
    assert '"/tmp/after"' in r.trace  # what ran after the forgery is still this step's
    assert sb.run("cat /tmp/after").integrity == []


def test_the_agent_cannot_see_signal_or_join_the_tracer(sandbox):
    sb = sandbox(tracer="ebpf")
    r = sb.run("ps -e -o comm= | grep -c bpftrace; kill -9 1 2>/dev/null; kill -STOP 1; "
               "echo alive")
    assert r.stdout == "0\nalive\n"  # the tracer is the host's; the namespace init ignores
    # a registration from inside: the key is unknown and the PID namespace not the host's
    code = ("import ctypes, os; l = ctypes.CDLL(None, use_errno=True); "
            f"print(l.prctl({REGISTER}, os.getpid(), 2, 1, 0), ctypes.get_errno())")
    assert sb.run(f'python3 -c "{code}"').stdout == "-1 22\n"
    # still traced, step by step, after all that
    r = sb.run("echo x > /tmp/still")
    assert '"/tmp/still"' in r.trace and r.integrity == []


def test_a_detached_job_stays_traced_and_exit_restarts_the_shell(sandbox):
    sb = sandbox(tracer="ebpf")
    sb.run("setsid sh -c 'sleep 0.5; echo x > /tmp/late' >/dev/null 2>&1 &")
    r = sb.run("sleep 1.5; cat /tmp/late")
    assert r.stdout == "x\n"
    assert '"/tmp/late", 0x241' in r.trace  # the detached job's write, in the step it fell in
    r = sb.run("cd /tmp; exit 3")
    assert r.shell_restarted and r.exit_code == 3
    r = sb.run("echo again > /tmp/again; echo ok")
    assert r.stdout == "ok\n" and '"/tmp/again"' in r.trace and r.integrity == []


def test_a_timeout_ends_the_step_and_the_session_goes_on(sandbox):
    sb = sandbox(tracer="ebpf")
    r = sb.run("sleep 60; echo never", timeout=1.5)
    assert r.timed_out and r.exit_code == 137 and r.stdout == ""
    assert f"{sb.shell.marker_dir}/e{r.seq}.137." in r.trace
    assert sb.run("echo fine").stdout == "fine\n"


def test_the_agent_may_ptrace_its_own_processes_but_not_the_namespace_init(sandbox):
    sb = sandbox(tracer="ebpf")
    r = sb.run("strace -f -e trace=openat -o /tmp/s.txt cat /etc/hostname >/dev/null; "
               "grep -c '\"/etc/hostname\"' /tmp/s.txt")
    assert (r.exit_code, r.stdout) == (0, "1\n")
    assert 'openat(-100</>, "/etc/hostname"' in r.trace  # the agent's tracee: the host's too
    # no CAP_SYS_PTRACE is given: ptrace is the kernel's same-credentials rule, so the
    # namespace init (which keeps the container's capabilities) is out of reach
    caps = sb.run("grep CapEff /proc/self/status").stdout.split()[1]
    assert int(caps, 16) & (1 << 19) == 0
    r = sb.run("strace -p 1 -o /dev/null; echo rc=$?")
    assert "rc=1" in r.stdout and "Operation not permitted" in r.stderr


def test_a_step_that_drops_to_another_uid_then_writes_has_its_write_traced(sandbox):
    sb = sandbox(tracer="ebpf")
    first = sb.run("mkdir -p /work && chmod 777 /work")
    r = sb.run("python3 -c \"import os; os.setgid(65534); os.setuid(65534); "
               "open('/work/nobody.txt', 'w').write('x')\"; stat -c %U /work/nobody.txt")
    assert r.stdout == "nobody\n"
    assert _summaries(sb, [first, r])[1]["written"] == {"/work/nobody.txt"}


def test_a_fake_state_report_does_not_end_the_step_early(sandbox):
    # under eBPF the shim ends a step at the shell's report, framed by the step's token: text
    # the agent writes to the report's pipe (reopened through bash's /proc fds) without it
    # ends nothing, and what the command does after still belongs to its step
    sb = sandbox(tracer="ebpf")
    fake = "".join(f"{t}0123456789abcdef\\n" for t in "VFOAZ")
    r = sb.run(f"for f in /proc/$$/fd/*; do [ \"${{f##*/}}\" -ge 3 ] && "
               f"printf '{fake}' > \"$f\" 2>/dev/null; done; sleep 0.5; "
               "echo after > /tmp/after; echo done")
    assert r.stdout.endswith("done\n") and r.exit_code == 0
    assert '"/tmp/after"' in r.trace
    assert sb.run("cat /tmp/after").stdout == "after\n"


def test_a_shell_that_exits_restarts_where_it_stood(sandbox):
    """`cd sub; exit 3`: the next shell starts in sub under either backend (under eBPF the
    shim cannot see the EXIT trap's report: the host reads it and has the shell restarted)."""
    for tracer in ("strace", "ebpf"):
        sb = sandbox(tracer=tracer)
        sb.run("mkdir -p '/work/s b' && cd /work && echo a > f")
        r = sb.run("cd 's b'; exit 3")
        assert (r.exit_code, r.shell_restarted, r.cwd) == (3, True, None), tracer
        r = sb.run("pwd; cat ../f > g")
        assert (r.stdout, r.exit_code, r.integrity) == ("/work/s b\n", 0, []), tracer
        assert '"/work/s b/g"' in r.trace or "s b/g" in r.trace


def test_a_write_through_a_link_is_the_real_files_under_both_backends(sandbox):
    """strace names an fd by the kernel's path; the eBPF backend resolves the program's path
    through the sandbox's own filesystem (an absolute link lands in the container's tree)."""
    steps = ["mkdir -p /work/real /etc/conf.d && ln -s /work/real /work/l && "
             "ln -s /etc/conf.d /work/c",
             "cd /work/l && echo x > f && echo y > /work/c/app.conf",
             "cat /work/real/f ../real/f /etc/conf.d/app.conf > /work/out"]
    got = {}
    for tracer in ("strace", "ebpf"):
        sb = sandbox(tracer=tracer)
        records = [sb.run(cmd) for cmd in steps]
        got[tracer] = _summaries(sb, records)
    assert got["ebpf"] == got["strace"]
    # by hand: the writes are the real files', so the third step's reads meet them
    assert got["ebpf"][1]["written"] == {"/work/real/f", "/etc/conf.d/app.conf"}
    assert got["ebpf"][2]["read"] == {"/work/real/f", "/etc/conf.d/app.conf"}
