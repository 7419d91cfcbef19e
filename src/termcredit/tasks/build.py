"""Task images per instance.

A parametrised task (``[metadata] parametrized = true``) generates its data from an instance
seed: its Dockerfile declares ``ARG TC_INSTANCE=0`` and uses it (e.g. ``RUN python3 gen.py
"$TC_INSTANCE"``), and its verifier reads the same number from the ``TC_INSTANCE`` environment
variable, so it can recompute what the answer must be. The agent's shell never gets the
variable. All attempts of a group share one instance (one initial state); held-out evaluation
uses instances training never saw.
"""

from __future__ import annotations

from typing import Any

from ..sandbox import ImageMap, build_task_image
from .model import Task

INSTANCE_VAR = "TC_INSTANCE"


def instance_env(task: Task, instance: int) -> dict[str, str]:
    return {INSTANCE_VAR: str(instance)} if task.parametrized else {}


def build_image(client: Any, task: Task, *, base_ref: str, instance: int = 0,
                image_map: ImageMap | None = None, force: bool = False,
                log: Any = print) -> str:
    return build_task_image(client, task.environment_dir, task.name, base_ref=base_ref,
                            image_map=image_map, force=force,
                            build_args=instance_env(task, instance), log=log)
