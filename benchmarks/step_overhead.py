"""Per-step harness overhead of the traced persistent shell, side by side with `docker exec`.

step_overhead_ms: median host wall time of Sandbox.run("/bin/true") minus the command's own time
                  (the same /bin/true run untraced by bash inside the same container, per call).
docker_exec_ms:   median host wall time of a plain `docker exec` of /bin/true (docker SDK).
reset_ms:         median time the rollout loop waits in SandboxPool.acquire with the pool warm.

Usage: .venv/bin/python benchmarks/step_overhead.py [--n 200]
Goal: step overhead <= 10 ms, reset <= 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time

from termcredit.sandbox import Sandbox, SandboxPool, SandboxSpec, docker_client, ensure_base_image


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="steps per method")
    ap.add_argument("--resets", type=int, default=12)
    args = ap.parse_args()

    client = docker_client()
    spec = SandboxSpec(image=ensure_base_image(client))
    run_id = f"bench-step-{int(time.time())}"
    sb = Sandbox(client, spec, run_id)
    try:
        # the command's own time: /bin/true forked+exec'd by bash, untraced, same container
        loop = sb.container.exec_run(
            ["bash", "-c", f"s=$(date +%s%N); for i in $(seq {args.n}); do /bin/true; done; "
             "e=$(date +%s%N); echo $(( (e - s) / 1000 ))"])
        own_ms = int(loop.output.decode().strip()) / 1000 / args.n

        for _ in range(10):  # warm both paths
            sb.run("/bin/true")
            sb.container.exec_run(["/bin/true"])
        traced, plain = [], []
        for _ in range(args.n):  # alternate, so drift in machine load hits both alike
            t0 = time.perf_counter()
            rec = sb.run("/bin/true")
            traced.append((time.perf_counter() - t0) * 1000)
            assert rec.exit_code == 0 and "execve(" in rec.trace
            t0 = time.perf_counter()
            assert sb.container.exec_run(["/bin/true"]).exit_code == 0
            plain.append((time.perf_counter() - t0) * 1000)
    finally:
        sb.remove()

    pool = SandboxPool(client, run_id, ahead=2)
    waits = []
    try:
        pool.plan([spec] * (args.resets + 2))
        for _ in range(args.resets):
            while not pool.warm(spec):
                time.sleep(0.05)
            t0 = time.perf_counter()
            used = pool.acquire(spec)
            waits.append((time.perf_counter() - t0) * 1000)
            used.run("echo episode")
            pool.release(used)
    finally:
        pool.close()

    step_ms = statistics.median(traced) - own_ms
    exec_ms = statistics.median(plain)
    reset_ms = statistics.median(waits)
    print(f"traced step wall (median of {args.n}): {statistics.median(traced):.2f} ms "
          f"(p90 {statistics.quantiles(traced, n=10)[-1]:.2f})")
    print(f"/bin/true own time, untraced:          {own_ms:.2f} ms")
    print(f"docker exec wall (median of {args.n}): {exec_ms:.2f} ms "
          f"(p90 {statistics.quantiles(plain, n=10)[-1]:.2f})")
    print(f"pool acquire, warm (median of {args.resets}): {reset_ms:.2f} ms")
    print(f"docker exec / traced step overhead: {exec_ms / max(step_ms, 1e-6):.1f}x")
    print(f"RESULT step_overhead_ms={step_ms:.2f} docker_exec_ms={exec_ms:.2f} "
          f"reset_ms={reset_ms:.2f}")


if __name__ == "__main__":
    main()
