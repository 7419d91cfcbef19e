"""Rollout throughput: scripted episodes (each task's oracle, one command per step) through the
one episode lifecycle, ``--concurrency`` at a time, as a training group runs them.

episodes_per_s:     finished episodes (sandbox start .. verified, files written) per wall second
cpu_busy:           share of the machine's cores busy meanwhile (psutil, system-wide: dockerd,
                    strace and the containers count, not only this process)
core_s_per_episode: busy core-seconds per episode (the number to cut: on 2 cores it bounds
                    throughput whatever the concurrency)

Images are built and the pool is told the plan before the clock starts; sandbox start-up is
inside the measurement (every episode needs a fresh one). The phase medians come from each
trajectory's ``info.phases``.

Usage: .venv/bin/python benchmarks/rollout_throughput.py [--episodes 16] [--concurrency 8]
       [--task tasks/NAME ...]   (default: the credit-sensitive tasks)
Goal (issue #16): core_s_per_episode <= 0.3.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from termcredit.bench.split import split_commands
from termcredit.depgpo.trial_hook import default_hooks  # graph.json, as training passes it
from termcredit.harness.episode import Episode, task_spec
from termcredit.sandbox import SandboxPool, docker_client, ensure_base_image, gc
from termcredit.tasks import load_task
from termcredit.tasks.build import build_image

CREDIT_TASKS = ["patch-port-config", "failing-job-state", "repack-fixed-archive",
                "stage-and-summarize", "restore-newest-backup", "repair-checksum-mismatch"]
REPO = Path(__file__).resolve().parents[1]


def busy_seconds() -> float:
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--task", action="append", default=[])
    args = ap.parse_args()

    tasks = [load_task(p) for p in (args.task or [REPO / "tasks" / t for t in CREDIT_TASKS])]
    client = docker_client()
    base = ensure_base_image(client)
    jobs = [(tasks[k % len(tasks)], k // len(tasks)) for k in range(args.episodes)]
    images = {(t.name, i): build_image(client, t, base_ref=base, instance=i) for t, i in jobs}
    run_id = f"bench-rollout-{secrets.token_hex(3)}"
    pool = SandboxPool(client, run_id, ahead=args.concurrency)
    out = Path(tempfile.mkdtemp(prefix="tc-rollout-"))

    def episode(k: int) -> dict:
        task, inst = jobs[k]
        ep = Episode(task, pool, task_spec(task, images[(task.name, inst)]), out / f"e{k}",
                     agent="oracle-steps", instance=inst, command_timeout=60,
                     hooks=default_hooks())
        if ep.start():
            assert ep.env is not None
            for cmd in split_commands((task.solution_dir / "solve.sh").read_text()):
                ep.env.step(cmd)
        result = ep.finish()
        return {"reward": result.reward, **ep.traj.info.get("phases", {})}

    try:
        pool.plan(task_spec(t, images[(t.name, i)]) for t, i in jobs)
        time.sleep(2.0)  # the first pre-started sandboxes are a warm pool, as in training
        busy0, t0 = busy_seconds(), time.monotonic()
        with ThreadPoolExecutor(args.concurrency) as threads:
            rows = list(threads.map(episode, range(args.episodes)))
        wall, busy = time.monotonic() - t0, busy_seconds() - busy0
    finally:
        pool.close()
        gc(client, run_id=run_id)
    n, cores = len(rows), psutil.cpu_count()
    print(f"{n} episodes of {len(tasks)} task(s), {args.concurrency} at a time, {cores} cores, "
          f"mean reward {sum(r['reward'] for r in rows) / n:.2f}, trials in {out}")
    for phase in ("start", "agent", "finalize", "verify", "hooks"):
        vals = [r[phase] for r in rows if phase in r]
        if vals:
            print(f"  {phase:<9} median {statistics.median(vals) * 1000:8.1f} ms")
    print(f"RESULT episodes_per_s={n / wall:.3f} cpu_busy={busy / (wall * cores):.2f} "
          f"core_s_per_episode={busy / n:.3f}")


if __name__ == "__main__":
    main()
