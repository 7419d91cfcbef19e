"""benchmarks/gpu_path.py --smoke: every part runs on the CPU at tiny shapes in its own process
and reports its figures as RESULT lines (the GPU run is the same script without --smoke)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu_path.py"


@pytest.mark.slow
def test_smoke_run_reports_every_part():
    env = dict(os.environ, PYTHONPATH=str(SCRIPT.parents[1] / "src"))
    out = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True,
                         text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    res = dict(line.removeprefix("RESULT ").split("=", 1)
               for line in out.stdout.splitlines() if line.startswith("RESULT "))
    assert res["env.device"] == "cpu"
    for part in ("generate", "update-0.5b", "update-1.5b"):
        assert res[f"{part}.status"] == "ok", part
    assert res["vllm.status"] == "skipped"  # no GPU here
    # generation: batch 4 x 8 new tokens on each side; compiled static only on CUDA
    assert (res["generate.batch"], res["generate.new_tokens"]) == ("4", "8")
    for side in ("hf_generate", "policy_hf", "static_eager"):
        assert float(res[f"generate.{side}_tok_s"]) > 0
    assert "generate.static_tok_s" not in res
    assert float(res["generate.hf_generate_vs_hf_generate"]) == 1.0
    assert float(res["generate.limit_tok_s"]) > 0
    # update: 2 x 64 tokens, both sides timed and profiled (no peak memory off CUDA)
    for part in ("update-0.5b", "update-1.5b"):
        assert res[f"{part}.tokens"] == "128"
        assert float(res[f"{part}.ratio"]) > 0
        assert ":" in res[f"{part}.ours_top1"] and ":" in res[f"{part}.bare_top1"]
        assert f"{part}.mem_ratio" not in res
