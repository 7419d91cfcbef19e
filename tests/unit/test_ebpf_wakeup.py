"""Batched perf-buffer wakeups for bpftrace (#33): on unless turned off, and only with the
flush probe."""

from __future__ import annotations

import os
import shutil

import pytest

from termcredit.tracer.ebpf_program import WAKEUP_EVENTS, flush_probe, program
from termcredit.tracer.ebpf_wakeup import ENV, OPT_OUT, wakeup_env


def test_off_when_turned_off() -> None:
    env = {"PATH": "/usr/bin", OPT_OUT: "0"}
    assert wakeup_env(env) == (env, 1)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler to build the library")
def test_by_default_it_builds_the_library_and_sets_the_count() -> None:
    env, count = wakeup_env({"PATH": "/usr/bin"})
    assert count == 16 == WAKEUP_EVENTS
    assert env[ENV] == "16" and os.path.isfile(env["LD_PRELOAD"])


def test_the_program_flushes_every_cpu_only_when_batched() -> None:
    text = program(100, "n0nce", "agent")
    assert flush_probe() in text
    # 16 empty printfs per tick, on every CPU, and only where bpftrace runs with $1 > 1
    assert flush_probe() == ('profile:hz:100 /$1 > 1/ { unroll(16) { printf(""); } }\n')
