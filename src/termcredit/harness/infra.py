"""Infrastructure failures: the harness, the engine or the sandbox failed, not the agent.

Such an episode says nothing about the policy: a verifier crash, a sandbox removed from
outside, a Docker error. It is marked (``termination = "infra_error"``, the reason in
``info["infra_error"]``), kept on disk, and left out of training's group statistics and loss.
What the agent does to its own sandbox (a timeout, an invalid action, deleting `python3` so
the tests cannot run) is the agent's failure and keeps reward 0.
"""

from __future__ import annotations

import docker.errors

from ..records import Trajectory
from ..sandbox import EngineError, ShellError

INFRA_ERROR = "infra_error"
# what the sandbox layer raises when the container, its shim or the engine is gone
INFRA_EXCEPTIONS = (ShellError, EngineError, docker.errors.DockerException, ConnectionError)


def is_infra_exception(exc: BaseException) -> bool:
    return isinstance(exc, INFRA_EXCEPTIONS)


def mark_infra(traj: Trajectory, exc: BaseException, where: str) -> None:
    traj.termination = INFRA_ERROR
    traj.info[INFRA_ERROR] = f"{where}: {type(exc).__name__}: {exc}"


def is_infra(traj: Trajectory) -> bool:
    return traj.termination == INFRA_ERROR
