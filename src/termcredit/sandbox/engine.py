"""The Docker engine connection, with an error that says what to do when there is none."""

from __future__ import annotations

from typing import Any


class EngineError(RuntimeError):
    pass


def docker_client() -> Any:
    import docker

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:
        raise EngineError(
            f"no Docker engine answers ({type(exc).__name__}: {exc}). Run `make setup`, which "
            "installs docker.io and starts dockerd when run as root on Debian; otherwise start "
            "your engine and check `docker info`."
        ) from exc
    return client
