"""`termcredit run --network NAME`: which phase of which trial gets the user's network.

A task permits a network (tasks/netpolicy.py); the user grants one. The agent's container joins
NAME only when both hold; before verification the container leaves it, unless the task's
``[verifier]`` asks for a network too (the verifier runs in the agent's container, so its
network is that container's, changed between the phases: Sandbox.set_network). Every trial
records both phases in ``trajectory.json`` ``info``: ``network`` and ``verifier_network``, each
one of NOT_PERMITTED, NOT_GRANTED or ``"granted: NAME"``.
"""

from __future__ import annotations

from typing import Any

from ..tasks import Task

NOT_PERMITTED = "not permitted"
NOT_GRANTED = "permitted, not granted"
# not a network the container can join and leave: the host's own, none, another container's
_NOT_JOINABLE = ("host", "none")


def agent_network(task: Task, granted: str | None) -> str | None:
    return granted if task.allow_internet else None


def verifier_network(task: Task, granted: str | None) -> str | None:
    return granted if task.verifier_network else None


def describe(permitted: bool, granted: str | None) -> str:
    if not permitted:
        return NOT_PERMITTED
    return f"granted: {granted}" if granted else NOT_GRANTED


def network_info(task: Task, granted: str | None) -> dict[str, str]:
    """What a trial records of its network."""
    return {"network": describe(task.allow_internet, granted),
            "verifier_network": describe(task.verifier_network, granted)}


def check_network(client: Any, name: str) -> None:
    """``name`` is an existing Docker network a sandbox can join and leave; a ValueError that
    says what to do otherwise (before any container starts)."""
    import docker.errors

    if name in _NOT_JOINABLE or name.startswith("container:"):
        raise ValueError(f"--network {name}: not a network a sandbox can join and leave; "
                         "create one (docker network create --internal NAME) and name it")
    try:
        client.networks.get(name)
    except docker.errors.NotFound:
        raise ValueError(f"--network {name}: no Docker network of that name (docker network "
                         "ls lists them; docker network create NAME makes one)") from None


def offline_warning(tasks: list[Task], granted: str | None) -> str | None:
    """The run's one line about tasks that permit a network it does not grant."""
    waiting = sorted({t.name for t in tasks if t.allow_internet}) if granted is None else []
    if not waiting:
        return None
    shown = ", ".join(waiting[:3]) + (f" and {len(waiting) - 3} more" if len(waiting) > 3 else "")
    return (f"warning: {len(waiting)} task(s) permit network access ({shown}); this run grants "
            "none, so they run offline (--network NAME grants one)")
