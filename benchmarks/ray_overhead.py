"""What running the sandboxes through Ray costs, side by side with the local backend in one run.

local_s / ray_s:   wall time of `termcredit run` with the oracle over the tasks (default: the
                   built-in suite), --concurrency at a time, images already built; the rewards
                   of the two runs must be equal (rewards_equal=1).
local_step_ms / ray_step_ms: median wall time of one harness step (AgentEnv.step of a command
                   that writes a file: the traced command, the trace on disk, the content
                   snapshot and the storage check: three host calls on the ray backend),
                   local and ray steps alternated in two live episodes of the same task.
hop_ms_per_step:   ray_step_ms - local_step_ms, what the Ray hop adds to a step.

The Ray cluster: --ray-address, else a one-node cluster started here for the run (2 CPUs).
Usage: .venv/bin/python benchmarks/ray_overhead.py [--task tasks/NAME ...] [--concurrency 2]
       [--steps 100] [--ray-address HOST:PORT]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from termcredit.depgpo.trial_hook import default_hooks  # graph.json, as `termcredit run` passes
from termcredit.harness.backend import BackendSettings, make_backend
from termcredit.harness.episode import Episode, task_spec
from termcredit.harness.run import RunConfig, run
from termcredit.sandbox import ImageMap
from termcredit.sandbox.raylocal import local_cluster
from termcredit.tasks import find_tasks, load_task

REPO = Path(__file__).resolve().parents[1]
STEP = "echo step > /app/bench-step.txt"


def suite_wall(tasks: list, backend: str, address: str | None, concurrency: int,
               out: Path) -> tuple[float, dict]:
    quiet = Console(file=open(os.devnull, "w"))
    cfg = RunConfig(tasks=tasks, agent="oracle", concurrency=concurrency, out=out,
                    backend=backend, ray_address=address, hooks=default_hooks())
    t0 = time.monotonic()
    summary = run(cfg, quiet)
    return time.monotonic() - t0, {(t["task"], t["attempt"]): t["reward"]
                                   for t in summary["trials"]}


def step_times(address: str, n: int, out: Path) -> tuple[list[float], list[float]]:
    """Alternated step times (ms) of a local and a ray episode of hello-world."""
    task = load_task(REPO / "tasks" / "hello-world")
    times: dict[str, list[float]] = {"local": [], "ray": []}
    backends = {name: make_backend(BackendSettings(name, address), f"bench-hop-{name}-"
                                   f"{secrets.token_hex(3)}", ahead=1, log=lambda m: None)
                for name in times}
    try:
        eps = {}
        for name, b in backends.items():
            spec = task_spec(task, b.image(task, 0, image_map=ImageMap.load()))
            eps[name] = Episode(task, b.pool, spec, out / name, agent="bench",
                                hooks=default_hooks())
            assert eps[name].start(), eps[name].error
        for i in range(n + 5):
            for name, ep in eps.items():
                assert ep.env is not None
                t0 = time.perf_counter()
                rec = ep.env.step(STEP)
                if i >= 5:  # the first few warm both paths
                    times[name].append((time.perf_counter() - t0) * 1000)
                assert rec.exit_code == 0 and rec.files, rec
        for ep in eps.values():
            ep.abandon()
    finally:
        for b in backends.values():
            b.close()
    return times["local"], times["ray"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", action="append", default=[])
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--ray-address")
    args = ap.parse_args()
    tasks = find_tasks(args.task or [str(REPO / "tasks")])
    out = Path(tempfile.mkdtemp(prefix="tc-rayhop-"))
    cluster = (contextlib.nullcontext(args.ray_address) if args.ray_address
               else local_cluster(2, pythonpath=str(REPO / "src")))
    with cluster as address:
        local = make_backend(BackendSettings(), "bench-images", ahead=1, log=print)
        try:  # images first (cached by content hash), so neither timed run builds any
            for task in tasks:
                local.image(task, 0, image_map=ImageMap.load())
        finally:
            local.close()
        local_s, local_r = suite_wall(tasks, "local", None, args.concurrency, out / "local")
        ray_s, ray_r = suite_wall(tasks, "ray", address, args.concurrency, out / "ray")
        local_ms, ray_ms = step_times(address, args.steps, out / "steps")
    lm, rm = statistics.median(local_ms), statistics.median(ray_ms)
    print(f"{len(tasks)} task(s), oracle, {args.concurrency} at a time, {os.cpu_count()} cores: "
          f"mean reward local {sum(local_r.values()) / len(local_r):.3f}, "
          f"ray {sum(ray_r.values()) / len(ray_r):.3f}; {args.steps} steps each; runs in {out}")
    print(f"RESULT local_s={local_s:.1f} ray_s={ray_s:.1f} local_step_ms={lm:.1f} "
          f"ray_step_ms={rm:.1f} hop_ms_per_step={rm - lm:.1f} "
          f"rewards_equal={int(local_r == ray_r)}")


if __name__ == "__main__":
    main()
