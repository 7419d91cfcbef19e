"""Tracing overhead on workloads typical of agents, traced vs untraced in the same container.

Each workload's wall time is measured *inside* the container by bash ($EPOCHREALTIME around the
workload), once through the traced persistent shell (the product path: strace -f --seccomp-bpf
on the lean syscall set) and once through a plain `docker exec bash -c` (untraced), alternating,
median of --repeats runs each. Prints one ratio per workload, then
`RESULT geo_mean=<x> worst=<y>`. Goal: geo-mean <= 1.3x, worst <= 2.5x.

Usage: .venv/bin/python benchmarks/tracer_overhead.py [--repeats 5] [--cpus 2]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

from termcredit.sandbox import Sandbox, SandboxSpec, docker_client, ensure_base_image

SETUP = "rm -rf /tmp/pkg && mkdir -p /tmp/pkg && cp -r /usr/lib/python3.11/json /usr/lib/python3.11/email /tmp/pkg/"
WORKLOADS = {
    "python imports": "python3 -c 'import json, email.parser, http.client, argparse, csv, "
                      "sqlite3, subprocess, tempfile'",
    "byte-compile pkg": "python3 -m compileall -q -f /tmp/pkg",
    "tar /usr/share/doc": "tar cf /tmp/doc.tar /usr/share/doc",
    "200x echo>f;cat f": "for i in $(seq 200); do echo $i > /tmp/f; cat /tmp/f > /dev/null; done",
    "find /usr -type f": "find /usr -type f > /dev/null",
}


def timed(workload: str) -> str:
    # the workload runs in a subshell so its own `exit`/cd cannot disturb the timing lines
    return f"__s=$EPOCHREALTIME; ( {workload} ); __e=$EPOCHREALTIME; echo \"$__s $__e\""


def elapsed(stdout: str) -> float:
    start, end = stdout.strip().splitlines()[-1].split()
    return float(end) - float(start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpus", type=float, default=2.0)
    args = ap.parse_args()
    client = docker_client()
    sb = Sandbox(client, SandboxSpec(image=ensure_base_image(client), cpus=args.cpus,
                                     memory_mb=2048), f"bench-tracer-{int(time.time())}")
    ratios = {}
    try:
        sb.run(SETUP, timeout=120)
        for name, work in WORKLOADS.items():
            traced, plain = [], []
            sb.run(work, timeout=300)  # warm the page cache for both
            for _ in range(args.repeats):
                rec = sb.run(timed(work), timeout=300)
                assert rec.exit_code == 0, rec.stderr
                traced.append(elapsed(rec.stdout))
                res = sb.container.exec_run(["bash", "-c", timed(work)])
                assert res.exit_code == 0, res.output
                plain.append(elapsed(res.output.decode()))
            t, p = statistics.median(traced), statistics.median(plain)
            ratios[name] = t / p
            print(f"{name:22s} untraced {p * 1000:8.1f} ms  traced {t * 1000:8.1f} ms  "
                  f"ratio {t / p:5.2f}x")
    finally:
        sb.remove()
    geo = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    print(f"RESULT geo_mean={geo:.2f} worst={max(ratios.values()):.2f}")


if __name__ == "__main__":
    main()
