"""One sandbox = one locked-down container plus its traced persistent shell."""

from __future__ import annotations

import io
import itertools
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..records import CommandRecord
from .owner import LABEL_OWNER, LABEL_RUN, owner_token
from .shell import TracedShell

# Docker's default set minus NET_RAW, MKNOD, SETFCAP, SETPCAP, SYS_CHROOT and AUDIT_WRITE:
# enough for package installs, chown/chmod and kill, and tracing one's own children.
CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
                "NET_BIND_SERVICE"]
LOG_DIRS = ("/logs/agent", "/logs/verifier")
_next_cpu = itertools.count()  # spread pinned sandboxes over the CPUs round robin


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


class Sandbox:
    """A started container with a traced shell ready for the agent's commands."""

    def __init__(self, client: Any, spec: SandboxSpec, run_id: str):
        self.client = client
        self.spec = spec
        self.run_id = run_id
        labels = {LABEL_RUN: run_id, LABEL_OWNER: owner_token(), **dict(spec.labels)}
        mem = f"{int(spec.memory_mb)}m"
        self.container = client.containers.run(
            spec.image,
            ["sh", "-c", f"mkdir -p {' '.join(LOG_DIRS)} && exec sleep infinity"],
            detach=True,
            init=True,  # docker-init reaps what killed commands leave behind
            network_mode="none",
            nano_cpus=int(spec.cpus * 1e9),
            mem_limit=mem,
            memswap_limit=mem,
            pids_limit=spec.pids_limit,
            security_opt=["no-new-privileges"],
            cap_drop=["ALL"],
            cap_add=CAPABILITIES,
            labels=labels,
            environment=dict(spec.env) or None,
            working_dir=spec.workdir or None,
        )
        self.id: str = self.container.id
        self.workdir = spec.workdir or self.container.attrs["Config"].get("WorkingDir") or "/"
        self.cpu = next(_next_cpu) if spec.pin_cpu else None
        self.shell: TracedShell | None = None
        try:
            self.shell = self.open_shell()
        except Exception:
            self.remove()
            raise

    def open_shell(self, workdir: str | None = None,
                   env: dict[str, str] | None = None) -> TracedShell:
        """A new traced shell in this container (the agent's, or a fresh one for the verifier)."""
        return TracedShell(self.client.api, self.id, workdir=workdir or self.workdir, env=env,
                           pin_cpu=self.cpu)

    def run(self, command: str, *, timeout: float = 60.0, output_cap: int = 65536) -> CommandRecord:
        assert self.shell is not None
        return self.shell.run(command, timeout=timeout, output_cap=output_cap)

    def added_paths(self) -> set[str]:
        """Paths added since the image was built (docker diff), to tell new files from old."""
        return {c["Path"] for c in (self.client.api.diff(self.id) or []) if c["Kind"] == 1}

    def put_dir(self, src: Path, dest: str) -> None:
        """Copy a host folder's contents to ``dest`` in the container (created if missing)."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(str(src), arcname=PurePosixPath(dest).name or ".")
        parent = str(PurePosixPath(dest).parent)
        self.container.exec_run(["mkdir", "-p", parent])
        if not self.container.put_archive(parent, buf.getvalue()):
            raise RuntimeError(f"could not copy {src} to {dest} in sandbox {self.id[:12]}")

    def get_dir(self, path: str, dest: Path) -> bool:
        """Copy a container folder's contents into host folder ``dest``; False if absent."""
        import docker.errors

        try:
            stream, _ = self.container.get_archive(path)
        except docker.errors.NotFound:
            return False
        data = b"".join(stream)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            top = PurePosixPath(path).name
            for member in tar.getmembers():
                rel = PurePosixPath(member.name)
                rel = PurePosixPath(*rel.parts[1:]) if rel.parts[:1] == (top,) else rel
                if not member.isfile() or ".." in rel.parts or not rel.parts:
                    continue
                member.name = str(rel)
                tar.extract(member, dest, filter="data")
        return True

    def remove(self) -> None:
        if self.shell is not None:
            self.shell.close()
        try:
            self.container.remove(force=True)
        except Exception:  # already gone (gc, daemon restart): nothing left to clean
            pass
