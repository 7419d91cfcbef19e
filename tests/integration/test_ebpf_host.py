"""The shared host tracer against the real kernel (#33): one bpftrace program, two sessions in
two PID namespaces traced at once, each gets only its own lines. Skipped where eBPF is not."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from termcredit.tracer.ebpf import available
from termcredit.tracer.ebpf_host import HostTracer, SessionTrace
from termcredit.tracer.ebpf_shared import REGISTER, tag_of
from termcredit.tracer.session import summarize_segment

WHY = available()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"eBPF backend unavailable: {WHY}")


def _session(work: Path, name: str) -> subprocess.Popen[bytes]:
    """A tree waiting on stdin, then in a PID namespace of its own: writes ``name``, copies it
    to ``name.copy`` and removes ``name``, and stats ``name.copy`` (a verifier's call)."""
    inner = f"cd {work} && echo {name} > {name} && cat {name} > {name}.copy && rm {name} " \
            f"&& test -e {name}.copy"
    return subprocess.Popen(["bash", "-c", f"read _go; exec unshare --pid --fork --mount-proc "
                                           f"bash -c '{inner}'"], stdin=subprocess.PIPE)


def test_two_namespaces_at_once_each_get_only_their_own(tmp_path: Path) -> None:
    tracer = HostTracer()
    tracer.start()
    try:
        procs = {name: _session(tmp_path, name) for name in ("alpha", "beta")}
        traces = {"alpha": tracer.follow(procs["alpha"].pid, "agent"),
                  "beta": tracer.follow(procs["beta"].pid, "verifier")}
        for p in procs.values():  # both run at once
            assert p.stdin is not None
            p.stdin.write(b"go\n")
            p.stdin.close()
        for p in procs.values():
            assert p.wait(timeout=60) == 0
        results = {name: traces[name].close(timeout=60) for name in traces}
        forged = _forge(tracer)
    finally:
        tracer.stop()
    for name, other in (("alpha", "beta"), ("beta", "alpha")):
        r = results[name]
        assert r.lost == 0 and r.stray == 0
        assert traces[name].registered.is_set()
        assert other not in r.text  # not one line of the other session
        s = summarize_segment(r.text)
        mine = {p for p in s.written | s.deleted | s.temporary | s.read if p.startswith(str(tmp_path))}
        assert str(tmp_path / f"{name}.copy") in s.written
        assert str(tmp_path / name) in s.temporary  # written, then removed in the same command
        assert mine <= {str(tmp_path / name), str(tmp_path / f"{name}.copy")}
    # the stat family is the verifier's only: `test -e` is a stat for beta, none for alpha
    assert "newfstatat(" not in results["alpha"].text and "stat(" not in results["alpha"].text
    assert any("stat" in line and "beta.copy" in line for line in results["beta"].lines)
    assert tracer.demux.unrouted == 0
    assert not forged.registered.is_set()  # neither the agent with the key nor a wrong key


NO_PID = 0x7FFFFFFF  # above any pid_max: were a forged registration taken, it traces nothing


def _forge(tracer: HostTracer) -> SessionTrace:
    """Registrations the tracer must refuse: the right key from another PID namespace (an
    agent that learned it, root in its container), and a wrong key from the host; and, as
    the control that the call itself is right, the same call from the host with the key."""
    forged, control = (SessionTrace(tag_of(n, "agent"), NO_PID, "agent", None, 0, tracer.nonce)
                       for n in (1000, 1001))
    tracer.sessions.update({forged.tag: forged, control.tag: control})

    def call(tag: int, key: int) -> list[str]:
        u = "ctypes.c_ulong"
        return [sys.executable, "-c", f"import ctypes; ctypes.CDLL(None).prctl(ctypes.c_int("
                f"{REGISTER}), {u}({NO_PID}), {u}({tag}), {u}({key}), {u}(0))"]

    subprocess.run(["unshare", "--pid", "--fork", *call(forged.tag, tracer.key)], check=True,
                   timeout=60)
    subprocess.run(call(forged.tag, tracer.key ^ 1), check=True, timeout=60)
    subprocess.run(call(control.tag, tracer.key), check=True, timeout=60)
    assert control.registered.wait(30)
    time.sleep(1)  # the refused ones' G records would be read by now
    return forged


def test_short_sessions_come_back_whole_under_batched_wakeups(tmp_path: Path) -> None:
    """A session of a few milliseconds, closed at once: every record is there (its last few
    sit in a perf buffer not yet announced until the close's fence flushes them), and a
    fence answers the host only."""
    tracer = HostTracer()
    tracer.start()
    try:
        assert tracer.proc is not None
        environ = Path(f"/proc/{tracer.proc.pid}/environ").read_bytes().split(b"\0")
        assert b"TC_WAKEUP_EVENTS=16" in environ  # batched: the case the fences are for
        results = []
        for i in range(12):
            p = subprocess.Popen(["bash", "-c", f"read _go; echo {i} > {tmp_path}/f{i}"],
                                 stdin=subprocess.PIPE)
            trace = tracer.follow(p.pid, "agent")
            assert trace.registered.wait(30)
            p.communicate(b"go\n", timeout=60)
            t0 = time.monotonic()
            results.append((trace.close(timeout=60), time.monotonic() - t0))
        forged = _forge_fence(tracer)
    finally:
        tracer.stop()
    for i, (r, took) in enumerate(results):
        assert r.lost == 0 and r.stray == 0
        assert str(tmp_path / f"f{i}") in summarize_segment(r.text).written, i
        assert took < 0.3  # a fence, not the 0.3 s settle time it replaces
    assert forged == {}


def _forge_fence(tracer: HostTracer) -> dict[int, int]:
    """A fence call with the right key from another PID namespace (an agent that learned
    it): no B record. The host's own fence after it is read only once everything printed
    before it is, so the forged one's answer, had there been one, is in by then."""
    from termcredit.tracer.ebpf_fence import FENCE

    seq = 999_999
    tracer.fences._seen[seq] = {}  # as a fence waiting for its answers
    u = "ctypes.c_ulong"
    subprocess.run(["unshare", "--pid", "--fork", sys.executable, "-c",
                    f"import ctypes; ctypes.CDLL(None).prctl(ctypes.c_int({FENCE}), {u}({seq}), "
                    f"{u}({tracer.key}), {u}(0), {u}(0))"], check=True, timeout=60)
    assert tracer.fence() is not None
    return tracer.fences._seen.pop(seq)
