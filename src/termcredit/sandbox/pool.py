"""Sandbox pool: containers for upcoming episodes start ahead of need; used ones are removed in
the background, so a reset costs a list lookup rather than a container start.

The caller announces upcoming episodes in order (``plan``); the pool keeps at most ``ahead``
sandboxes started for the head of that plan, whatever the number of tasks, so a run over many
tasks never floods the engine with idle containers.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Iterable

from .container import Sandbox, SandboxSpec
from .engine import EngineError
from .owner import gc


class StartTimeout(EngineError):
    """A sandbox was not ready within the caller's start limit (the engine is overloaded)."""


class SandboxPool:
    def __init__(self, client: Any, run_id: str, *, ahead: int = 2, workers: int = 4):
        self.client = client
        self.run_id = run_id
        self.ahead = ahead
        self._upcoming: deque[SandboxSpec] = deque()
        self._ready: list[tuple[SandboxSpec, Future[Sandbox]]] = []
        self._lock = threading.Lock()
        self._exec = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tc-pool")
        self._closing = False
        self._removals: list[Future[None]] = []

    def plan(self, specs: Iterable[SandboxSpec]) -> None:
        """Announce upcoming episodes, in the order they will be acquired."""
        with self._lock:
            self._upcoming.extend(specs)
            self._refill()

    def _start(self, spec: SandboxSpec) -> Future[Sandbox]:
        return self._exec.submit(Sandbox, self.client, spec, self.run_id)

    def _refill(self) -> None:  # under self._lock
        while not self._closing and len(self._ready) < self.ahead and self._upcoming:
            spec = self._upcoming.popleft()
            self._ready.append((spec, self._start(spec)))

    def warm(self, spec: SandboxSpec) -> bool:
        """True when a pre-started sandbox for ``spec`` is ready to hand out."""
        with self._lock:
            return any(s == spec and f.done() for s, f in self._ready)

    def acquire(self, spec: SandboxSpec, timeout: float | None = None) -> Sandbox:
        """A fresh sandbox for ``spec``: pre-started if one is ready, else started now. Past
        ``timeout`` seconds ``StartTimeout``; the late sandbox is removed once it is up."""
        with self._lock:
            pick = next((i for i, (s, f) in enumerate(self._ready) if s == spec), None)
            if pick is not None:
                fut = self._ready.pop(pick)[1]
            else:
                if spec in self._upcoming:
                    self._upcoming.remove(spec)  # it is being started now instead
                fut = self._start(spec)
            self._refill()
        try:
            return fut.result(timeout=timeout)
        except FutureTimeout:
            fut.add_done_callback(self._discard)
            raise StartTimeout(f"sandbox for {spec.image} not ready after {timeout:g}s") from None

    def _discard(self, fut: Future[Sandbox]) -> None:
        if fut.exception() is None:
            self.release(fut.result())

    def release(self, sandbox: Sandbox) -> None:
        """Remove a used sandbox without making the caller wait (inline once closing)."""
        try:
            self._removals.append(self._exec.submit(sandbox.remove))
        except RuntimeError:  # executor already shut down: the run is being torn down
            sandbox.remove()

    def close(self) -> None:
        """Remove every container of this pool (pre-started ones included) and wait for it."""
        with self._lock:
            self._closing = True
            pending = [f for _, f in self._ready]
            self._ready.clear()
        for fut in pending:
            try:
                fut.result().remove()
            except Exception:  # a start that failed left nothing, or gc below gets it
                pass
        for fut in self._removals:
            fut.exception()
        self._exec.shutdown(wait=True)
        try:
            gc(self.client, run_id=self.run_id)  # anything a failed start left behind
        except Exception:  # engine busy or gone: a start-up gc collects them once we are gone
            pass
