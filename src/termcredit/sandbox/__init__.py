"""Docker sandboxes: images, one locked-down container per episode, a traced persistent shell,
a pool that starts containers ahead of need, and cleanup. Knows nothing of RL."""

from .container import Sandbox, SandboxSpec
from .engine import EngineError, docker_client
from .bases import BASES, DEFAULT_BASE, base_image_ref, ensure_base_image
from .builderrors import ImageBuildError
from .imagemap import ImageMap
from .images import build_task_image
from .owner import gc
from .pool import SandboxPool
from .shell import ShellError, ShellUnavailable, TracedShell

__all__ = [
    "Sandbox", "SandboxSpec", "SandboxPool", "TracedShell", "ShellError", "ShellUnavailable",
    "EngineError",
    "ImageBuildError", "ImageMap", "build_task_image", "ensure_base_image", "docker_client", "gc",
    "BASES", "DEFAULT_BASE", "base_image_ref",
]
