"""The driver's side of a sandbox on another host: the ``Sandbox`` interface the harness uses,
over calls to that host's ``HostActor`` (host_actor.py).

The shells are ordinary ``TracedShell`` objects over a ``RemoteConn`` that forwards each shim
request to the host and gets the raw frame back, so every check of container bytes (sizes,
fields, hashes, tokens) runs here, on the driver, exactly as for a local sandbox; what the host
says (its frames, its start-up state, its diff) is checked before it is used, as untrusted as
the container's own bytes. Trial directories, trajectories and traces are then the local
backend's by construction: the same harness code makes them from the same frames.

Transport-agnostic: ``call(method, *args, timeout=...)`` is any function that runs a host
method and returns its answer's value or raises (``unwrap``); raypool.py makes one per Ray
actor, ``local_call`` one for an in-process ``HostActor``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from ..records import CommandRecord
from .container import SandboxSpec, dir_archive
from .engine import EngineError
from .builderrors import ImageBuildError
from .pool import StartTimeout
from .shell import MAX_HEADER, MAX_TRACE, SESSIONS, ShellError, TracedShell, _Frame, _reasons

Call = Callable[..., Any]
HOP_SLACK = 60.0  # seconds a host may take beyond the shim's own limit before we give up on it
_ERRORS: dict[str, type[Exception]] = {
    "shell": ShellError, "start_timeout": StartTimeout, "image": ImageBuildError,
    "engine": EngineError, "timeout": TimeoutError, "connection": ConnectionError,
    "os": OSError,
}
_HEX = re.compile(r"[0-9a-f]+")


class HostError(EngineError):
    """A host answered something that is not a valid answer (infrastructure, not the agent)."""


def unwrap(answer: Any, where: str = "host") -> Any:
    """The value of a host's answer, or its error raised as the sandbox layer's exception."""
    if isinstance(answer, dict) and set(answer) == {"ok"}:
        return answer["ok"]
    err = answer.get("error") if isinstance(answer, dict) else None
    if not (isinstance(err, list) and len(err) == 2 and all(isinstance(x, str) for x in err)):
        raise HostError(f"{where} sent a malformed answer")
    kind, message = err[0], f"{where}: {err[1][:4000]}"
    raise _ERRORS.get(kind, HostError)(message)


def local_call(host: Any) -> Call:
    """``call`` for a ``HostActor`` in this process (tests; no Ray)."""
    def call(method: str, *args: Any, timeout: float | None = None) -> Any:
        return unwrap(getattr(host, method)(*args), "local host")
    return call


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise HostError(f"host sent a malformed {what}")


def check_frame(value: Any, max_blobs: int, max_total: int) -> _Frame:
    """A forwarded shim frame, held to the limits the local stream reader enforces."""
    _check(isinstance(value, dict) and isinstance(value.get("header"), dict)
           and isinstance(value.get("blobs"), list), "frame")
    header, blobs = value["header"], value["blobs"]
    _check(all(type(b) is bytes for b in blobs) and len(blobs) <= max_blobs
           and sum(map(len, blobs)) <= max_total, "frame: blobs over their limits")
    _check(header.get("blobs", []) == [len(b) for b in blobs], "frame: blob sizes")
    try:
        size = len(json.dumps(header))
    except (TypeError, ValueError):
        size = MAX_HEADER + 1
    _check(size <= MAX_HEADER, "frame: header")
    if header.get("op") == "error":
        raise ShellError(str(header.get("error"))[:2000])
    return _Frame(header, blobs)


def _check_state(state: Any) -> dict[str, Any]:
    """A sandbox's start-up state as the host reported it (ids, nonces, start traces)."""
    _check(isinstance(state, dict), "sandbox state")
    sid, workdir = state.get("id"), state.get("workdir")
    _check(isinstance(sid, str) and len(sid) == 64 and _HEX.fullmatch(sid) is not None,
           "sandbox id")
    _check(isinstance(workdir, str) and workdir.startswith("/") and len(workdir) <= 4096,
           "workdir")
    nonces, startup = state.get("nonces"), state.get("startup")
    _check(isinstance(nonces, dict) and set(nonces) == set(SESSIONS) and all(
        isinstance(n, str) and len(n) == 16 and _HEX.fullmatch(n) for n in nonces.values())
        and len(set(nonces.values())) == len(SESSIONS), "session nonces")
    _check(isinstance(startup, dict) and set(startup) == set(SESSIONS)
           and all(isinstance(t, str) and len(t) <= MAX_TRACE for t in startup.values()),
           "start-up traces")
    agent = state.get("agent")
    _check(isinstance(agent, dict) and agent.get("started") is True and agent.get("seq") == 0,
           "agent shell state")
    trace = agent["session_trace"]
    _check(isinstance(trace, list) and len(trace) == 2 and trace[0] == startup["agent"]
           and isinstance(trace[1], str) and len(trace[1]) <= MAX_TRACE, "agent start trace")
    try:
        agent["integrity"] = _reasons(agent.get("integrity"))
    except ShellError as exc:
        raise HostError(f"host sent a malformed agent shell state ({exc})") from None
    node = state.get("node")
    state["node"] = node[:256] if isinstance(node, str) else "?"
    return state


def check_diff(value: Any) -> dict[str, int]:
    _check(isinstance(value, dict) and all(
        isinstance(p, str) and type(k) is int and k in (0, 1, 2) for p, k in value.items()),
        "diff")
    return value


class _Diag:
    def __init__(self, conn: "RemoteConn"):
        self.conn = conn

    def diag(self) -> str:
        """The shim's stderr tail, for an error message (best effort)."""
        try:
            text = self.conn.call("diag", self.conn.sandbox_id, timeout=30)
        except Exception:  # the host is gone: the error says so already
            return ""
        return text[-2000:] if isinstance(text, str) else ""


class RemoteConn:
    """Stands in for ``ShimConnection`` under a ``TracedShell``."""

    def __init__(self, call: Call, sandbox_id: str, nonces: dict[str, str],
                 startup: dict[str, str]):
        self.call, self.sandbox_id = call, sandbox_id
        self.nonces, self.startup = dict(nonces), dict(startup)
        self.closed = False
        self._stream = _Diag(self)

    def request(self, req: dict[str, Any], blobs: tuple[bytes, ...] = (), *, timeout: float,
                max_blobs: int, max_total: int) -> _Frame:
        if self.closed:
            raise ShellError("the sandbox shell is closed")
        value = self.call("request", self.sandbox_id, req, list(blobs), timeout, max_blobs,
                          max_total, timeout=timeout + HOP_SLACK)
        return check_frame(value, max_blobs, max_total)

    def close(self) -> None:
        self.closed = True


class RemoteSandbox:
    """A sandbox on a host: what ``Sandbox`` offers the harness, nothing of Docker here."""

    def __init__(self, call: Call, spec: SandboxSpec, state: Any):
        st = _check_state(state)
        self.call, self.spec = call, spec
        self.id: str = st["id"]
        self.workdir: str = st["workdir"]
        self.node: str = st["node"]
        self.host: Any = None  # the pool's handle on the host that holds it (raypool.py)
        self.conn = RemoteConn(call, self.id, st["nonces"], st["startup"])
        self.shell = TracedShell(self.conn, "agent")  # restored as the host started it
        agent = st["agent"]
        self.shell.session_trace = list(agent["session_trace"])
        self.shell.integrity = list(agent["integrity"])
        self.shell.started = True
        self.verifier_shell = TracedShell(self.conn, "verifier")

    def run(self, command: str, *, timeout: float = 60.0, output_cap: int = 65536) -> CommandRecord:
        return self.shell.run(command, timeout=timeout, output_cap=output_cap)

    def diff(self) -> dict[str, int]:
        return check_diff(self.call("diff", self.id, timeout=600))

    def api_diff(self) -> dict[str, int]:
        return check_diff(self.call("api_diff", self.id, timeout=600))

    def writable_bytes(self) -> int:
        n = self.call("writable_bytes", self.id, timeout=600)
        _check(type(n) is int and n >= 0, "writable layer size")
        return n

    def added_paths(self) -> set[str]:
        return {path for path, kind in self.diff().items() if kind == 1}

    def put_dir(self, src: Path, dest: str) -> None:
        if not self.call("put_archive", self.id, dir_archive(src, dest), timeout=600):
            raise RuntimeError(f"could not copy {src} to {dest} in sandbox {self.id[:12]}")

    def remove(self) -> None:
        self.conn.close()
        try:
            self.call("remove", self.id, timeout=120)
        except Exception:  # the host is gone: its pool's close (or a later gc) removes it
            pass
