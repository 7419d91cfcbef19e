"""The eBPF tracer cuts a session's steps in the process that runs its shells, so it follows
local sandboxes only (#33): ``auto`` falls back to strace with the reason, ``ebpf`` is an
error; the local backend keeps what ``resolve_tracer`` chose."""

from __future__ import annotations

import pytest

from termcredit.tracer.choice import TracerUnavailable, for_backend


def test_local_sandboxes_keep_the_choice():
    assert for_backend("auto", "ebpf", "n", "local") == ("ebpf", "n")
    assert for_backend("ebpf", "ebpf", None, "local") == ("ebpf", None)
    assert for_backend("auto", "strace", "m", "ray") == ("strace", "m")


def test_auto_on_ray_falls_back_to_strace_saying_why():
    assert for_backend("auto", "ebpf", "tracer: ebpf (auto: ...)", "ray") == (
        "strace", "tracer: strace (auto: the eBPF tracer follows local sandboxes only, not "
                  "the 'ray' backend's)")


def test_ebpf_on_ray_is_an_error():
    with pytest.raises(TracerUnavailable, match="follows local sandboxes only"):
        for_backend("ebpf", "ebpf", None, "ray")
