"""Sandbox pool: containers for upcoming episodes start ahead of need; used ones are removed in
the background, so a reset costs a queue pop rather than a container start."""

from __future__ import annotations

import queue
import threading
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .container import Sandbox, SandboxSpec
from .owner import gc


class SandboxPool:
    def __init__(self, client: Any, run_id: str, *, ahead: int = 2, workers: int = 4):
        self.client = client
        self.run_id = run_id
        self.ahead = ahead
        self._ready: dict[SandboxSpec, queue.Queue[Future[Sandbox]]] = defaultdict(queue.Queue)
        self._budget: dict[SandboxSpec, int] = defaultdict(int)  # starts still wanted per spec
        self._lock = threading.Lock()
        self._exec = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tc-pool")
        self._closing = False
        self._removals: list[Future[None]] = []

    def expect(self, spec: SandboxSpec, n: int) -> None:
        """Announce ``n`` more episodes of ``spec``; starts up to ``ahead`` of them now."""
        with self._lock:
            self._budget[spec] += n
        self._refill(spec)

    def _refill(self, spec: SandboxSpec) -> None:
        with self._lock:
            q = self._ready[spec]
            while not self._closing and q.qsize() < self.ahead and self._budget[spec] > 0:
                self._budget[spec] -= 1
                q.put(self._exec.submit(Sandbox, self.client, spec, self.run_id))

    def warm(self, spec: SandboxSpec) -> bool:
        """True when a pre-started sandbox for ``spec`` is ready to hand out."""
        return any(f.done() for f in list(self._ready[spec].queue))

    def acquire(self, spec: SandboxSpec) -> Sandbox:
        """A fresh sandbox for ``spec``: pre-started if one is ready, else started now."""
        q = self._ready[spec]
        try:
            fut = q.get_nowait()
        except queue.Empty:
            with self._lock:
                self._budget[spec] = max(0, self._budget[spec] - 1)
            fut = self._exec.submit(Sandbox, self.client, spec, self.run_id)
        self._refill(spec)
        return fut.result()

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
            pending = [f for q in self._ready.values() for f in list(q.queue)]
        for fut in pending:
            try:
                fut.result().remove()
            except Exception:
                pass
        for fut in self._removals:
            fut.exception()
        self._exec.shutdown(wait=True)
        gc(self.client, run_id=self.run_id)  # anything a failed start left behind
