"""In-container shim: the traced sessions of one sandbox, driven over stdin/stdout.

This file runs *inside* the sandbox, started by ``docker exec`` when the container is new: a
one-line bootstrap (``BOOTSTRAP`` in shell.py) reads this source from stdin and runs it, so it
is never written into the container's file system. Stdlib only.

Two sessions are made at once, while the container is still pristine: ``agent`` and
``verifier``. Each is ``strace -f ... -o FIFO -- python3 nsinit`` whose init is pid 1 of a new
PID + mount namespace (see nsinit.py) and forks a ``bash`` on request. The shim and strace stay
in the container's own namespaces, where no agent process can see, signal, trace or open them.
The FIFO is unlinked as soon as strace has opened it, so the trace exists only as a pipe.
Under the eBPF tracer a session's strace argv is None: nsinit runs without strace and waits
until the host has registered its pid with the host tracer (``go``; sandbox/host_steps.py),
and a step ends at the shell's state report, its trace lines cut on the host.

Wire protocol (both directions): frames of ``>I`` header length, JSON header, then the raw blobs
whose byte lengths the header lists in ``"blobs"``. Every request names its session ``"s"``.
  start {cwd, env, shell} -> ready + trace        run {seq, cmd, timeout, cap} -> result + out, err, trace
  snapshot {paths, content_cap} -> snapshot      finish {grace} / kill -> finished + trace tail
  watch / unwatch -> watched + trace             put {root, files} + blobs -> put
  collect {root, max_file, max_total} -> collected {entries, left_out} + blobs
  resolve {paths} -> resolved {targets}                                       close
  go -> going (under eBPF: the host traces the session's nsinit, paused until then)
  prepare {declared, workdir} -> prepared {toolchain, notes}    check -> checked {changed}
snapshot and resolve answer for the first paths whose entries fit a bounded reply (at least
one); the host asks again for the rest (shim_files.py).
"""
import json
import os
import select
import struct
import sys
import threading
import time

try:  # imported as part of the package (tests); in the sandbox their sources come first
    from .shim_files import read_tree, resolve, snapshot, write_tree
    from .shim_session import Session, ansi_c_quote  # noqa: F401
except ImportError:
    pass

CFG = json.loads(sys.argv[2]) if __name__ == "__main__" else {}


def send(header, *blobs):
    header = dict(header, blobs=[len(b) for b in blobs])
    raw = json.dumps(header).encode()
    with SEND_LOCK:
        out = sys.stdout.buffer
        out.write(struct.pack(">I", len(raw)) + raw)
        for b in blobs:
            out.write(b)
        out.flush()


SEND_LOCK = threading.Lock()


def read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def recv():
    (n,) = struct.unpack(">I", read_exact(4))
    header = json.loads(read_exact(n))
    return header, [read_exact(size) for size in header.get("blobs", [])]


def handle(sessions, req, blobs):
    s = sessions.get(req.get("s", "agent"))
    op = req["op"]
    if s is None:
        return send({"op": "error", "error": "no session %r" % req.get("s")})
    if op == "go":  # eBPF: the host follows the session's nsinit now
        s.resume()
        return send({"op": "going", "init_pid": s.init_pid})
    if op == "start":
        s.shell = req.get("shell") or s.shell
        s.start(req.get("cwd") or "/", dict(os.environ, **(req.get("env") or {})))
        return send({"op": "ready", "alive": s.alive, "bash_pid": s.bash_pid,
                     "error": None if s.alive else s.start_error,
                     "integrity": s.take_integrity()}, s.take_trace())
    if op == "restart":  # eBPF: the host read where the ended shell stood from its trace
        lost = s.restart(req.get("cwd"))
        return send({"op": "restarted", "lost": lost, "integrity": s.take_integrity()},
                    s.take_trace())
    if op == "run":
        header, out, err, trace = s.run(req["seq"], req["cmd"], req["end"], req["timeout"],
                                        req["cap"])
        return send(header, out, err, trace)
    if op == "snapshot":
        header, parts = snapshot(req["paths"], req.get("content_cap", 1 << 18))
        return send(header, *parts)
    if op == "resolve":
        return send({"op": "resolved", "targets": resolve(req["paths"])})
    if op in ("finish", "kill"):
        tail = s.finish(0.0 if op == "kill" else req.get("grace", 2.0))
        return send({"op": "finished", "integrity": s.take_integrity()}, tail)
    if op == "watch":
        s.watch()
        return send({"op": "watching"})
    if op == "unwatch":
        trace = s.unwatch()
        return send({"op": "watched", "integrity": s.take_integrity()}, trace)
    if op == "prepare":
        return send(s.prepare(req.get("declared") or [], req.get("workdir")))
    if op == "check":
        return send({"op": "checked", "changed": s.check_private()})
    if op == "put":
        s.mount_private(req["root"])
        write_tree(s.root_of(req["root"]), req["files"], blobs)
        return send({"op": "put"})
    if op == "collect":
        entries, parts, left_out = read_tree(s.root_of(req["root"]), req["max_file"],
                                             req["max_total"])
        return send({"op": "collected", "entries": entries, "left_out": left_out}, *parts)
    return send({"op": "error", "error": "unknown op %r" % op})


def protect_harness():
    """Every process here now is the harness's (docker-init, its sleep, this shim; strace and
    the namespace inits inherit it): never the OOM killer's choice. A negative value needs
    CAP_SYS_RESOURCE, which an engine running without it cannot grant a container; then the
    harness stays at 0 and the agent's processes, at +1000 (nsinit.py), still go first.
    Returns the processes it could not protect."""
    failed = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/oom_score_adj" % name, "w") as f:
                    f.write("-1000")
            except OSError:
                failed.append(int(name))
    return failed


def main():
    # SIGPIPE stays ignored (Python's default): a write to a shell that died (bash can crash on
    # its own, e.g. heap corruption after some eval parse errors) must be an EPIPE the session
    # handles by restarting the shell, not a signal that kills the shim and every session with
    # it. A host that went away still ends the shim: EOF on stdin, or a failed send.
    unprotected = protect_harness()
    sessions = {}
    for name, scfg in CFG["sessions"].items():
        sessions[name] = Session(name, scfg["mark"], scfg["strace"], CFG["nsinit"],
                                 CFG.get("pin_cpu"))
    send({"op": "hello", "sessions": {n: s.describe() for n, s in sessions.items()},
          "unprotected": unprotected},
         *[s.take_trace() for s in sessions.values()])
    while True:
        try:
            req, blobs = recv()
        except EOFError:
            break
        if req.get("op") == "close":
            break
        try:
            handle(sessions, req, blobs)
        except Exception as exc:  # noqa: BLE001 - report, keep serving the other session
            send({"op": "error", "error": "%s: %s" % (type(exc).__name__, exc)})
    for s in sessions.values():
        s.kill_namespace()


if __name__ == "__main__":
    main()
