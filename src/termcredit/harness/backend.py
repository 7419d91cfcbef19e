"""Where sandboxes run: ``local`` (this machine's Docker engine) or ``ray`` (one host actor per
Docker node of a Ray cluster, sandbox/raypool.py). Both give the same two things, images for
tasks and a pool, so `termcredit run`, `train` and `bench` do not branch on the backend; the
episodes themselves (harness/episode.py) run here, on the driver, either way.

    backend = make_backend(BackendSettings("ray"), run_id, ahead=4, log=print)
    image = backend.image(task, instance, image_map=ImageMap.load())
    ... Episode(task, backend.pool, task_spec(task, image), ...) ...
    backend.close()   # every container of the run removed, on every node
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..sandbox import (EngineError, ImageBuildError, ImageMap, SandboxPool, docker_client,
                       ensure_base_image, gc)
from ..tasks import Task
from ..tasks.build import build_image, instance_env

BACKENDS = ("local", "ray")
Log = Callable[[str], None]


@dataclass(frozen=True)
class BackendSettings:
    name: str = "local"
    ray_address: str | None = None  # None: $RAY_ADDRESS, else the local cluster ("auto")
    registry: str | None = None  # ray: pull images from here before building them on a node

    def __post_init__(self) -> None:
        if self.name not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {self.name!r}")


class LocalBackend:
    name = "local"

    def __init__(self, run_id: str, *, ahead: int, log: Log):
        self.log = log
        self.client = docker_client()
        self.pool: Any = SandboxPool(self.client, run_id, ahead=ahead)
        self._base: str | None = None

    def gc(self) -> list[str]:
        """Remove what dead runs left on the engine; their names."""
        return gc(self.client)

    def image(self, task: Task, instance: int = 0, *, image_map: ImageMap,
              force: bool = False) -> str:
        if self._base is None:
            self._base = ensure_base_image(self.client, log=self.log)
        return build_image(self.client, task, base_ref=self._base, instance=instance,
                           image_map=image_map, force=force, log=self.log)

    def close(self) -> None:
        self.pool.close()


class RayBackend:
    """Images and sandboxes on every Docker node of a Ray cluster."""

    name = "ray"

    def __init__(self, run_id: str, *, ahead: int, log: Log, settings: BackendSettings):
        try:
            from ..sandbox.raypool import RayPool
        except ImportError as exc:
            if (exc.name or "").partition(".")[0] != "ray":
                raise
            raise EngineError("the ray backend needs Ray: pip install 'termcredit[ray]' "
                              "(here and on every node)") from None
        self.log, self.registry = log, settings.registry
        self.pool: Any = RayPool(run_id, ahead=ahead, address=settings.ray_address, log=log)
        from ..sandbox.host_actor import pack_dir

        self._pack = pack_dir

    def gc(self) -> list[str]:
        """What dead runs had left on the nodes (each host actor collected it as it started)."""
        return list(self.pool.stale)

    def image(self, task: Task, instance: int = 0, *, image_map: ImageMap,
              force: bool = False) -> str:
        """The task's image on every node: present, pulled from the registry, or built there
        from the task folder this driver ships. Every node must come to the same tag."""
        env_tar = self._pack(task.environment_dir)
        answers = self.pool.on_every_host("ensure_image", task.name, env_tar,
                                          instance_env(task, instance), dict(image_map.rules),
                                          force, self.registry)
        refs = {}
        for node, value in answers:
            if not (isinstance(value, dict) and isinstance(value.get("ref"), str)
                    and isinstance(value.get("log"), list)):
                raise ImageBuildError(f"{node}: malformed image answer for {task.name}")
            for line in value["log"][:200]:
                self.log(f"{node}: {str(line)[:2000]}")
            refs[node] = value["ref"][:512]
        if len(set(refs.values())) != 1:
            raise ImageBuildError(
                f"{task.name}: the nodes built different images ({refs}): their base image "
                "recipes differ (CA certificates in /usr/local/share/ca-certificates, "
                "TERMCREDIT_DEBIAN_MIRROR); make them equal on every node")
        return next(iter(refs.values()))

    def close(self) -> None:
        self.pool.close()


def make_backend(settings: BackendSettings, run_id: str, *, ahead: int,
                 log: Log) -> LocalBackend | RayBackend:
    if settings.name == "ray":
        return RayBackend(run_id, ahead=ahead, log=log, settings=settings)
    return LocalBackend(run_id, ahead=ahead, log=log)
