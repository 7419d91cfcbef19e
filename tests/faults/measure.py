"""Run `termcredit run` as a user would and sample its peak resident memory (psutil)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]


def run_measured(args: list[str], *, limit_s: float = 240.0,
                 pythonpath: str | None = None) -> tuple[float, dict, str]:
    """(peak RSS of the harness process in MiB, the run's result.json, its stderr)."""
    env = None
    if pythonpath:
        import os

        env = {**os.environ, "PYTHONPATH": pythonpath}
    proc = subprocess.Popen([sys.executable, "-m", "termcredit.cli", "run", *args], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    ps, peak, t0 = psutil.Process(proc.pid), 0, time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < limit_s:
        try:
            peak = max(peak, ps.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    _, err = proc.communicate(timeout=30)
    out = Path(args[args.index("--out") + 1])
    result = json.loads((out / "result.json").read_text()) if (out / "result.json").exists() else {}
    return peak / (1 << 20), result, err.decode("utf-8", "replace")


def steps_of(result: dict) -> list[dict]:
    trial = Path(result["trials"][0]["trial_dir"])
    return json.loads((trial / "trajectory.json").read_text())["steps"]


if __name__ == "__main__":  # before/after figures: measure.py OUT_DIR [PYTHONPATH]
    import tempfile

    base = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
    base.mkdir(parents=True, exist_ok=True)
    from .test_resource_bounds import OPEN_LOOP  # noqa: E402

    cases = {"open-loop-10s": OPEN_LOOP + "\necho after\n", "yes-15s": "yes\necho after\n",
             "burst-1GB": "head -c 1000000000 /dev/zero | tr '\\\\0' x\necho after\n"}
    for name, commands in cases.items():
        replay = base / f"{name}.txt"
        replay.write_text(commands)
        peak, res, err = run_measured(
            ["--task", "tasks/hello-world", "--agent", f"replay:{replay}", "--command-timeout",
             "15", "--out", str(base / name)], pythonpath=sys.argv[2] if len(sys.argv) > 2 else None)
        kept = len(steps_of(res)) if res.get("trials") else 0
        err_line = (res.get("trials") or [{}])[0].get("error")
        print(f"RESULT case={name} peak_rss_mb={peak:.0f} steps_kept={kept} error={err_line!r}")
