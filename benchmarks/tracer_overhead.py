"""Tracing overhead on workloads typical of agents, traced vs untraced in the same container.

Each workload's wall time is measured *inside* the container by bash ($EPOCHREALTIME around the
workload), once through the traced persistent shell (the product path: strace -f --seccomp-bpf
on the lean syscall set) and once through a plain `docker exec bash -c` (untraced), alternating,
median of --repeats runs each. Prints one ratio per workload, then
`RESULT geo_mean=<x> worst=<y>`. Goal: geo-mean <= 1.3x, worst <= 2.0x.

``--profile`` also runs, per workload and in the same container, strace by hand on the same
syscall set, pinned to one CPU like the product's: ``strace -c`` (counting only: the cost of the ptrace stops themselves, and how
many there are), the product's flags writing to /dev/null (stops + formatting, no pipe or
shim), and the same without ``-y`` (what resolving fds to paths costs). Each is a ratio to
untraced, so the product's ratio splits into stops, formatting, ``-y`` and the rest.

``--backends strace,ebpf`` times both tracers in the same run, alternating with the untraced
runs: ``strace`` is the product's shell, ``ebpf`` the product's shell of a second sandbox
(same image and limits) traced from the host by the shared eBPF host tracer (needs root and
bpftrace), each against untraced runs in its own container. One RESULT line per backend:
``RESULT backend=<name> geo_mean=<x> worst=<y>``, and for ebpf the steps its lost events
flagged.

Usage: .venv/bin/python benchmarks/tracer_overhead.py [--repeats 5] [--cpus 2] [--profile]
       [--backends strace,ebpf]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

from termcredit.sandbox import Sandbox, SandboxSpec, docker_client, ensure_base_image
from termcredit.tracer.protocol import STRACE_FLAGS, traced_syscalls

# A wheel of 40 small modules, written by hand (no build tools, no network), and a git
# repository of 3 commits over a copy of the email package, to install and clone locally.
WHEEL = "/tmp/demo-1.0-py3-none-any.whl"
MAKE_WHEEL = f"""python3 - <<'PY'
import zipfile
with zipfile.ZipFile("{WHEEL}", "w") as z:
    names = []
    for i in range(40):
        name = f"demo/mod{{i}}.py"
        z.writestr(name, "\\n".join(f"def f{{j}}(x):\\n    return x + {{j}}" for j in range(50)))
        names.append(name)
    z.writestr("demo/__init__.py", "")
    meta = "demo-1.0.dist-info/"
    z.writestr(meta + "METADATA", "Metadata-Version: 2.1\\nName: demo\\nVersion: 1.0\\n")
    z.writestr(meta + "WHEEL", "Wheel-Version: 1.0\\nGenerator: hand\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr(meta + "RECORD", "".join(f"{{n}},,\\n" for n in [*names, "demo/__init__.py"]))
PY"""
MAKE_REPO = ("rm -rf /tmp/repo && mkdir /tmp/repo && cd /tmp/repo && git init -q && "
             "git config user.email b@e && git config user.name b && "
             "cp -r /usr/lib/python3.11/email . && git add -A && git commit -qm one && "
             "cp -r /usr/lib/python3.11/json . && git add -A && git commit -qm two && "
             "echo x >> email/utils.py && git commit -qam three")
SETUP = ("rm -rf /tmp/pkg && mkdir -p /tmp/pkg && "
         "cp -r /usr/lib/python3.11/json /usr/lib/python3.11/email /tmp/pkg/ && "
         f"{MAKE_WHEEL} && {MAKE_REPO}")
WORKLOADS = {
    "python imports": "python3 -c 'import json, email.parser, http.client, argparse, csv, "
                      "sqlite3, subprocess, tempfile'",
    "byte-compile pkg": "python3 -m compileall -q -f /tmp/pkg",
    "tar /usr/share/doc": "tar cf /tmp/doc.tar /usr/share/doc",
    "200x echo>f;cat f": "for i in $(seq 200); do echo $i > /tmp/f; cat /tmp/f > /dev/null; done",
    "find /usr -type f": "find /usr -type f > /dev/null",
    "pip install wheel": "rm -rf /tmp/inst && python3 -m pip install -q --no-index --no-deps "
                         f"--no-compile --disable-pip-version-check --target /tmp/inst {WHEEL}",
    "git clone (local)": "rm -rf /tmp/clone && git clone -q file:///tmp/repo /tmp/clone",
}
PROFILES = {  # by-hand strace runs of the same workload (see --profile)
    "strace -c": ["-f", "-c", "--seccomp-bpf", "-e", f"trace={traced_syscalls('agent')}"],
    "flags>null": [*STRACE_FLAGS, "-e", f"trace={traced_syscalls('agent')}"],
    "no -y>null": [*(f for f in STRACE_FLAGS if f != "-y"), "-e",
                   f"trace={traced_syscalls('agent')}"],
}


def timed(workload: str) -> str:
    # the workload runs in a subshell so its own `exit`/cd cannot disturb the timing lines
    return f"__s=$EPOCHREALTIME; ( {workload} ); __e=$EPOCHREALTIME; echo \"$__s $__e\""


def elapsed(stdout: str) -> float:
    """The timing line: the last one of two numbers (a workload may print warnings after it)."""
    for line in reversed(stdout.strip().splitlines()):
        parts = line.split()
        if len(parts) == 2 and all(p.replace(".", "", 1).isdigit() for p in parts):
            return float(parts[1]) - float(parts[0])
    raise ValueError(f"no timing line in {stdout[-500:]!r}")


def exec_timed(sb: Sandbox, workload: str, strace: list[str] | None = None) -> tuple[float, str]:
    """Untraced (``strace`` None) or under a by-hand strace: (seconds, strace -c's table)."""
    argv = ["bash", "-c", timed(workload)]
    if strace is not None:  # on one CPU, as the shim pins its strace and the tracees
        argv = ["taskset", "-c", "0", "strace", *strace, "-o", "/tmp/strace.out", "--", *argv]
    res = sb.container.exec_run(argv)
    assert res.exit_code == 0, res.output
    table = ""
    if strace is not None and "-c" in strace:
        table = sb.container.exec_run(["cat", "/tmp/strace.out"]).output.decode()
    elif strace is not None:
        sb.container.exec_run(["rm", "-f", "/tmp/strace.out"])
    return elapsed(res.output.decode()), table


def stops(table: str) -> int:
    """The calls strace -c counted (its 'total' line)."""
    for line in table.splitlines():
        parts = line.split()
        if parts and parts[-1] == "total":
            return int(parts[3] if len(parts) >= 6 else parts[2])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpus", type=float, default=2.0)
    ap.add_argument("--profile", action="store_true",
                    help="also time strace by hand on each workload (where the time goes)")
    ap.add_argument("--backends", default="strace",
                    help="comma-separated tracers to time side by side: strace, ebpf")
    ap.add_argument("--only", default="", help="run only the workloads whose name has this")
    args = ap.parse_args()
    backends = args.backends.split(",")
    client = docker_client()
    image, run_id = ensure_base_image(client), f"bench-tracer-{int(time.time())}"
    boxes = {b: Sandbox(client, SandboxSpec(image=image, cpus=args.cpus, memory_mb=2048,
                                            tracer=b), run_id) for b in backends}
    sb = boxes[backends[0]]
    ratios: dict[str, dict[str, float]] = {b: {} for b in backends}
    flagged = {b: 0 for b in backends}
    try:
        for box in boxes.values():
            box.run(SETUP, timeout=120)
        for name, work in WORKLOADS.items():
            if args.only not in name:
                continue
            times: dict[str, list[float]] = {k: [] for b in backends for k in (b, "plain " + b)}
            for box in boxes.values():
                box.run(work, timeout=300)  # warm the page cache for all
            for _ in range(args.repeats):
                for b, box in boxes.items():
                    rec = box.run(timed(work), timeout=300)
                    flagged[b] += any("lost" in x for x in rec.integrity)
                    times[b].append(elapsed(rec.stdout))
                    res = box.container.exec_run(["bash", "-c", timed(work)])
                    assert res.exit_code == 0, res.output
                    times["plain " + b].append(elapsed(res.output.decode()))
            cols = []
            for b in backends:
                t, p = statistics.median(times[b]), statistics.median(times["plain " + b])
                ratios[b][name] = t / p
                cols.append(f"{b} {t * 1000:8.1f} ms (untraced {p * 1000:7.1f}) {t / p:5.2f}x")
            print(f"{name:22s} " + "  ".join(cols), flush=True)
            if args.profile:
                profile(sb, name, work, statistics.median(times["plain " + backends[0]]),
                        args.repeats)
    finally:
        for box in boxes.values():
            box.remove()
    if "ebpf" in backends:
        print(f"ebpf: {flagged['ebpf']} step(s) flagged for lost events", flush=True)
    for b in backends:
        r = ratios[b]
        geo = math.exp(sum(math.log(x) for x in r.values()) / len(r))
        label = f"backend={b} " if len(backends) > 1 else ""
        print(f"RESULT {label}geo_mean={geo:.2f} worst={max(r.values()):.2f}")


def profile(sb: Sandbox, name: str, work: str, plain: float, repeats: int) -> None:
    parts, n = [], 0
    for label, flags in PROFILES.items():
        runs = [exec_timed(sb, work, flags) for _ in range(repeats)]
        t = statistics.median(r[0] for r in runs)
        if label == "strace -c":
            n = stops(runs[-1][1])
            parts.append(f"{label} {t / plain:5.2f}x ({n} stops, "
                         f"{(t - plain) / max(n, 1) * 1e6:4.1f} us each)")
        else:
            parts.append(f"{label} {t / plain:5.2f}x")
    print(f"  {'':20s} " + "  ".join(parts), flush=True)


if __name__ == "__main__":
    main()
