"""host_tracer(): one shared eBPF tracer per harness process, started lazily, once (#33).

The tracer is a stand-in: what is tested is when it is started, reused and replaced, not
bpftrace (tests/integration/test_ebpf_host.py runs the real one)."""

from __future__ import annotations

import threading

import pytest

from termcredit.tracer import ebpf_host
from termcredit.tracer.ebpf_host import HostTracer, host_tracer


class Proc:
    def __init__(self) -> None:
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.code


class Fake(HostTracer):
    made: list[Fake] = []

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.starts = self.stops = 0
        Fake.made.append(self)

    def start(self) -> None:
        self.starts += 1
        if self.fail:
            raise RuntimeError("bpftrace did not start")
        self.proc = Proc()  # type: ignore[assignment]

    def stop(self) -> None:
        self.stops += 1


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ebpf_host, "_host", None)
    monkeypatch.setattr(ebpf_host, "_atexit_done", True)  # no real tracer to stop at exit
    Fake.made = []


def test_started_once_for_every_session_and_every_thread() -> None:
    got: list[HostTracer] = []
    threads = [threading.Thread(target=lambda: got.append(host_tracer(Fake))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(Fake.made) == 1 and Fake.made[0].starts == 1
    assert got == [Fake.made[0]] * 8


def test_a_dead_tracer_is_stopped_and_replaced() -> None:
    first = host_tracer(Fake)
    first.proc.code = -9  # type: ignore[union-attr]  # bpftrace killed
    second = host_tracer(Fake)
    assert second is not first and (first.stops, second.starts) == (1, 1)
    assert host_tracer(Fake) is second


def test_a_failed_start_raises_and_the_next_call_tries_again() -> None:
    with pytest.raises(RuntimeError, match="did not start"):
        host_tracer(lambda: Fake(fail=True))
    assert ebpf_host._host is None
    assert host_tracer(Fake).starts == 1 and len(Fake.made) == 2


def test_exit_stops_the_running_tracer() -> None:
    tracer = host_tracer(Fake)
    ebpf_host.stop_host_tracer()
    assert tracer.stops == 1 and ebpf_host._host is None  # type: ignore[attr-defined]
