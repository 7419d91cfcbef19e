"""Runaway commands and files against a real `termcredit run`: bounded memory, steps kept.

Each case is its own run (so each peak is its own process's); the cases run side by side.
Bound: the harness process stays under PEAK_MB whatever the command does (before the streaming
caps, `yes` and a 1 GB burst killed the in-container shim and lost every step, and a 1 GB
verifier file made the harness hold 1.9 GB).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .measure import run_measured, steps_of

pytestmark = pytest.mark.docker
PEAK_MB = 400
# 8000 opens of a 3 KB path (/etc/././.../hostname): about 25 MB of trace lines
OPEN_LOOP = ("python3 -c \"p='/etc/'+'./'*1500+'hostname'; "
             "[open(p).close() for _ in range(8000)]\"")
CASES = {  # name: (task, replay commands)
    "yes": ("tasks/hello-world", ["yes", "echo after"]),
    "burst": ("tasks/hello-world", ["head -c 1000000000 /dev/zero | tr '\\0' x", "echo after"]),
    "open-loop": ("tasks/hello-world", [OPEN_LOOP, "echo after"]),
    "big-verifier-file": ("tests/fixtures/tasks/big-verifier-log", ["true"]),
    "disk": ("tests/fixtures/tasks/small-disk",
             ["dd if=/dev/zero of=/tmp/big bs=1M count=100 status=none", "echo never"]),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, base_ref):
    base = tmp_path_factory.mktemp("faults")

    def one(name: str):
        task, commands = CASES[name]
        replay = base / f"{name}.txt"
        replay.write_text("\n".join(commands) + "\n")
        return run_measured(["--task", task, "--agent", f"replay:{replay}", "--command-timeout",
                             "15", "--out", str(base / name)], limit_s=200)

    with ThreadPoolExecutor(len(CASES)) as pool:
        return dict(zip(CASES, pool.map(one, CASES)))


@pytest.mark.parametrize("name", ["yes", "burst"])
def test_runaway_output_is_capped_while_it_streams_and_every_step_is_kept(runs, name):
    peak, res, err = runs[name]
    assert res["trials"][0]["error"] is None, err[-2000:]
    first, after = steps_of(res)
    assert after["command"]["stdout"] == "after\n"  # the shell survived the flood
    out = first["command"]["stdout"]
    assert first["command"]["output_truncated"] and "bytes of output omitted" in out
    assert len(out) < 70_000  # 64 KiB head + 4 KiB tail + the note
    if name == "yes":
        assert first["command"]["timed_out"] and out.startswith("y\ny\n")
    assert peak < PEAK_MB, f"harness peak RSS {peak:.0f} MiB"


def test_a_huge_trace_is_cut_and_the_step_marked(runs):
    peak, res, err = runs["open-loop"]
    assert res["trials"][0]["error"] is None, err[-2000:]
    first, after = steps_of(res)
    assert first["command"]["trace_dropped"] > 0 and not first["command"]["timed_out"]
    trace = Path(res["trials"][0]["trial_dir"]) / first["command"]["trace_file"]
    assert trace.stat().st_size <= 20 << 20  # cut back to a 12 MiB head + 4 MiB tail past 20 MiB
    assert after["command"]["stdout"] == "after\n"
    assert peak < PEAK_MB, f"harness peak RSS {peak:.0f} MiB"


def test_a_huge_verifier_file_is_not_copied_past_the_cap(runs):
    peak, res, err = runs["big-verifier-file"]
    trial = res["trials"][0]
    assert trial["reward"] == 1.0, err[-2000:]
    vdir = Path(trial["trial_dir"]) / "verifier"
    # logs_max_mb defaults to 16 MiB in all; the small reward.txt was copied first
    assert (vdir / "big.bin").stat().st_size == (16 << 20) - len("1\n")
    assert trial["error"].startswith("verifier logs over logs_max_mb = 16: big.bin cut at")

    notes = json.loads((Path(trial["trial_dir"]) / "trajectory.json").read_text())["verifier"]["notes"]
    assert any(n.startswith("big.bin cut at") for n in notes), notes
    assert peak < PEAK_MB, f"harness peak RSS {peak:.0f} MiB"


def test_storage_over_the_limit_ends_the_episode_and_keeps_the_step(runs):
    peak, res, err = runs["disk"]
    trial = res["trials"][0]
    traj = json.loads((Path(trial["trial_dir"]) / "trajectory.json").read_text())
    assert traj["termination"] == "resource_limit", err[-2000:]
    assert "over storage_mb = 64" in traj["info"]["resource_limit"]
    assert [s["command"]["command"] for s in traj["steps"]] == [CASES["disk"][1][0]]
