"""The eBPF tracer cuts a session's steps in the process that runs its shells, so it follows
local sandboxes only (#33): ``auto`` falls back to strace with the reason, ``ebpf`` is an
error; the local backend keeps what ``resolve_tracer`` chose once the host tracer started
(where it cannot, the same fallback or error, before any sandbox)."""

from __future__ import annotations

import pytest

from termcredit.tracer.choice import TracerUnavailable, for_backend


def started() -> None:  # a host tracer that started (the real one takes tens of seconds)
    return None


def test_local_sandboxes_keep_the_choice():
    assert for_backend("auto", "ebpf", "n", "local", started) == ("ebpf", "n")
    assert for_backend("ebpf", "ebpf", None, "local", started) == ("ebpf", None)
    assert for_backend("auto", "strace", "m", "ray") == ("strace", "m")


def _full() -> None:
    raise RuntimeError("bpftrace did not start: ioctl(PERF_EVENT_IOC_SET_BPF): Argument list "
                       "too long")


def test_a_host_tracer_that_cannot_start_is_known_before_any_sandbox():
    # auto: strace, with the reason; ebpf: an error with it
    assert for_backend("auto", "ebpf", "tracer: ebpf (auto: ...)", "local", _full) == (
        "strace", "tracer: strace (auto: the host tracer did not start: bpftrace did not "
                  "start: ioctl(PERF_EVENT_IOC_SET_BPF): Argument list too long)")
    with pytest.raises(TracerUnavailable, match="Argument list too long"):
        for_backend("ebpf", "ebpf", None, "local", _full)
    # the strace choice never starts it
    assert for_backend("strace", "strace", None, "local", _full) == ("strace", None)


def test_auto_on_ray_falls_back_to_strace_saying_why():
    assert for_backend("auto", "ebpf", "tracer: ebpf (auto: ...)", "ray") == (
        "strace", "tracer: strace (auto: the eBPF tracer follows local sandboxes only, not "
                  "the 'ray' backend's)")


def test_ebpf_on_ray_is_an_error():
    with pytest.raises(TracerUnavailable, match="follows local sandboxes only"):
        for_backend("ebpf", "ebpf", None, "ray")
