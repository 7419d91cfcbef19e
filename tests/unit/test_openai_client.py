"""The OpenAI-compatible client against a real local HTTP server: retries, backoff, Retry-After,
errors that retrying cannot fix, usage, size caps, the in-flight limit."""

from __future__ import annotations

import random
import socket
import threading
import time

import pytest
from chat_server import ScriptedChatServer, completion, error

from termcredit.harness.infra import is_infra_exception
from termcredit.llm.client import (
    ChatClient,
    ChatRequestError,
    ClientSettings,
    DeadlineReached,
    EndpointUnavailable,
)

MESSAGES = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]


def client_for(server: ScriptedChatServer, *, seed: int = 7, **kw) -> tuple[ChatClient, list]:
    slept: list[float] = []
    kw.setdefault("backoff_base", 1.0)
    c = ChatClient(ClientSettings(base_url=server.base_url, **kw), sleep=slept.append,
                   rng=random.Random(seed))
    return c, slept


def test_429_then_500_then_success_retries_with_backoff_and_records_usage():
    with ScriptedChatServer([error(429, "slow down"), error(500, "oops"),
                             completion("ls -la", prompt_tokens=31, completion_tokens=4)]) as srv:
        c, slept = client_for(srv, api_key="sk-test", backoff_base=1.0, backoff_max=60.0)
        reply = c.chat("m1", MESSAGES, max_tokens=64, temperature=0.5)
    assert reply.content == "ls -la" and reply.finish_reason == "stop"
    assert reply.usage == {"prompt_tokens": 31, "completion_tokens": 4, "total_tokens": 35}
    # the k-th retry waits 1 s * 2**k times a jitter factor 0.5 + 0.5 * u, u from the seeded rng
    u = _draws(7, 2)
    expected = [1.0 * (0.5 + 0.5 * u[0]), 2.0 * (0.5 + 0.5 * u[1])]
    assert slept == pytest.approx(expected)
    assert 0.5 <= slept[0] < 1.0 and 1.0 <= slept[1] < 2.0
    assert [r["wait_s"] for r in reply.retries] == [round(w, 3) for w in expected]
    assert [r["error"] for r in reply.retries] == ["HTTP 429: slow down", "HTTP 500: oops"]
    assert len(srv.requests) == 3
    for req in srv.requests:  # the same request each time
        assert req["path"] == "/v1/chat/completions"
        assert req["headers"]["Authorization"] == "Bearer sk-test"
        assert req["json"] == {"model": "m1", "messages": MESSAGES, "max_tokens": 64,
                               "temperature": 0.5}


def _draws(seed: int, n: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(n)]


def test_backoff_is_capped_and_real_sleeps_happen():
    c = ChatClient(ClientSettings(base_url="http://127.0.0.1:1/v1", backoff_base=1.0,
                                  backoff_max=5.0), rng=random.Random(0))
    u = _draws(0, 6)
    assert [c.backoff(k) for k in range(6)] == pytest.approx(
        [min(5.0, 2.0 ** k) * (0.5 + 0.5 * u[k]) for k in range(6)])
    with ScriptedChatServer([error(503, "busy"), completion("pwd")]) as srv:
        real = ChatClient(ClientSettings(base_url=srv.base_url, backoff_base=0.2),
                          rng=random.Random(1))
        t0 = time.monotonic()
        reply = real.chat("m", MESSAGES)
        elapsed = time.monotonic() - t0
    assert reply.content == "pwd" and elapsed >= reply.retries[0]["wait_s"] - 0.01
    assert 0.1 <= reply.retries[0]["wait_s"] < 0.2
    assert reply.latency_s >= reply.retries[0]["wait_s"] - 0.01


@pytest.mark.parametrize("headers,wait", [
    ({"Retry-After": "2"}, 2.0),
    ({"retry-after-ms": "150"}, 0.15),
    ({"Retry-After": "3600"}, 30.0),  # capped at backoff_max
    ({"Retry-After": "soon"}, None),  # unreadable: our own backoff
])
def test_retry_after_is_honoured(headers, wait):
    with ScriptedChatServer([error(429, "rate", headers), completion("id")]) as srv:
        c, slept = client_for(srv, seed=3, backoff_max=30.0)
        reply = c.chat("m", MESSAGES)
    expected = wait if wait is not None else 1.0 * (0.5 + 0.5 * _draws(3, 1)[0])
    assert slept == [pytest.approx(expected)] and reply.content == "id"


def test_retry_after_http_date():
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 5))
    with ScriptedChatServer([error(503, "later", {"Retry-After": when}), completion("x")]) as srv:
        c, slept = client_for(srv)
        c.chat("m", MESSAGES)
    assert 3.0 <= slept[0] <= 5.0  # the date has whole seconds


def test_400_fails_at_once_with_the_servers_message():
    with ScriptedChatServer([error(400, "max_tokens is too large: 99999999"),
                             completion("never")]) as srv:
        c, slept = client_for(srv)
        with pytest.raises(ChatRequestError, match=r"HTTP 400: max_tokens is too large: 99999999"
                           ) as info:
            c.chat("m", MESSAGES, max_tokens=99999999)
        assert srv.base_url in str(info.value)
        assert len(srv.requests) == 1 and slept == []
        assert not is_infra_exception(info.value)  # the request was wrong: the agent's error
        assert c.chat("m", MESSAGES).content == "never"  # a 400 is about that request only


def test_401_fails_every_later_call_without_asking_again():
    with ScriptedChatServer([error(401, "Incorrect API key provided")]) as srv:
        c, _ = client_for(srv)
        with pytest.raises(ChatRequestError, match="HTTP 401: Incorrect API key"):
            c.chat("m", MESSAGES)
        with pytest.raises(ChatRequestError, match="every later request"):
            c.chat("m", MESSAGES)
        assert len(srv.requests) == 1


def test_attempts_used_up_is_an_infrastructure_failure():
    with ScriptedChatServer([], fallback=error(503, "down")) as srv:
        c, slept = client_for(srv, max_attempts=3)
        with pytest.raises(EndpointUnavailable, match=r"no reply after 3 attempts \(last: HTTP "
                           r"503: down\)") as info:
            c.chat("m", MESSAGES)
    assert len(srv.requests) == 3 and len(slept) == 2
    assert is_infra_exception(info.value)


def test_connection_refused_is_retried():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    slept: list[float] = []
    c = ChatClient(ClientSettings(base_url=f"http://127.0.0.1:{port}/v1", max_attempts=2),
                   sleep=slept.append)
    with pytest.raises(EndpointUnavailable, match=f"127.0.0.1:{port}.*2 attempts.*ConnectionError"):
        c.chat("m", MESSAGES)
    assert len(slept) == 1


def test_deadline_stops_the_retries():
    with ScriptedChatServer([error(429, "wait", {"Retry-After": "5"})]) as srv:
        c, slept = client_for(srv)
        with pytest.raises(DeadlineReached, match="time ran out"):
            c.chat("m", MESSAGES, deadline=time.monotonic() + 1.0)
    assert slept == [] and len(srv.requests) == 1


def test_hostile_replies():
    big = b'{"choices": [{"message": {"content": "' + b"a" * 5000 + b'"}}]}'
    script = [(200, big, {}), (200, b"<html>not json", {}),
              (200, {"choices": [{"message": {"content": 42}}]}, {}),
              (200, {"choices": []}, {}),
              (400, {"error": {"message": "\x1b[31mred\x1b[0m"}}, {}),
              (200, {"choices": [{"message": {"content": None}, "finish_reason": "length"}],
                     "usage": {"prompt_tokens": True, "completion_tokens": -3,
                               "total_tokens": "7"}}, {}),
              (200, {"choices": [{"message": {"content": [{"type": "text", "text": "ec"},
                                                          {"type": "image"},
                                                          {"type": "text", "text": "ho"}]}}]},
               {})]
    with ScriptedChatServer(script) as srv:
        c, slept = client_for(srv, max_body_bytes=4096)
        with pytest.raises(ChatRequestError, match="reply body over 4096 bytes"):
            c.chat("m", MESSAGES)
        with pytest.raises(ChatRequestError, match="not JSON: '<html>not json'"):
            c.chat("m", MESSAGES)
        with pytest.raises(ChatRequestError, match="content is a int"):
            c.chat("m", MESSAGES)
        with pytest.raises(ChatRequestError, match=r"no choices\[0\]"):
            c.chat("m", MESSAGES)
        with pytest.raises(ChatRequestError) as info:
            c.chat("m", MESSAGES)
        assert "\x1b" not in str(info.value) and "\\x1b[31mred" in str(info.value)
        empty = c.chat("m", MESSAGES)
        assert (empty.content, empty.finish_reason, empty.usage) == ("", "length", {})
        assert c.chat("m", MESSAGES).content == "echo"
    assert slept == []  # none of these is retried


def test_in_flight_requests_are_limited_per_client():
    with ScriptedChatServer([], fallback=completion("ok"), delay=0.3) as srv:
        c, _ = client_for(srv, max_requests=2)
        threads = [threading.Thread(target=c.chat, args=("m", MESSAGES)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert len(srv.requests) == 6 and srv.max_in_flight == 2
