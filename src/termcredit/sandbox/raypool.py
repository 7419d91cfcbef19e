"""The Ray backend's pool: one ``HostActor`` per Docker node, sandboxes spread over them (least
loaded first), with ``SandboxPool``'s interface (plan / acquire / release / warm / close).

Nodes: every alive node of the cluster, or, when some node advertises the custom resource
``docker`` (``ray start --resources '{"docker": 1}'``), only those (keep sandboxes off a GPU
trainer node without Docker). Each actor is pinned to its node.

A dead actor (its node or its process gone) takes its sandboxes with it: every call to it
raises ``EngineError``, which the harness records as an infrastructure failure (masked in
training, counted); the pool starts a new actor on that node, if the node is still alive, for
later sandboxes. ``close`` removes every container of the run on every node, dead actors' too
(the new actor's start-up gc, then the run-id gc of each pool).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Callable, Iterable

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .container import SandboxSpec
from .engine import EngineError
from .host_actor import PROTOCOL, HostActor
from .remote import RemoteSandbox, unwrap

NAMESPACE = "termcredit"
DOCKER_RESOURCE = "docker"
MAX_CONCURRENCY = 256  # calls one actor serves at once: a running command holds one
START_S = 300.0  # a new actor's start (docker client, gc of dead runs' containers)
_RemoteHost = ray.remote(HostActor)


def connect(address: str | None) -> None:
    """Join the cluster at ``address`` (else $RAY_ADDRESS, else ``auto``: the local one)."""
    if ray.is_initialized():
        return
    addr = address or os.environ.get("RAY_ADDRESS") or "auto"
    try:
        ray.init(address=addr, namespace=NAMESPACE, log_to_driver=False,
                 logging_level=logging.WARNING)
    except Exception as exc:
        raise EngineError(f"no Ray cluster at {addr!r} ({type(exc).__name__}: {exc}). Start one "
                          "with `ray start --head` (see docs/ray.md) or give --ray-address "
                          "HOST:PORT") from None


class _Unfit(EngineError):
    """A node whose host actor cannot run sandboxes (no Docker engine there)."""


class _Host:
    """One actor incarnation on one node, and what the pool has put on it."""

    def __init__(self, node_id: str, actor: Any, name: str):
        self.node_id, self.actor, self.name = node_id, actor, name
        self.dead = False
        self.retired = False  # dead for good: its node is gone or a new actor failed there
        self.live = 0  # sandboxes handed out and not yet released
        self.planned: list[SandboxSpec] = []

    @property
    def load(self) -> int:
        return self.live + len(self.planned)


class RayPool:
    def __init__(self, run_id: str, *, ahead: int = 2, address: str | None = None,
                 log: Callable[[str], None] = print):
        connect(address)
        self.run_id, self.ahead, self.log = run_id, ahead, log
        self._lock = threading.Lock()
        self._replacing = threading.Lock()  # one replacement at a time (threads share hosts)
        self.stale: list[str] = []
        self.replaced = 0
        self._started = 0
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        docker_nodes = [n for n in nodes if (n.get("Resources") or {}).get(DOCKER_RESOURCE)]
        self.hosts: list[_Host] = []
        spawned: list[_Host] = []
        try:  # every node's actor starts at once; a node without a working engine is skipped
            for node in docker_nodes or nodes:
                spawned.append(self._spawn(node["NodeID"]))
            for host in spawned:
                try:
                    self.hosts.append(self._ready(host))
                except _Unfit as exc:
                    self.log(f"{exc}; skipped (give the Docker nodes the `{DOCKER_RESOURCE}` "
                             "resource to choose them)")
        except BaseException:
            self.hosts = spawned
            self._kill_all()
            raise
        if not self.hosts:
            raise EngineError("no node of the Ray cluster can host sandboxes")

    # ------------------------------------------------------------------ actors
    def _start(self, node_id: str) -> _Host:
        """A new host actor on ``node_id``, ready to serve."""
        try:
            return self._ready(self._spawn(node_id))
        except _Unfit as exc:
            raise EngineError(str(exc)) from None

    def _spawn(self, node_id: str) -> _Host:
        self._started += 1  # named, so `ray list actors` shows whose it is
        actor = _RemoteHost.options(
            name=f"host-{self.run_id}-{node_id[:8]}-{self._started}", namespace=NAMESPACE,
            num_cpus=0, max_concurrency=MAX_CONCURRENCY, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(self.run_id, ahead=self.ahead)
        return _Host(node_id, actor, node_id[:12])

    def _ready(self, host: _Host) -> _Host:
        """``host`` once it answers; a node with another termcredit stops the run."""
        try:
            info = self._call(host, "info", timeout=START_S)
        except BaseException:
            ray.kill(host.actor, no_restart=True)
            raise
        if info.get("broken"):
            ray.kill(host.actor, no_restart=True)
            raise _Unfit(f"Ray node {host.name} cannot host sandboxes: {info['broken']}")
        if info.get("protocol") != PROTOCOL:
            ray.kill(host.actor, no_restart=True)
            raise EngineError(f"Ray node {info.get('node')} runs another termcredit (shim "
                              f"protocol {info.get('protocol')}, this one {PROTOCOL}): install "
                              "the same version on every node")
        host.name = str(info.get("node"))[:256]
        self.stale += [str(s) for s in info.get("stale") or []]
        return host

    def _call(self, host: _Host, method: str, *args: Any, timeout: float | None = None) -> Any:
        """One call to ``host``; a dead actor or a hung one is the engine's failure."""
        return self._get(host, getattr(host.actor, method).remote(*args), method, timeout)

    def _get(self, host: _Host, ref: Any, method: str, timeout: float | None) -> Any:
        try:
            answer = ray.get(ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise EngineError(f"host actor on {host.name} did not answer {method} within "
                              f"{timeout:g}s") from None
        except ray.exceptions.RayActorError as exc:
            self._mark_dead(host)
            raise EngineError(f"host actor on {host.name} is gone ({type(exc).__name__}); "
                              "its sandboxes are lost") from None
        except ray.exceptions.RayError as exc:
            raise EngineError(f"host actor on {host.name}: {type(exc).__name__}: "
                              f"{str(exc)[:2000]}") from None
        return unwrap(answer, f"host {host.name}")

    def _mark_dead(self, host: _Host) -> None:
        with self._lock:
            if host.dead:
                return
            host.dead = True
        self.log(f"host actor on {host.name} died: its episodes are infrastructure failures")
        try:
            ray.kill(host.actor, no_restart=True)
        except Exception:  # already gone
            pass

    def _alive_nodes(self) -> set[str]:
        return {n["NodeID"] for n in ray.nodes() if n.get("Alive")}

    def _replace_dead(self) -> None:
        """A new actor for each dead one whose node is still alive (its plan moves over)."""
        if not any(h.dead and not h.retired for h in self.hosts):
            return
        with self._replacing:
            self._replace_locked()

    def _replace_locked(self) -> None:
        dead = [h for h in self.hosts if h.dead and not h.retired]
        alive = self._alive_nodes() if dead else set()
        for old in dead:
            old.retired = True  # tried once: a lost node or a broken engine is not retried
            if old.node_id not in alive:
                self.log(f"Ray node {old.name} is gone: no new host actor there")
                continue
            try:
                new = self._start(old.node_id)
            except EngineError as exc:
                self.log(f"no new host actor on {old.name}: {exc}")
                continue
            with self._lock:
                self.hosts[self.hosts.index(old)] = new
                new.planned, old.planned = old.planned, []
            self.replaced += 1
            self.log(f"host actor on {new.name} replaced")
            if new.planned:
                self._call(new, "plan", list(new.planned), timeout=START_S)

    def live_hosts(self) -> list[_Host]:
        self._replace_dead()
        hosts = [h for h in self.hosts if not h.dead]
        if not hosts:
            raise EngineError("no host actor is alive (every Ray node with Docker is gone)")
        return hosts

    def on_every_host(self, method: str, *args: Any,
                      timeout: float | None = None) -> list[tuple[str, Any]]:
        """(node name, value) of ``method`` on every live host, run at once."""
        hosts = self.live_hosts()
        refs = [getattr(h.actor, method).remote(*args) for h in hosts]
        out = []
        for host, ref in zip(hosts, refs):
            out.append((host.name, self._get(host, ref, method, timeout)))
        return out

    # ------------------------------------------------------------------ the pool
    def plan(self, specs: Iterable[SandboxSpec]) -> None:
        """Announce upcoming episodes: each goes to the least loaded host, which starts its
        sandbox ahead of need."""
        hosts = self.live_hosts()
        per: dict[int, list[SandboxSpec]] = {}
        with self._lock:
            for spec in specs:
                host = min(hosts, key=lambda h: h.load)
                host.planned.append(spec)
                per.setdefault(id(host), []).append(spec)
        for host in hosts:
            if id(host) in per:
                try:
                    self._call(host, "plan", per[id(host)], timeout=START_S)
                except EngineError as exc:  # its episodes fail at acquire, as infra
                    self.log(str(exc))

    def _pick(self, spec: SandboxSpec) -> _Host:
        hosts = self.live_hosts()
        with self._lock:
            planned = [h for h in hosts if spec in h.planned]
            host = min(planned or hosts, key=lambda h: h.load)
            if spec in host.planned:
                host.planned.remove(spec)
            host.live += 1
        return host

    def warm(self, spec: SandboxSpec) -> bool:
        hosts = [h for h in self.hosts if not h.dead and spec in h.planned]
        return any(self._call(h, "warm", spec, timeout=60) for h in hosts)

    def acquire(self, spec: SandboxSpec, timeout: float | None = None) -> RemoteSandbox:
        host = self._pick(spec)
        try:
            state = self._call(host, "acquire", spec, timeout,
                               timeout=None if timeout is None else timeout + 60)
            box = RemoteSandbox(self._caller(host), spec, state)
        except BaseException:
            with self._lock:
                host.live -= 1
            raise
        box.host = host
        return box

    def _caller(self, host: _Host) -> Callable[..., Any]:
        def call(method: str, *args: Any, timeout: float | None = None) -> Any:
            return self._call(host, method, *args, timeout=timeout)
        return call

    def release(self, sandbox: RemoteSandbox) -> None:
        """Give a used sandbox back; its host removes it in the background."""
        host: _Host = sandbox.host
        sandbox.conn.close()
        with self._lock:
            host.live -= 1
        if not host.dead:
            try:
                host.actor.release.remote(sandbox.id)  # not awaited: removal is the host's
            except Exception:  # the actor is gone: close() collects its containers
                pass

    def close(self) -> None:
        """Remove every container of this run on every node, then end the actors."""
        try:
            self._replace_dead()  # a dead actor's containers: the new one's gc and close
        except Exception as exc:
            self.log(f"could not replace a dead host actor: {exc}")
        for host in [h for h in self.hosts if not h.dead]:
            try:
                self._call(host, "close", timeout=START_S)
            except EngineError as exc:
                self.log(f"closing {host.name}: {exc}")
        self._kill_all()

    def _kill_all(self) -> None:
        for host in self.hosts:
            try:
                ray.kill(host.actor, no_restart=True)
            except Exception:  # already gone
                pass
