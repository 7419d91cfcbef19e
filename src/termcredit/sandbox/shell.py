"""Host side of the traced persistent shell: talks to ``shim.py`` over a ``docker exec`` socket."""

from __future__ import annotations

import json
import secrets
import socket
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..records import FileState, ShellResult

SHIM_SOURCE = (Path(__file__).with_name("shim.py")).read_bytes()
# Reads argv[1] bytes of shim source from stdin, then runs it; stdin then carries the protocol.
BOOTSTRAP = (
    "import os,sys\nn=int(sys.argv[1]);s=b''\nwhile len(s)<n:s+=os.read(0,n-len(s))\n"
    "exec(compile(s,'termcredit-shim','exec'),{'__name__':'__main__'})"
)

# Flags: reference/tracing.md §0. -y removes the fd table, -X raw makes flags bit tests,
# --seccomp-bpf stops the tracee only on the lean syscall set below.
TRACED_SYSCALLS = (
    "open,openat,openat2,creat,rename,renameat,renameat2,unlink,unlinkat,rmdir,"
    "link,linkat,symlink,symlinkat,mkdir,mkdirat,mknod,mknodat,truncate,ftruncate,"
    "execve,execveat,clone,clone3,fork,vfork,chdir,fchdir,"
    "utimensat,fchmodat,chmod,fchownat,chown,lchown,utime,utimes,futimesat"
)
STRACE_ARGV = [
    "strace", "-f", "-q", "-e", "signal=none", "--seccomp-bpf", "-y", "-X", "raw", "-ttt",
    "-s", "4096", "-e", f"trace={TRACED_SYSCALLS}", "-o",
]
MARKER_ROOT = "/__termcredit__"


class ShellError(RuntimeError):
    """The traced shell could not be started or stopped answering."""


@dataclass
class _Frame:
    header: dict[str, Any]
    blobs: list[bytes]


class _DockerStream:
    """Demultiplexes a non-tty ``docker exec`` attach stream (8-byte frame headers)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.stdout = bytearray()
        self.stderr = bytearray()

    def _pump(self, deadline: float) -> None:
        hdr = self._recv(8, deadline)
        kind, size = hdr[0], struct.unpack(">I", hdr[4:])[0]
        data = self._recv(size, deadline)
        (self.stderr if kind == 2 else self.stdout).extend(data)

    def _recv(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from the sandbox shell")
            self.sock.settimeout(left)
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ShellError("sandbox shell closed its stream" + self._diag())
            buf += chunk
        return bytes(buf)

    def _diag(self) -> str:
        text = self.stderr.decode("utf-8", "replace").strip()
        return f": {text[-2000:]}" if text else ""

    def read_stdout(self, n: int, deadline: float) -> bytes:
        while len(self.stdout) < n:
            self._pump(deadline)
        data = bytes(self.stdout[:n])
        del self.stdout[:n]
        return data

    def read_frame(self, deadline: float) -> _Frame:
        (n,) = struct.unpack(">I", self.read_stdout(4, deadline))
        header = json.loads(self.read_stdout(n, deadline))
        blobs = [self.read_stdout(size, deadline) for size in header.get("blobs", [])]
        return _Frame(header, blobs)


class TracedShell:
    """One persistent ``bash`` under ``strace -f`` inside a running container.

    ``pin_cpu`` (an index into the CPUs the container may use) pins strace and the shell to one
    CPU: on small VMs ptrace stops that cross CPUs cost 2-4x more (reference/tracing.md §2).

    ``run`` sends one command and returns its stdout, stderr, exit code, duration and the raw
    strace lines from its start marker to its end marker. cwd, variables and functions carry
    over between commands because they all run in the same shell (via ``eval``).
    """

    def __init__(self, api: Any, container_id: str, *, workdir: str | None = None,
                 env: dict[str, str] | None = None, pin_cpu: int | None = None,
                 start_timeout: float = 30.0):
        self.nonce = secrets.token_hex(8)
        self.seq = 0
        self.session_trace: list[str] = []
        cfg = {"nonce": self.nonce, "strace": STRACE_ARGV, "cwd": workdir, "pin_cpu": pin_cpu}
        exec_id = api.exec_create(
            container_id, ["python3", "-c", BOOTSTRAP, str(len(SHIM_SOURCE)), json.dumps(cfg)],
            stdin=True, stdout=True, stderr=True, tty=False, environment=env or None,
            workdir=workdir or None,
        )["Id"]
        raw = api.exec_start(exec_id, socket=True)
        self._sock: socket.socket = getattr(raw, "_sock", raw)
        self._stream = _DockerStream(self._sock)
        self._sock.sendall(SHIM_SOURCE)
        try:
            ready = self._stream.read_frame(time.monotonic() + start_timeout)
        except (TimeoutError, ShellError) as exc:
            self.close()
            raise ShellError(f"traced shell did not start in {container_id[:12]}: {exc}") from exc
        if not ready.header.get("alive"):
            raise ShellError("strace/bash failed to start in the sandbox" + self._stream._diag())
        self.session_trace.append(ready.blobs[0].decode("utf-8", "replace"))
        self.closed = False

    @property
    def marker_dir(self) -> str:
        return f"{MARKER_ROOT}/{self.nonce}"

    def run(self, command: str, *, timeout: float = 60.0, output_cap: int = 65536) -> ShellResult:
        self.seq += 1
        req = {"op": "run", "seq": self.seq, "cmd": command, "timeout": timeout, "cap": output_cap}
        self._send(req)
        # the shim enforces `timeout`; ours only guards against a wedged shim
        frame = self._stream.read_frame(time.monotonic() + timeout + 30)
        h = frame.header
        if h["op"] == "error":
            raise ShellError(h["error"])
        out, err, trace = frame.blobs
        trace_text = trace.decode("utf-8", "replace")
        self.session_trace.append(trace_text)
        return ShellResult(
            command=command,
            seq=self.seq,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            exit_code=int(h["exit_code"]),
            duration_s=float(h["duration_s"]),
            timed_out=bool(h["timed_out"]),
            output_truncated=bool(h["stdout_dropped"] or h["stderr_dropped"]),
            shell_restarted=bool(h["shell_restarted"]),
            trace=trace_text,
        )

    def snapshot(self, paths: list[str], *, content_cap: int = 1 << 18) -> list[FileState]:
        """Hash (and, for UTF-8 text up to ``content_cap`` bytes, keep) each path as it is now."""
        self._send({"op": "snapshot", "paths": list(paths), "content_cap": content_cap})
        frame = self._stream.read_frame(time.monotonic() + 60)
        states = []
        for entry, blob in zip(frame.header["entries"], frame.blobs):
            known = {k: entry[k] for k in ("kind", "size", "sha256", "mode", "target", "text")
                     if k in entry}
            states.append(FileState(path=entry["path"], content=blob.decode() if blob else None,
                                    **known))
        return states

    def finish(self, grace: float = 2.0) -> str:
        """End the shell, letting background jobs run up to ``grace`` s; returns the trace
        lines written after the last command (late writes of background jobs). ``snapshot``
        still works afterwards; ``run`` does not."""
        self._send({"op": "finish", "grace": grace})
        frame = self._stream.read_frame(time.monotonic() + grace + 30)
        tail = frame.blobs[0].decode("utf-8", "replace")
        self.session_trace.append(tail)
        return tail

    def _send(self, req: dict[str, Any]) -> None:
        raw = json.dumps(req).encode()
        self._sock.sendall(struct.pack(">I", len(raw)) + raw)

    def close(self) -> None:
        if getattr(self, "closed", False):
            return
        self.closed = True
        try:
            self._send({"op": "close"})
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass
