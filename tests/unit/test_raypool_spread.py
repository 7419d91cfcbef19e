"""How RayPool spreads sandboxes over host actors (several nodes; this machine has one, so the
actors here are fakes and ray.get is the identity): the plan goes to the least loaded host, a
sandbox comes from the host that planned it, a dead actor is an engine error and is skipped."""

from __future__ import annotations

import threading

import pytest

ray = pytest.importorskip("ray")  # the dev extra installs it; a clean clone has it

from termcredit.sandbox import EngineError, SandboxSpec  # noqa: E402
from termcredit.sandbox import raypool  # noqa: E402
from termcredit.sandbox.raypool import RayPool, _Host  # noqa: E402

A, B, C = (SandboxSpec(image=i) for i in ("a", "b", "c"))


class FakeActor:
    """Each method's ``.remote`` records the call and returns the answer as the "ref"."""

    def __init__(self, name: str, prefix: str):
        self.name, self.prefix, self.calls, self.dead, self.n = name, prefix, [], False, 0

    def __getattr__(self, method):
        actor = self

        class Method:
            def remote(self, *args):
                actor.calls.append((method, args))
                if actor.dead:
                    return ray.exceptions.ActorDiedError()
                if method == "acquire":
                    actor.n += 1
                    sid = f"{actor.prefix}{actor.n}".ljust(64, "0")
                    return {"ok": {"id": sid, "workdir": "/", "node": actor.name,
                                   "nonces": {"agent": "0" * 16, "verifier": "1" * 16},
                                   "startup": {"agent": "", "verifier": ""},
                                   "agent": {"session_trace": ["", ""], "integrity": [],
                                             "seq": 0, "started": True}}}
                return {"ok": None}
        return Method()


KILLED: list = []


def fake_get(ref, timeout=None):
    if isinstance(ref, Exception):
        raise ref
    return ref


@pytest.fixture
def pool(monkeypatch):
    monkeypatch.setattr(raypool.ray, "get", fake_get)  # nothing here may start Ray
    monkeypatch.setattr(raypool.ray, "kill", lambda actor, no_restart: KILLED.append(actor))
    KILLED.clear()
    p = RayPool.__new__(RayPool)
    p.run_id, p.ahead, p.logs = "r", 2, []
    p.log = p.logs.append
    p._lock, p._replacing = threading.Lock(), threading.Lock()
    p.stale, p.replaced, p._started = [], 0, 0
    p.hosts = [_Host("node1", FakeActor("h1", "aa"), "h1"),
               _Host("node2", FakeActor("h2", "bb"), "h2")]
    p._alive_nodes = lambda: set()  # a dead actor's node is gone too: nothing to replace
    return p


def planned(pool):
    return [[s.image for s in h.planned] for h in pool.hosts]


def test_the_plan_goes_to_the_least_loaded_host_and_a_sandbox_to_the_host_that_planned_it(pool):
    h1, h2 = pool.hosts
    pool.plan([A, B, A, B, A])
    assert planned(pool) == [["a", "a", "a"], ["b", "b"]]  # ties go to the first host
    assert h1.actor.calls == [("plan", ([A, A, A],))] and h2.actor.calls == [("plan", ([B, B],))]
    box = pool.acquire(A, timeout=5)  # h1 planned it, though h2 is less loaded (2 < 3)
    assert box.host is h1 and box.id.startswith("aa1") and (h1.live, h1.load) == (1, 3)
    assert pool.acquire(C).host is h2  # nobody planned c: the least loaded host (2 < 3)
    assert planned(pool) == [["a", "a"], ["b", "b"]] and h2.load == 3
    pool.release(box)
    assert h1.live == 0 and h1.actor.calls[-1] == ("release", (box.id,))
    assert box.conn.closed


def test_a_dead_actor_is_an_engine_error_and_later_sandboxes_go_elsewhere(pool):
    h1, h2 = pool.hosts
    pool.plan([A, A])
    h1.actor.dead = True
    with pytest.raises(EngineError, match="host actor on h1 is gone"):
        pool.acquire(A)
    assert h1.dead and h1.live == 0 and KILLED == [h1.actor]  # ended for sure
    assert pool.acquire(A).host is h2  # h1's node is gone: not replaced, skipped
    assert h1.retired and "Ray node h1 is gone: no new host actor there" in pool.logs
    box = pool.acquire(A)
    h2.actor.dead = True
    with pytest.raises(EngineError, match="host actor on h2 is gone"):
        box.run("true")  # a step on a lost host: the episode's infrastructure failure
    with pytest.raises(EngineError, match="no host actor is alive"):
        pool.acquire(A)
