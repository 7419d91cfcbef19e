"""The one trial runner: trials (a task, an agent, a folder) on a backend, N at a time.

`termcredit run` (harness/run.py, and `tasks check` through it), `termcredit refine`
(refine/run.py) and `termcredit credit-audit` (bench/credit_audit.py) all run their trials
here, so each gets every backend (local, ray: harness/backend.py) and the same concurrency::

    with TrialRunner(RunnerSettings(backend=BackendSettings("ray"), concurrency=4),
                     "refine-1a2b3c", log=print) as runner:
        fut = runner.submit(task, CommandsAgent(["ls"]), Path("out/0000"), instance=0)
        fut.result().reward

Images are built once per (task, instance) on first use (``image``), cached for the runner's
life; an image build that fails raises ``ImageBuildError`` there, for the caller to record
as it sees fit (`termcredit run` makes it the error of that task's trials).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from threading import Lock
from typing import Any, Callable, Iterable

from ..records import TrialResult
from ..sandbox import ImageMap, SandboxSpec
from ..tasks import Task
from .agents import Agent
from .backend import BackendSettings, LocalBackend, RayBackend, make_backend
from .hooks import NO_HOOKS, Hooks
from .trial import run_trial, task_spec

Log = Callable[[str], None]


@dataclass(frozen=True)
class RunnerSettings:
    backend: BackendSettings = field(default_factory=BackendSettings)
    concurrency: int = 2  # trials at once (and sandboxes started ahead)
    command_timeout: float = 120.0
    image_map: str | None = None  # a TOML file with an [image_map] table (None: the default)
    force_build: bool = False
    network: str | None = None  # a Docker network granted to tasks that permit one
    hooks: Hooks = NO_HOOKS  # what the application has each episode run (harness/hooks.py)
    tracer: str = "strace"  # the resolved backend tracing the sandboxes (tracer/choice.py)


class TrialRunner:
    """A backend, its image cache and a pool of ``concurrency`` trial threads."""

    def __init__(self, settings: RunnerSettings, run_id: str, *, log: Log = lambda m: None):
        self.settings, self.run_id, self.log = settings, run_id, log
        workers = max(1, settings.concurrency)
        self.backend: LocalBackend | RayBackend = make_backend(
            settings.backend, run_id, ahead=workers, log=log)
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="trial")
        self._image_map: ImageMap | None = None  # read at the first build: its errors are one
        self._images: dict[tuple[str, int], str] = {}
        self._lock = Lock()  # one build at a time: two trials of a task build its image once

    @property
    def pool(self) -> Any:
        return self.backend.pool

    def gc(self) -> list[str]:
        """What dead runs left behind, removed (the backend's gc)."""
        return self.backend.gc()

    def image(self, task: Task, instance: int = 0) -> str:
        """The task's image at ``instance`` (instance 0 for a task that is not parametrised:
        its image is the same at every instance)."""
        key = (task.name, instance if task.parametrized else 0)
        with self._lock:
            if key not in self._images:
                if self._image_map is None:
                    self._image_map = ImageMap.load(self.settings.image_map)
                self._images[key] = self.backend.image(task, key[1], image_map=self._image_map,
                                                       force=self.settings.force_build)
            return self._images[key]

    def spec(self, task: Task, instance: int = 0) -> SandboxSpec:
        spec = task_spec(task, self.image(task, instance), self.settings.network)
        if self.settings.tracer == "strace":  # the spec's own default
            return spec
        return replace(spec, tracer=self.settings.tracer)

    def plan(self, specs: Iterable[SandboxSpec]) -> None:
        """Announce the sandboxes of the coming trials, in order (the pool starts them ahead)."""
        self.pool.plan(specs)

    def submit(self, task: Task, agent: Agent, trial_dir: Path, *, attempt: int = 0,
               instance: int = 0) -> Future[TrialResult]:
        """One trial in the background (its image built now, in the caller's thread)."""
        spec = self.spec(task, instance)
        return self.executor.submit(run_trial, task, agent, self.pool, spec, trial_dir,
                                    attempt=attempt, command_timeout=self.settings.command_timeout,
                                    instance=instance, network=self.settings.network,
                                    hooks=self.settings.hooks)

    def cancel(self) -> None:
        """Drop the trials not started yet (an interrupt); running ones finish or abandon."""
        self.executor.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Every container of the run removed, then the threads joined."""
        try:
            self.backend.close()
        finally:
            self.executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> TrialRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
