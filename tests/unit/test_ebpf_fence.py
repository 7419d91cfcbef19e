"""Fences (#33): the host knows every record printed before a point has been read, by
waiting for a B record from each CPU's buffer, not for a tick or a settle time."""

from __future__ import annotations

import os
import threading
import time

import pytest

from termcredit.tracer import ebpf_fence
from termcredit.tracer.ebpf_fence import FENCE, FenceScanner, Fences, fence_probe, online_cpus

N = "n0nce"


@pytest.fixture
def two_cpus(monkeypatch):
    """A fence over CPUs 0 and 1 whose calls are recorded, not made."""
    fences = Fences(7)
    calls: list[tuple[list[int], int]] = []
    monkeypatch.setattr(ebpf_fence, "online_cpus", lambda: [0, 1])
    monkeypatch.setattr(fences, "_call_on", lambda cpus, seq: calls.append((cpus, seq)) or True)
    return fences, calls


def test_a_fence_returns_the_earliest_time_once_every_cpu_answered(two_cpus):
    fences, calls = two_cpus
    later = threading.Timer(0.05, lambda: (fences.saw(1, 1, 500), fences.saw(0, 1, 300)))
    later.start()
    assert fences.fence(timeout=5) == 300  # by hand: min(300, 500)
    assert calls == [([0, 1], 1)]
    later.join()


def test_a_cpu_that_never_answers_makes_no_fence(two_cpus):
    fences, _ = two_cpus
    threading.Timer(0.01, lambda: fences.saw(0, 1, 300)).start()
    assert fences.fence(timeout=0.2) is None


def test_an_answer_from_a_cpu_not_fenced_is_no_fence(two_cpus):
    fences, _ = two_cpus  # the pinning did not hold: CPU 0 and some CPU 5 answered
    threading.Timer(0.01, lambda: (fences.saw(0, 1, 300), fences.saw(5, 1, 310))).start()
    assert fences.fence(timeout=0.3) is None


def test_an_answer_to_another_fence_counts_for_nothing(two_cpus):
    fences, _ = two_cpus
    fences.saw(0, 1, 100)  # before fence 1 began: nobody waits, nothing kept
    threading.Timer(0.01, lambda: (fences.saw(0, 2, 300), fences.saw(1, 2, 300))).start()
    assert fences.fence(timeout=0.2) is None  # fence 1 got seq 2's answers only
    assert fences._seen == {}


def test_a_cpu_the_host_cannot_run_on_makes_no_fence(monkeypatch):
    fences = Fences(7)
    monkeypatch.setattr(ebpf_fence, "online_cpus", lambda: [0, 4095])
    assert fences.fence(timeout=0.2) is None


def test_the_calls_run_pinned_to_each_cpu_and_the_affinity_comes_back(monkeypatch):
    fences = Fences(7)
    before = os.sched_getaffinity(0)
    where: list[set[int]] = []

    class Libc:
        def prctl(self, option, seq, key, *_):  # noqa: ANN001, ANN202
            assert (option.value, seq.value, key.value) == (FENCE, 3, 7)
            where.append(os.sched_getaffinity(0))
            return -1

    monkeypatch.setattr(ebpf_fence, "_libc", Libc())
    cpus = sorted(before)
    assert fences._call_on(cpus, 3) is True
    assert where == [{c} for c in cpus]
    assert os.sched_getaffinity(0) == before


def test_online_cpus_reads_the_kernels_list():
    assert set(online_cpus()) >= os.sched_getaffinity(0)


def test_the_scanner_finds_b_records_across_chunks(two_cpus):
    fences, _ = two_cpus
    scan = FenceScanner(N, fences)
    buf = bytearray()
    got: list[int | None] = []
    waiter = threading.Thread(target=lambda: got.append(fences.fence(timeout=5)))
    waiter.start()
    while 1 not in fences._seen:  # the fence is waiting for its answers
        time.sleep(0.001)
    for chunk in (b"n0nceC 1 2 3n0nceZ\nn0nceB 0 1 4", b"00n0nceZ\n", b"n0nce",
                  b"B 1 1 420n0nceZ\n"):
        buf += chunk
        scan.scan(buf)
    waiter.join()
    assert got == [400]


def test_the_probe_answers_the_host_only():
    text = fence_probe(N, 12345, 4026531836)
    assert (f"/args->option == {FENCE} && args->arg3 == 12345 && "
            "curtask->nsproxy->pid_ns_for_children->ns.inum == 4026531836/") in text
    # the B record, then enough empty records for the kernel to announce the buffer
    assert f'printf("{N}B %d %lld %llu{N}Z\\n", cpu, (int64)args->arg2, nsecs);' in text
    assert 'unroll(16) { printf(""); }' in text


@pytest.mark.skipif(os.geteuid() != 0, reason="leaving SCHED_IDLE needs root (as the tracer)")
def test_boost_lifts_the_tracer_out_of_idle_while_anyone_waits():
    import subprocess

    from termcredit.tracer.ebpf import Boost, _idle

    proc = subprocess.Popen(["sleep", "30"])
    try:
        _idle(proc.pid)
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
        boost = Boost(proc.pid)
        with boost:
            assert os.sched_getscheduler(proc.pid) == os.SCHED_OTHER
            with boost:  # a second fence at once: still normal after the inner one ends
                pass
            assert os.sched_getscheduler(proc.pid) == os.SCHED_OTHER
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
    finally:
        proc.kill()
        proc.wait()
