"""Host side of the traced sessions: talks to ``shim.py`` over one ``docker exec`` socket.

Everything that comes out of the container is untrusted: frame sizes are capped before they are
read, every field is checked, file contents are accepted only when their hash matches, and no
string from the container is ever used to build a host path here.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..rawtext import from_bytes
from ..records import CommandRecord, FileState
from ..tracer.protocol import exit_cwd, marker_dir, strace_argv
from .host_steps import HostSession, follow_sessions

_HERE = Path(__file__).parent
# pristine.py's definitions first: nsinit.py ends by running its main(); the verifier's
# import guard travels as text, for pristine.py to write into the verifier's root
NSINIT_SOURCE = "\n".join(
    [f"GUARD_SOURCE = {(_HERE / 'verifier_guard.py').read_text()!r}"]
    + [(_HERE / name).read_text() for name in ("pristine.py", "nsinit.py")])
# definitions first, each after what it uses (shim.py last): the package imports fail in the
# sandbox, where the sources are one module
SHIM_SOURCE = "\n".join((_HERE / name).read_text() for name in (
    "shim_state.py", "shim_files.py", "shim_protocol.py", "shim_procs.py", "shim_trace.py",
    "shim_verifying.py", "shim_session.py", "shim.py")).encode()
# Reads argv[1] bytes of shim source from stdin, then runs it; stdin then carries the protocol.
BOOTSTRAP = (
    "import os,sys\nn=int(sys.argv[1]);s=b''\nwhile len(s)<n:s+=os.read(0,n-len(s))\n"
    "exec(compile(s,'termcredit-shim','exec'),{'__name__':'__main__'})"
)

SESSIONS = ("agent", "verifier")
MAX_HEADER = 1 << 20  # bytes of JSON in one frame header
MAX_TRACE = 80 << 20  # bytes of trace in one frame (a step's is cut to 20 MiB in the shim)
# paths in one snapshot/resolve request; the shim answers for those that fit its reply cap
REQUEST_PATHS, REQUEST_BYTES = 8192, 1 << 20
_HEX64 = re.compile(r"[0-9a-f]{64}")
_KINDS = {"file", "dir", "symlink", "missing", "other", "unreadable"}


_SHELL_KINDS = ("var", "export", "array", "function", "alias", "option", "unset")
MAX_SHELL_CHANGES = 4096


def _shell_changes(raw: Any) -> dict[str, str] | None:
    """The shim's report of what a command changed in the shell's own state (untrusted: the
    agent's bash wrote it). Malformed -> None, as if unreported."""
    if not isinstance(raw, dict) or len(raw) > MAX_SHELL_CHANGES:
        return None
    for name, value in raw.items():
        if not (isinstance(name, str) and isinstance(value, str) and 0 < len(name) <= 256
                and len(value) <= 64 and value.partition(":")[0] in _SHELL_KINDS):
            return None
    return dict(sorted(raw.items()))


class ShellError(RuntimeError):
    """The traced shell could not be started, stopped answering, or broke the protocol."""


class ShellUnavailable(RuntimeError):
    """The shim answered, whole, that the session's shell could not run: its program is gone
    or no pid was left for it. The shim, strace and the namespace inits were made before the
    agent ran and need nothing new of the container (pids, memory, files) to answer, so after
    the agent has run this is the agent's doing, not an infrastructure failure."""


@dataclass
class _Frame:
    header: dict[str, Any]
    blobs: list[bytes]


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise ShellError(f"sandbox sent a malformed frame: {what}")


class _DockerStream:
    """Demultiplexes a non-tty ``docker exec`` attach stream (8-byte frame headers)."""

    STDERR_KEEP = 1 << 16

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.stdout = bytearray()
        self.stderr = bytearray()

    def _pump(self, deadline: float) -> None:
        hdr = self._recv(8, deadline)
        kind, size = hdr[0], struct.unpack(">I", hdr[4:])[0]
        data = self._recv(size, deadline)
        if kind == 2:
            self.stderr.extend(data)
            del self.stderr[: max(0, len(self.stderr) - self.STDERR_KEEP)]
        else:
            self.stdout.extend(data)

    def _recv(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from the sandbox shell")
            self.sock.settimeout(left)
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ShellError("sandbox shell closed its stream" + self.diag())
            buf += chunk
        return bytes(buf)

    def diag(self) -> str:
        text = self.stderr.decode("utf-8", "replace").strip()
        return f": {text[-2000:]}" if text else ""

    def read_stdout(self, n: int, deadline: float) -> bytes:
        while len(self.stdout) < n:
            self._pump(deadline)
        data = bytes(self.stdout[:n])
        del self.stdout[:n]
        return data

    def read_frame(self, deadline: float, max_blobs: int, max_total: int) -> _Frame:
        (n,) = struct.unpack(">I", self.read_stdout(4, deadline))
        _require(n <= MAX_HEADER, f"header of {n} bytes")
        try:
            header = json.loads(self.read_stdout(n, deadline))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ShellError(f"sandbox sent a malformed frame: {exc}") from exc
        _require(isinstance(header, dict), "header is not an object")
        sizes = header.get("blobs", [])
        _require(isinstance(sizes, list) and len(sizes) <= max_blobs
                 and all(type(s) is int and s >= 0 for s in sizes), "blob list")
        _require(sum(sizes) <= max_total, f"{sum(sizes)} bytes of blobs (limit {max_total})")
        return _Frame(header, [self.read_stdout(size, deadline) for size in sizes])


def _reasons(value: Any) -> list[str]:
    _require(isinstance(value, list) and len(value) <= 64
             and all(isinstance(r, str) and len(r) <= 500 for r in value), "integrity")
    return list(value)


def shim_config(nonces: dict[str, str], pin_cpu: int | None,
                tracer: str = "strace") -> dict[str, Any]:
    """The shim's start-up settings (its argv[2]): each session's strace argv (None: traced
    from the host, host_steps.py) and marker directory come from the protocol module, which
    the shim itself cannot import."""
    return {"sessions": {name: {"mark": marker_dir(nonce),
                                "strace": strace_argv(name) if tracer == "strace" else None}
                         for name, nonce in nonces.items()},
            "pin_cpu": pin_cpu, "nsinit": NSINIT_SOURCE}


class ShimConnection:
    """One shim per sandbox, started while the container is pristine; it holds two traced
    sessions, ``agent`` and ``verifier``, each in its own PID + mount namespace."""

    def __init__(self, api: Any, container_id: str, *, workdir: str | None = None,
                 env: dict[str, str] | None = None, pin_cpu: int | None = None,
                 start_timeout: float = 60.0, tracer: str = "strace"):
        self.nonces = {name: secrets.token_hex(8) for name in SESSIONS}
        self.lock = threading.Lock()
        self.closed = False
        self.host: dict[str, HostSession] = {}  # under eBPF: each session's lines
        cfg = shim_config(self.nonces, pin_cpu, tracer)
        exec_id = api.exec_create(
            container_id, ["python3", "-c", BOOTSTRAP, str(len(SHIM_SOURCE)), json.dumps(cfg)],
            stdin=True, stdout=True, stderr=True, tty=False, environment=env or None,
            workdir=workdir or None,
        )["Id"]
        # keep the SDK's object too: when it is collected it closes the socket under us
        self._raw = api.exec_start(exec_id, socket=True)
        self._sock: socket.socket = getattr(self._raw, "_sock", self._raw)
        self._stream = _DockerStream(self._sock)
        self._sock.sendall(SHIM_SOURCE)
        try:
            hello = self._stream.read_frame(time.monotonic() + start_timeout, len(SESSIONS),
                                            MAX_TRACE)
        except (TimeoutError, ShellError) as exc:
            self.close()
            raise ShellError(f"traced shell did not start in {container_id[:12]}: {exc}") from exc
        if hello.header.get("op") != "hello":
            self.close()
            raise ShellError("traced shell did not start in "
                             f"{container_id[:12]}: {hello.header.get('error', hello.header)}"
                             + self._stream.diag())
        self.startup = {name: blob.decode("utf-8", "replace")
                        for name, blob in zip(SESSIONS, hello.blobs)}
        if tracer == "ebpf":
            self._follow(api, container_id, hello.header.get("sessions"))

    def _follow(self, api: Any, container_id: str, described: Any) -> None:
        """Have the host tracer follow both sessions' nsinits, then let them go on."""
        try:
            _require(isinstance(described, dict), "sessions")
            self.host = follow_sessions(api, container_id, described,
                                        {n: marker_dir(self.nonces[n]) for n in SESSIONS})
            for name in SESSIONS:
                frame = self.request({"op": "go", "s": name}, timeout=60, max_blobs=0,
                                     max_total=0)
                _require(frame.header.get("op") == "going", "go")
        except Exception:
            self.close()
            raise

    def request(self, req: dict[str, Any], blobs: tuple[bytes, ...] = (), *, timeout: float,
                max_blobs: int, max_total: int) -> _Frame:
        raw = json.dumps({**req, "blobs": [len(b) for b in blobs]}).encode()
        with self.lock:
            if self.closed:
                raise ShellError("the sandbox shell is closed")
            self._sock.sendall(struct.pack(">I", len(raw)) + raw + b"".join(blobs))
            frame = self._stream.read_frame(time.monotonic() + timeout, max_blobs, max_total)
        if frame.header.get("op") == "error":
            raise ShellError(str(frame.header.get("error"))[:2000])
        return frame

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for host in self.host.values():
            host.abandon()
        try:
            raw = json.dumps({"op": "close"}).encode()
            self._sock.sendall(struct.pack(">I", len(raw)) + raw)
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass


class TracedShell:
    """One persistent ``bash`` under ``strace -f``, in its own namespaces, inside a container.

    ``run`` sends one command and returns its stdout, stderr, exit code, duration and the raw
    strace lines from its start marker to its end marker. cwd, variables and functions carry
    over between commands because they all run in the same shell (via ``eval``).
    """

    def __init__(self, conn: ShimConnection, role: str):
        self.conn, self.role = conn, role
        self.nonce = conn.nonces[role]
        self.seq = 0
        self.session_trace: list[str] = [conn.startup[role]]
        self.integrity: list[str] = []  # session-level reasons (outside any command)
        self.started = False
        self.collect_left_out = 0  # entries the last collect left out (past the shim's cap)
        self.shell_path: str | None = None  # the shell's program (None: ``bash`` on PATH)
        self.lost: str | None = None  # why the shell could not be restarted after a command

    def _host(self) -> HostSession | None:
        """Under eBPF: this session's lines from the host tracer (a remote connection has
        none: the eBPF tracer follows local sandboxes only, see tracer/choice.py)."""
        return getattr(self.conn, "host", {}).get(self.role)

    @property
    def marker_dir(self) -> str:
        return marker_dir(self.nonce)

    def _req(self, op: str, *, wait: float = 60.0, max_blobs: int = 1, limit: int = MAX_TRACE,
             blobs: tuple[bytes, ...] = (), **fields: Any) -> _Frame:
        """One request; the answer may hold at most ``max_blobs`` blobs of ``limit`` bytes."""
        return self.conn.request({"op": op, "s": self.role, **fields}, blobs, timeout=wait,
                                 max_blobs=max_blobs, max_total=limit)

    def start(self, *, cwd: str | None = None, env: dict[str, str] | None = None) -> None:
        frame = self._req("start", cwd=cwd, env=env or {}, shell=self.shell_path)
        self.integrity += _reasons(frame.header.get("integrity", []))
        self.session_trace.append(frame.blobs[0].decode("utf-8", "replace"))
        if frame.header.get("alive") is not True:
            why = frame.header.get("error")
            raise ShellUnavailable(f"the {self.role} shell did not start: "
                                   + (why[:2000] if isinstance(why, str) else "no reason given"))
        self.started = True

    def run(self, command: str, *, timeout: float = 60.0, output_cap: int = 65536) -> CommandRecord:
        self.seq += 1
        token = secrets.token_hex(8)
        out_max = output_cap + 3 * 4096 + 128
        # the shim enforces `timeout`; ours only guards against a wedged shim
        frame = self._req("run", seq=self.seq, cmd=command, end=token, timeout=timeout,
                          cap=output_cap, wait=timeout + 30, max_blobs=3,
                          limit=2 * out_max + MAX_TRACE)
        h = frame.header
        _require(h.get("op") == "result" and h.get("seq") == self.seq and len(frame.blobs) == 3,
                 "not this command's result")
        _require(type(h.get("exit_code")) is int and isinstance(h.get("duration_s"), (int, float))
                 and all(isinstance(h.get(k), bool) for k in ("timed_out", "shell_restarted")),
                 "result fields")
        out, err, trace = frame.blobs
        _require(len(out) <= out_max and len(err) <= out_max, "output over its cap")
        lost = h.get("shell_lost")
        _require(lost is None or (isinstance(lost, str) and len(lost) <= 2000), "shell_lost")
        self.lost = lost
        trace_text = from_bytes(trace)
        integrity, dropped = _reasons(h.get("integrity", [])), h.get("trace_dropped")
        host = self._host()
        if host is not None:  # eBPF: the step's lines from the host, not from the shim
            step = host.step(self.seq, token, h.get("ended") is True)
            trace_text, dropped, integrity = step.text, step.dropped, integrity + step.flags
            if step.exit_code is not None:
                h["exit_code"] = step.exit_code
            if h.get("restart") == "pending":  # the shell ended: restart it where it stood
                integrity += self._restart(exit_cwd(trace_text, self.nonce))
        self.session_trace.append(trace_text)
        return CommandRecord(  # output as it was: bytes not UTF-8 kept (rawtext.py)
            command=command, seq=self.seq, stdout=from_bytes(out), stderr=from_bytes(err),
            exit_code=h["exit_code"], duration_s=float(h["duration_s"]),
            timed_out=h["timed_out"],
            output_truncated=bool(h.get("stdout_dropped") or h.get("stderr_dropped")),
            shell_restarted=h["shell_restarted"], trace=trace_text, end_token=token,
            trace_dropped=dropped if type(dropped) is int else 0,
            integrity=integrity,
            shell=_shell_changes(h.get("shell")),
            cwd=h["cwd"] if isinstance(h.get("cwd"), str) and len(h["cwd"]) <= 4096 else None,
        )

    def _restart(self, cwd: str | None) -> list[str]:
        """Under eBPF the shim cannot see the EXIT trap's cwd: the host read it from the
        step's lines (``cwd``; None where the trap did not run) and has the shell restarted
        there. Sets why the shell was lost (None: it runs); returns the shim's flags. (The
        result's cwd stays None, as under strace: the shell that ran the command is gone.)"""
        frame = self._req("restart", cwd=cwd)
        lost = frame.header.get("lost")
        _require(lost is None or (isinstance(lost, str) and len(lost) <= 2000), "lost")
        self.lost = lost
        return _reasons(frame.header.get("integrity", []))

    def _batches(self, paths: list[str]) -> list[list[str]]:
        """Requests of at most REQUEST_PATHS paths and REQUEST_BYTES of names each."""
        out: list[list[str]] = []
        size = 0
        for path in paths:
            if not out or size + len(path) > REQUEST_BYTES or len(out[-1]) >= REQUEST_PATHS:
                out.append([])
                size = 0
            out[-1].append(path)
            size += len(path)
        return out

    def snapshot(self, paths: list[str], *, content_cap: int = 1 << 18) -> list[FileState]:
        """Hash (and, for UTF-8 text up to ``content_cap`` bytes, keep) each path as it is now.
        The shim answers for as many paths as fit its bounded reply; the rest are asked again."""
        out: list[FileState] = []
        for batch in self._batches(list(paths)):
            while batch:
                frame = self._req("snapshot", paths=batch, content_cap=content_cap,
                                  max_blobs=len(batch), limit=len(batch) * (content_cap + 1))
                entries = frame.header.get("entries")
                _require(isinstance(entries, list) and 0 < len(entries) <= len(batch)
                         and len(frame.blobs) == len(entries), "snapshot entries")
                out += [_file_state(path, entry, blob, content_cap)
                        for path, entry, blob in zip(batch, entries, frame.blobs)]
                batch = batch[len(entries):]
        return out

    def resolve(self, paths: list[str]) -> dict[str, list[str]]:
        """path -> the files the kernel runs for it (symlink target, ``#!`` interpreter)."""
        found: dict[str, list[str]] = {}
        for batch in self._batches(list(paths)):
            while batch:
                frame = self._req("resolve", paths=batch, max_blobs=0, limit=0)
                targets = frame.header.get("targets")
                _require(isinstance(targets, list) and 0 < len(targets) <= len(batch) and all(
                    isinstance(t, list) and len(t) <= 2 and all(
                        isinstance(x, str) and x.startswith("/") and len(x) <= 4096 for x in t)
                    for t in targets), "resolve")
                found.update((p, t) for p, t in zip(batch, targets) if t)
                batch = batch[len(targets):]
        return found

    def finish(self, grace: float = 2.0) -> str:
        """End the shell and every process of its namespace (after up to ``grace`` s for them
        to finish); returns the trace written after the last command."""
        return self._end("finish", grace)

    def kill(self) -> str:
        """End the namespace now (every agent process); returns the rest of its trace."""
        return self._end("kill", 0.0)

    def _end(self, op: str, grace: float) -> str:
        frame = self._req(op, grace=grace, wait=grace + 30)
        self.integrity += _reasons(frame.header.get("integrity", []))
        tail = frame.blobs[0].decode("utf-8", "replace")
        host = self._host()
        if host is not None:  # the namespace is gone: the rest of its lines
            tail += host.close()
        self.session_trace.append(tail)
        return tail

    def watch(self) -> None:
        """Keep tracing this session's processes in the background (during verification)."""
        self._req("watch", max_blobs=0, limit=0)

    def unwatch(self) -> str:
        frame = self._req("unwatch")
        self.integrity += _reasons(frame.header.get("integrity", []))
        host = self._host()
        if host is not None:
            return host.rest()
        return frame.blobs[0].decode("utf-8", "replace")

    def prepare(self, *, declared: list[str], workdir: str) -> dict[str, Any]:
        """The verifier's own root, made now: the image's toolchain, the agent's other files,
        private /tests and /logs/verifier (sandbox/pristine.py). Returns {toolchain, notes}."""
        frame = self._req("prepare", declared=list(declared), workdir=workdir, max_blobs=0,
                          limit=0, wait=330)
        h = frame.header
        _require(h.get("op") == "prepared" and h.get("toolchain") in ("image", "agent")
                 and isinstance(h.get("notes"), list), "prepare")
        return {"toolchain": h["toolchain"],
                "notes": [str(n)[:300] for n in h["notes"][:100]]}

    def check_private(self) -> list[str]:
        """The private folders (/tests, /logs/verifier) that are no longer the ones mounted."""
        frame = self._req("check", max_blobs=0, limit=0)
        changed = frame.header.get("changed")
        _require(isinstance(changed, list) and all(isinstance(p, str) for p in changed), "check")
        return changed

    def put_tree(self, root: str, files: list[tuple[str, int, bytes]]) -> None:
        """Write (relative path, mode, bytes) files into a private folder of this session."""
        self._req("put", root=root, files=[{"path": p, "mode": m} for p, m, _ in files],
                  blobs=tuple(b for _, _, b in files), max_blobs=0, limit=0, wait=120)

    def collect(self, root: str, *, max_file: int, max_total: int) -> list[tuple[dict[str, Any], bytes]]:
        """Regular files of a private folder (capped); other kinds come with empty content.
        Entries past the shim's count cap are left out (``collect_left_out`` says how many)."""
        frame = self._req("collect", root=root, max_file=max_file, max_total=max_total,
                          max_blobs=10000, limit=max_total, wait=120)
        entries, left_out = frame.header.get("entries"), frame.header.get("left_out", 0)
        _require(isinstance(entries, list) and len(entries) == len(frame.blobs)
                 and type(left_out) is int and left_out >= 0, "collect")
        self.collect_left_out = left_out
        for e, blob in zip(entries, frame.blobs):
            _require(isinstance(e, dict) and isinstance(e.get("path"), str)
                     and e.get("kind") in ("file", "symlink", "other")
                     and len(blob) <= max_file, "collected entry")
        return list(zip(entries, frame.blobs))

    def close(self) -> None:
        self.conn.close()


def _file_state(path: str, entry: Any, blob: bytes, content_cap: int) -> FileState:
    _require(isinstance(entry, dict) and entry.get("path") == path
             and entry.get("kind") in _KINDS, f"snapshot entry for {path!r}")
    sha = entry.get("sha256")
    _require(sha is None or (isinstance(sha, str) and _HEX64.fullmatch(sha) is not None),
             "sha256 is not 64 hex characters")
    size, mode, target = entry.get("size", 0), entry.get("mode"), entry.get("target")
    _require(isinstance(entry.get("partial", False), bool), "partial")
    _require(type(size) is int and size >= 0 and (mode is None or (type(mode) is int
             and 0 <= mode <= 0o7777)) and (target is None or (isinstance(target, str)
             and len(target) <= 4096)) and len(blob) <= content_cap + 1, "snapshot fields")
    content = None
    if blob:
        # content is accepted only as the whole file, under the hash the host computes
        _require(hashlib.sha256(blob).hexdigest() == sha, "content does not match its hash")
        try:
            content = blob.decode("utf-8")
        except UnicodeDecodeError:
            content = None
    return FileState(path=path, kind=entry["kind"], size=size, sha256=sha, mode=mode,
                     target=target, text=bool(entry.get("text")), content=content,
                     partial=bool(entry.get("partial")))
