"""One sandbox = one locked-down container plus its traced persistent shell."""

from __future__ import annotations

import io
import itertools
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..records import CommandRecord
from .layerdiff import LayerDiffUnsupported, layer_diff
from .owner import LABEL_OWNER, LABEL_RUN, owner_token
from .shell import ShimConnection, TracedShell

# The agent's shell gets Docker's default set minus NET_RAW, MKNOD, SETFCAP, SETPCAP, SYS_CHROOT
# and AUDIT_WRITE (enough for package installs, chown/chmod and kill; nsinit.py KEEP_CAPS).
# SYS_ADMIN and SETPCAP exist only in the harness's processes: they make the namespaces that
# hide the harness from the agent, then drop to that set before the shell starts.
# SYS_PTRACE is strace's alone: without it strace cannot read the memory of a traced process
# that changed its uid (no longer dumpable), and that process's paths vanish from the trace.
# SYS_CHROOT is the verifier's init's, to enter the root made for it at verification.
CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
                "NET_BIND_SERVICE", "SYS_ADMIN", "SETPCAP", "SYS_PTRACE", "SYS_CHROOT"]
LAYERS_AT = "/.termcredit/layers"  # the image's layer folders, read-only (pristine.py)
LOG_DIRS = ("/logs/agent", "/logs/verifier")
_next_cpu = itertools.count()  # spread pinned sandboxes over the CPUs round robin
_rootless: dict[str, bool] = {}  # engine URL -> rootless (asked once per engine)
_UNSET: Any = object()


@dataclass(frozen=True)
class SandboxSpec:
    """What a container needs; equal specs can share a pool queue."""

    image: str
    cpus: float = 1.0
    memory_mb: int = 2048
    pids_limit: int = 1024
    env: tuple[tuple[str, str], ...] = ()
    workdir: str | None = None
    labels: tuple[tuple[str, str], ...] = field(default=())
    pin_cpu: bool = True  # strace + shell on one CPU (much cheaper ptrace stops on small VMs)
    # a Docker network the user granted (`termcredit run --network`); None: no network at all
    network: str | None = None
    # what traces its sessions: "strace" (in the container) or "ebpf" (the host's tracer,
    # host_steps.py); a resolved backend, never "auto" (tracer/choice.py resolves it)
    tracer: str = "strace"


def dir_archive(src: Path, dest: str) -> bytes:
    """A tar of a host folder whose members land at absolute ``dest`` when unpacked at /."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(src), arcname=str(PurePosixPath(dest)).lstrip("/") or ".")
    return buf.getvalue()


def image_layers(client: Any, image: str) -> list[str]:
    """The image's overlay2 layer folders, top first, when this process can hand them to the
    container (a local rootful overlay2 engine, run as root); else none, and the verifier runs
    from the agent's toolchain, which the audit then has to cover alone."""
    if os.geteuid() != 0 or _engine_rootless(client):
        return []
    try:
        graph = client.api.inspect_image(image).get("GraphDriver") or {}
    except Exception:  # noqa: BLE001 - an image docker cannot describe: no layers
        return []
    data = graph.get("Data") or {}
    paths = [data.get("UpperDir") or ""] + (data.get("LowerDir") or "").split(":")
    paths = [p for p in paths if p]
    if graph.get("Name") != "overlay2" or not paths or not all(os.path.isdir(p) for p in paths):
        return []
    return paths


def _engine_rootless(client: Any) -> bool:
    url = str(getattr(client.api, "base_url", ""))
    if url not in _rootless:
        opts = client.info().get("SecurityOptions") or []
        _rootless[url] = any("name=rootless" in o for o in opts)
    return _rootless[url]


class Sandbox:
    """A started container with a traced shell ready for the agent's commands."""

    def __init__(self, client: Any, spec: SandboxSpec, run_id: str):
        self.client = client
        self.spec = spec
        self.run_id = run_id
        self._layers: tuple[str, list[str]] | None = _UNSET  # overlay2 upper, lowers
        labels = {LABEL_RUN: run_id, LABEL_OWNER: owner_token(), **dict(spec.labels)}
        mem = f"{int(spec.memory_mb)}m"
        layers = image_layers(client, spec.image)
        self.container = client.containers.run(
            spec.image,
            ["sh", "-c", f"mkdir -p {' '.join(LOG_DIRS)} && exec sleep infinity"],
            detach=True,
            init=True,  # docker-init reaps what killed commands leave behind
            **({"network": spec.network} if spec.network else {"network_mode": "none"}),
            nano_cpus=int(spec.cpus * 1e9),
            mem_limit=mem,
            memswap_limit=mem,
            # /dev/shm is memory the container is charged for: at most a quarter of it
            shm_size=f"{max(4, min(64, int(spec.memory_mb) // 4))}m",
            pids_limit=spec.pids_limit,
            security_opt=["no-new-privileges"],
            cap_drop=["ALL"],
            cap_add=CAPABILITIES,
            labels=labels,
            environment=dict(spec.env) or None,
            working_dir=spec.workdir or None,
            volumes={path: {"bind": f"{LAYERS_AT}/{i}", "mode": "ro"}
                     for i, path in enumerate(layers)} or None,
        )
        self.id: str = self.container.id
        self.workdir = spec.workdir or self.container.attrs["Config"].get("WorkingDir") or "/"
        self.cpu = next(_next_cpu) if spec.pin_cpu else None
        self.conn: ShimConnection | None = None
        self.shell: TracedShell | None = None
        try:
            # both sessions are made now, while nothing of the agent's has run in here yet
            self.conn = ShimConnection(client.api, self.id, workdir=self.workdir, pin_cpu=self.cpu,
                                       tracer=spec.tracer)
            self.shell = TracedShell(self.conn, "agent")
            self.shell.start(cwd=self.workdir)
            self.verifier_shell = TracedShell(self.conn, "verifier")
        except Exception:
            self.remove()
            raise

    def networks(self) -> set[str]:
        """The Docker networks the container is on now ("none" when it has none)."""
        info = self.client.api.inspect_container(self.id)
        return set((info.get("NetworkSettings") or {}).get("Networks") or {})

    def set_network(self, name: str | None) -> None:
        """Leave the granted network, or join ``name``, before the next phase (the verifier's
        network is not the agent's); checked after, so a failed change never goes unnoticed.
        The agent holds no NET_ADMIN: it cannot bring an interface back."""
        api = self.client.api
        for net in self.networks() - {name}:
            if net != "none" or name:  # "none" must go before a network can be joined
                api.disconnect_container_from_network(self.id, net, force=True)
        if name and name not in self.networks():
            api.connect_container_to_network(self.id, name)
        now = self.networks() - {"none"}
        if now != ({name} if name else set()):
            raise RuntimeError(f"sandbox {self.id[:12]}: networks {sorted(now)} after asking "
                               f"for {name or 'none'}")

    def run(self, command: str, *, timeout: float = 60.0, output_cap: int = 65536) -> CommandRecord:
        assert self.shell is not None
        return self.shell.run(command, timeout=timeout, output_cap=output_cap)

    def diff(self) -> dict[str, int]:
        """docker diff: path -> kind (0 changed, 1 added, 2 deleted) against the image. It
        comes from the container's writable layer, not from the trace, so it also holds changes
        that no trace line names (a write through a hard link).

        Read here from the overlay2 layers (layerdiff.py: Docker's answer without dockerd's
        ~0.6 core-s walk of both whole trees) when the engine is a local rootful overlay2 one
        and this process is root. Otherwise Docker's API diff: another storage driver, a
        rootless engine (its ``user.overlay.*`` xattrs), a remote engine (paths not here), an
        unreadable layer, or one past layerdiff's entry/depth bounds (a hostile file count)."""
        layers = self._overlay_layers()
        if layers is not None:
            try:
                return layer_diff(*layers)
            except LayerDiffUnsupported:
                pass
        return self.api_diff()

    def api_diff(self) -> dict[str, int]:
        """Docker's own diff (``GET /containers/{id}/changes``)."""
        return {c["Path"]: c["Kind"] for c in (self.client.api.diff(self.id) or [])}

    def _overlay_layers(self) -> tuple[str, list[str]] | None:
        """(upper dir, lower dirs top first) if layerdiff may read them; asked once: a
        container's layer paths never change."""
        if self._layers is _UNSET:
            self._layers = None
            graph = self.container.attrs.get("GraphDriver") or \
                self.client.api.inspect_container(self.id).get("GraphDriver") or {}
            data = graph.get("Data") or {}
            upper, lower = data.get("UpperDir"), data.get("LowerDir") or ""
            if graph.get("Name") == "overlay2" and upper and os.geteuid() == 0 \
                    and not self._engine_rootless() and os.path.isdir(upper):
                self._layers = (upper, [p for p in lower.split(":") if p])
        return self._layers

    def _engine_rootless(self) -> bool:
        return _engine_rootless(self.client)

    def writable_bytes(self) -> int:
        """Size of the container's writable layer (what the agent added on the host's disk);
        Docker walks the layer for it: a few ms, more with many files."""
        api = self.client.api
        info = api._result(api._get(api._url("/containers/{0}/json", self.id),
                                    params={"size": 1}), True)
        return int(info.get("SizeRw") or 0)

    def added_paths(self) -> set[str]:
        """Paths added since the image was built, to tell new files from old."""
        return {path for path, kind in self.diff().items() if kind == 1}

    def put_dir(self, src: Path, dest: str) -> None:
        """Copy a host folder's contents to absolute ``dest`` in the container (parents made).
        Docker unpacks the archive itself: no program of the container runs."""
        if not self.container.put_archive("/", dir_archive(src, dest)):
            raise RuntimeError(f"could not copy {src} to {dest} in sandbox {self.id[:12]}")

    def remove(self) -> None:
        if self.conn is not None:
            self.conn.close()
        try:
            self.container.remove(force=True)
        except Exception:  # already gone (gc, daemon restart): nothing left to clean
            pass
