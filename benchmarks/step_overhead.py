"""Per-step harness overhead of the traced persistent shell, side by side with `docker exec`.

step_overhead_ms: median host wall time of Sandbox.run("/bin/true") minus the command's own time
                  (the same /bin/true run untraced by bash inside the same container, per call).
docker_exec_ms:   median host wall time of a plain `docker exec` of /bin/true (docker SDK).
reset_ms:         median time the rollout loop waits in SandboxPool.acquire with the pool warm.

``--profile`` splits a step: the shim's own measure of it (script written to end marker
seen), the rest of the host's wall time (transport, framing, the host's checks), and the marker
protocol run by bash alone in the same container, 200 steps of the very line the shim writes
(markers, the command, the shell-state report) untraced, untraced but read from a pipe as the
shim feeds it (bash reads a pipe a byte at a time), under the product's strace flags, the same
inside a PID namespace of its own as the agent's shell runs (strace then translates each new
process's pid), that without ``--pidns-translation``, and under ``strace -c`` (traced calls
per step); strace pinned to one CPU as the shim pins it.

Usage: .venv/bin/python benchmarks/step_overhead.py [--n 200] [--block 20] [--profile]
       [--tracer strace|ebpf|strace,ebpf]
With both tracers, blocks of each alternate in one run and each prints its own
``RESULT backend=<name> step_overhead_ms=...`` line.
Goal: step overhead <= 3 ms, reset <= 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time

from termcredit.sandbox import Sandbox, SandboxPool, SandboxSpec, docker_client, ensure_base_image
from termcredit.sandbox.shim_session import INIT_SCRIPT, command_script
from termcredit.tracer.protocol import STRACE_FLAGS, traced_syscalls

PROTOCOL_STEPS = 200


def protocol_script() -> str:
    """bash alone running PROTOCOL_STEPS steps of /bin/true as the shim writes them; prints the
    mean ms per step."""
    mark = "/__termcredit__/0123abcd"
    lines = [INIT_SCRIPT % mark, "exec 3>/dev/null", "__s=$EPOCHREALTIME"]
    lines += [command_script(mark, i, "/bin/true", "f00d").rstrip("\n")
              for i in range(1, PROTOCOL_STEPS + 1)]
    lines.append(f'__e=$EPOCHREALTIME; echo "$__s $__e"')
    return "\n".join(lines) + "\n"


def profile_protocol(sb: Sandbox) -> dict[str, float]:
    """ms per step of the marker protocol in bash, each way of running it (see the module's
    note), and the traced calls per step."""
    script = f"cat > /tmp/steps.sh <<'__TC_EOF__'\n{protocol_script()}__TC_EOF__\n"
    assert sb.container.exec_run(["bash", "-c", script]).exit_code == 0
    flags = [*STRACE_FLAGS, "-e", f"trace={traced_syscalls('agent')}", "-o", "/dev/null"]
    strace = ["taskset", "-c", "0", "strace"]
    pidns = ["unshare", "-p", "-f", "--mount-proc"]  # the agent's own PID namespace, as nsinit
    bash = ["bash", "/tmp/steps.sh"]
    ways = {
        "untraced": bash,
        "piped": ["bash", "-c", "cat /tmp/steps.sh | bash"],  # bash reads a pipe byte by byte
        "traced": [*strace, *flags, *bash],
        "traced_pidns": [*strace, *flags, *pidns, *bash],  # + pid translation per new process
        "traced_pidns_raw": [*strace, *(f for f in flags if f != "--pidns-translation"),
                             *pidns, *bash],
    }
    out: dict[str, list[float]] = {k: [] for k in ways}
    for _ in range(3):
        for key, argv in ways.items():
            res = sb.container.exec_run(argv)
            start, end = res.output.decode().split()[-2:]
            out[key].append((float(end) - float(start)) * 1000 / PROTOCOL_STEPS)
    count = [*strace, "-f", "-q", "-c", "--seccomp-bpf", "-e",
             f"trace={traced_syscalls('agent')}", "-o", "/tmp/c.txt"]
    sb.container.exec_run([*count, *bash])
    table = sb.container.exec_run(["cat", "/tmp/c.txt"]).output.decode().split()
    calls = int(table[table.index("total") - 2]) if "total" in table else 0
    prof = {f"bash_{k}_ms": statistics.median(v) for k, v in out.items()}
    prof["stops_per_step"] = calls / PROTOCOL_STEPS
    return prof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="steps per method")
    ap.add_argument("--resets", type=int, default=12)
    ap.add_argument("--profile", action="store_true", help="where a step's time goes")
    ap.add_argument("--block", type=int, default=20,
                    help="steps per block, traced and docker exec blocks alternating (1: per call)")
    ap.add_argument("--tracer", default="strace",
                    help="what traces the sandbox: strace, ebpf (the host tracer, started "
                    "first), or both comma-separated (blocks of each alternate in one run)")
    args = ap.parse_args()
    tracers = args.tracer.split(",")
    if not tracers or any(t not in ("strace", "ebpf") for t in tracers):
        ap.error(f"--tracer: strace, ebpf or both, not {args.tracer!r}")

    client = docker_client()
    image = ensure_base_image(client)
    run_id = f"bench-step-{int(time.time())}"
    boxes = {t: Sandbox(client, SandboxSpec(image=image, tracer=t), run_id) for t in tracers}
    first = boxes[tracers[0]]
    traced: dict[str, list[float]] = {t: [] for t in tracers}
    in_shim: dict[str, list[float]] = {t: [] for t in tracers}
    plain: list[float] = []
    try:
        # the command's own time: /bin/true forked+exec'd by bash, untraced, same container
        loop = first.container.exec_run(
            ["bash", "-c", f"s=$(date +%s%N); for i in $(seq {args.n}); do /bin/true; done; "
             "e=$(date +%s%N); echo $(( (e - s) / 1000 ))"])
        own_ms = int(loop.output.decode().strip()) / 1000 / args.n

        for _ in range(10):  # warm every path
            for sb in boxes.values():
                sb.run("/bin/true")
            first.container.exec_run(["/bin/true"])
        # alternate blocks, so drift in machine load hits every method alike; a block, not a
        # call: the work docker does after an exec returns (runc, containerd) would land on
        # the next step
        for _ in range(0, args.n, args.block):
            for t, sb in boxes.items():
                for _ in range(args.block):
                    t0 = time.perf_counter()
                    rec = sb.run("/bin/true")
                    traced[t].append((time.perf_counter() - t0) * 1000)
                    in_shim[t].append(rec.duration_s * 1000)
                    assert rec.exit_code == 0 and "execve(" in rec.trace
            for _ in range(args.block):
                t0 = time.perf_counter()
                assert first.container.exec_run(["/bin/true"]).exit_code == 0
                plain.append((time.perf_counter() - t0) * 1000)
        prof = profile_protocol(first) if args.profile else None
    finally:
        for sb in boxes.values():
            sb.remove()

    spec = first.spec
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

    exec_ms = statistics.median(plain)
    reset_ms = statistics.median(waits)
    print(f"/bin/true own time, untraced:          {own_ms:.2f} ms")
    print(f"docker exec wall (median of {args.n}): {exec_ms:.2f} ms "
          f"(p90 {statistics.quantiles(plain, n=10)[-1]:.2f})")
    print(f"pool acquire, warm (median of {args.resets}, {tracers[0]}): {reset_ms:.2f} ms")
    for t in tracers:
        step_ms = statistics.median(traced[t]) - own_ms
        print(f"[{t}] traced step wall (median of {args.n}): {statistics.median(traced[t]):.2f} "
              f"ms (p90 {statistics.quantiles(traced[t], n=10)[-1]:.2f}); in the shim "
              f"(script written -> end marker seen) {statistics.median(in_shim[t]):.2f} ms; "
              f"docker exec / step overhead {exec_ms / max(step_ms, 1e-6):.1f}x")
        label = f"backend={t} " if len(tracers) > 1 else ""
        print(f"RESULT {label}step_overhead_ms={step_ms:.2f} docker_exec_ms={exec_ms:.2f} "
              f"reset_ms={reset_ms:.2f}")
    if prof is not None:
        shim = statistics.median(in_shim[tracers[0]])
        print(f"  [{tracers[0]}] host and transport: "
              f"{statistics.median(traced[tracers[0]]) - shim:.2f} ms")
        print(f"  the protocol in bash alone, per step: untraced {prof['bash_untraced_ms']:.2f} ms"
              f" (from a pipe {prof['bash_piped_ms']:.2f}); traced {prof['bash_traced_ms']:.2f} ms"
              f" ({prof['stops_per_step']:.1f} traced calls); traced in a PID namespace "
              f"{prof['bash_traced_pidns_ms']:.2f} ms (without --pidns-translation "
              f"{prof['bash_traced_pidns_raw_ms']:.2f}); the shim's own part is about "
              f"{shim - prof['bash_traced_pidns_ms']:.2f} ms")


if __name__ == "__main__":
    main()
