"""One Docker host's side of the Ray backend: its engine client, its sandbox pool and the live
sandboxes by id. A Ray actor wraps this class on each node (raypool.py); it is plain Python so
it also runs in-process (tests, remote.py's ``local_call``).

The host forwards the driver's shim requests to the sandbox's real ``ShimConnection`` and sends
back the raw frame; it parses nothing. All validation of container bytes stays in the driver's
``TracedShell`` (remote.py), which treats these answers as untrusted as the container's.

Every method answers ``{"ok": value}`` or ``{"error": [kind, message]}`` instead of raising, so
what crosses the wire is data, never a pickled exception; remote.py turns a kind back into the
sandbox layer's exception.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import socket
import tarfile
import tempfile
import threading
from functools import wraps
from pathlib import Path
from typing import Any, Callable

from ..tracer.protocol import strace_argv
from .container import Sandbox, SandboxSpec
from .engine import EngineError, docker_client
from .bases import BASE_REPO, base_image_ref, ensure_base_image, image_exists
from .builderrors import ImageBuildError
from .imagemap import ImageMap
from .images import build_task_image, task_image_ref
from .owner import gc
from .pool import SandboxPool, StartTimeout
from .shell import NSINIT_SOURCE, SESSIONS, SHIM_SOURCE, ShellError

ENV_TAR_MAX = 256 << 20  # a task's environment/ folder shipped to a node
# what the driver's TracedShell and the node's shim must agree on: a node with another
# termcredit would send frames the driver parses differently
PROTOCOL = hashlib.sha256(SHIM_SOURCE + NSINIT_SOURCE.encode() + json.dumps(
    [strace_argv(s) for s in SESSIONS]).encode()).hexdigest()[:16]


def error_kind(exc: BaseException) -> str:
    """The wire name of an exception (remote.py maps it back)."""
    import docker.errors

    for cls, kind in ((StartTimeout, "start_timeout"), (ShellError, "shell"),
                      (ImageBuildError, "image"), (EngineError, "engine"),
                      (docker.errors.DockerException, "engine"), (TimeoutError, "timeout"),
                      (ConnectionError, "connection"), (OSError, "os")):
        if isinstance(exc, cls):
            return kind
    return "internal"


def _answers(method: Callable[..., Any]) -> Callable[..., dict[str, Any]]:
    @wraps(method)
    def wrapper(self: "HostActor", *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            if self.broken is not None and method.__name__ != "info":
                raise EngineError(self.broken)
            return {"ok": method(self, *args, **kwargs)}
        except Exception as exc:  # every failure travels as data (see the module docstring)
            return {"error": [error_kind(exc), f"{type(exc).__name__}: {exc}"[:4000]]}
    return wrapper


def pack_dir(folder: Path, limit: int = ENV_TAR_MAX) -> bytes:
    """A reproducible tar of a folder (sorted, no times or owners): equal content, equal bytes,
    so its hash names a node's cached copy."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if info.isfile():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
            if buf.tell() > limit:
                raise ImageBuildError(f"{folder}: over {limit >> 20} MiB to ship to a Ray node")
    return buf.getvalue()


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "termcredit" / "task-envs"


def unpack_env(data: bytes, cache: Path) -> Path:
    """The node-local copy of a shipped environment/ folder, keyed by the tar's hash."""
    if len(data) > ENV_TAR_MAX:
        raise ImageBuildError(f"shipped task folder over {ENV_TAR_MAX >> 20} MiB")
    dest = cache / hashlib.sha256(data).hexdigest()[:32]
    if (dest / "Dockerfile").is_file():
        return dest
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache))
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter="data")  # no absolute paths, no '..', no devices
        try:
            tmp.rename(dest)
        except OSError:  # another thread unpacked the same folder first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not (dest / "Dockerfile").is_file():
        raise ImageBuildError("shipped task folder has no Dockerfile")
    return dest


def pull_image(client: Any, registry: str, ref: str, log: Callable[[str], None]) -> bool:
    """``registry/ref`` pulled and tagged ``ref``; False (logged) when the registry lacks it."""
    repo, _, tag = ref.rpartition(":")
    remote = f"{registry.rstrip('/')}/{repo}"
    try:
        client.images.pull(remote, tag=tag).tag(repo, tag)
    except Exception as exc:  # not there, or no registry answers: build it here instead
        log(f"cannot pull {remote}:{tag} ({type(exc).__name__}); building it here")
        return False
    log(f"pulled {remote}:{tag}")
    return True


class HostActor:
    def __init__(self, run_id: str, *, ahead: int = 2, workers: int = 4,
                 cache_dir: str | None = None, client: Any = None):
        self.node = socket.gethostname()
        self.broken: str | None = None
        self.stale: list[str] = []
        self._boxes: dict[str, Sandbox] = {}
        self._lock = threading.Lock()
        self._base_lock = threading.Lock()
        self.cache = Path(cache_dir) if cache_dir else _cache_root()
        try:
            self.client = client or docker_client()
            self.stale = gc(self.client)  # what dead runs (a killed host actor) left here
        except Exception as exc:  # reported by info(): the driver names the node and why
            self.broken = f"{self.node}: {type(exc).__name__}: {exc}"
            return
        self.pool = SandboxPool(self.client, run_id, ahead=ahead, workers=workers)

    def _box(self, sandbox_id: str) -> Sandbox:
        with self._lock:
            box = self._boxes.get(sandbox_id)
        if box is None:
            raise EngineError(f"no sandbox {sandbox_id[:12]} on {self.node} (removed)")
        return box

    @_answers
    def info(self) -> dict[str, Any]:
        return {"node": self.node, "pid": os.getpid(), "protocol": PROTOCOL,
                "stale": list(self.stale), "broken": self.broken}

    # ------------------------------------------------------------------ images
    def _base(self, registry: str | None, log: Callable[[str], None]) -> str:
        with self._base_lock:
            ref = base_image_ref()
            if not image_exists(self.client, ref) and registry and \
                    pull_image(self.client, registry, ref, log):
                self.client.images.get(ref).tag(BASE_REPO, "latest")
                return ref
            return ensure_base_image(self.client, log=log)

    @_answers
    def ensure_image(self, name: str, env_tar: bytes, build_args: dict[str, str],
                     rules: dict[str, str], force: bool = False,
                     registry: str | None = None) -> dict[str, Any]:
        """A task's image on this node (same content-hash tag as anywhere): present, else
        pulled from ``registry``, else built from the shipped environment/ folder."""
        logs: list[str] = []
        env_dir = unpack_env(env_tar, self.cache)
        imap = ImageMap(dict(rules))
        ref, _ = task_image_ref(env_dir, name, base_ref=base_image_ref(), image_map=imap,
                                build_args=build_args)
        if not force and (image_exists(self.client, ref) or (
                registry and pull_image(self.client, registry, ref, logs.append))):
            return {"ref": ref, "log": logs}
        base = self._base(registry, logs.append)
        built = build_task_image(self.client, env_dir, name, base_ref=base, image_map=imap,
                                 force=force, build_args=build_args, log=logs.append)
        return {"ref": built, "log": logs}

    # ------------------------------------------------------------------ the pool
    @_answers
    def plan(self, specs: list[SandboxSpec]) -> None:
        self.pool.plan(specs)

    @_answers
    def warm(self, spec: SandboxSpec) -> bool:
        return self.pool.warm(spec)

    @_answers
    def acquire(self, spec: SandboxSpec, timeout: float | None = None) -> dict[str, Any]:
        """A fresh sandbox and the start-up state of its shells (remote.py checks it)."""
        box = self.pool.acquire(spec, timeout=timeout)
        with self._lock:
            self._boxes[box.id] = box
        assert box.conn is not None and box.shell is not None
        shell = box.shell
        return {"id": box.id, "workdir": box.workdir, "node": self.node,
                "nonces": dict(box.conn.nonces), "startup": dict(box.conn.startup),
                "agent": {"session_trace": list(shell.session_trace),
                          "integrity": list(shell.integrity), "seq": shell.seq,
                          "started": shell.started}}

    @_answers
    def release(self, sandbox_id: str) -> None:
        with self._lock:
            box = self._boxes.pop(sandbox_id, None)
        if box is not None:
            self.pool.release(box)

    @_answers
    def remove(self, sandbox_id: str) -> None:
        with self._lock:
            box = self._boxes.pop(sandbox_id, None)
        if box is not None:
            box.remove()

    # ------------------------------------------------------------------ one sandbox
    @_answers
    def request(self, sandbox_id: str, req: dict[str, Any], blobs: list[bytes], timeout: float,
                max_blobs: int, max_total: int) -> dict[str, Any]:
        """One shim request, answered with the raw frame (header, blobs)."""
        conn = self._box(sandbox_id).conn
        assert conn is not None
        frame = conn.request(req, tuple(blobs), timeout=timeout, max_blobs=max_blobs,
                             max_total=max_total)
        return {"header": frame.header, "blobs": frame.blobs}

    @_answers
    def diag(self, sandbox_id: str) -> str:
        conn = self._box(sandbox_id).conn
        return conn._stream.diag() if conn is not None else ""

    @_answers
    def diff(self, sandbox_id: str) -> dict[str, int]:
        return self._box(sandbox_id).diff()

    @_answers
    def api_diff(self, sandbox_id: str) -> dict[str, int]:
        return self._box(sandbox_id).api_diff()

    @_answers
    def writable_bytes(self, sandbox_id: str) -> int:
        return self._box(sandbox_id).writable_bytes()

    @_answers
    def put_archive(self, sandbox_id: str, data: bytes) -> bool:
        return bool(self._box(sandbox_id).container.put_archive("/", data))

    @_answers
    def close(self) -> None:
        """Remove every container of this run here: handed out, pre-started, or left over."""
        with self._lock:
            boxes, self._boxes = list(self._boxes.values()), {}
        for box in boxes:
            box.remove()
        self.pool.close()  # pre-started ones, then gc of the run id on this engine
