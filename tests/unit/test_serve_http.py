"""`termcredit serve`'s protocol, HTTP layer and model sources, with a stand-in for the model
(the real policy behind it: tests/unit/trainer/test_serve_engine.py; the whole command:
tests/integration/test_serve.py). Requests go over real sockets to a real server in a thread."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests

from termcredit.serve.protocol import ApiError, Completion, ChatRequest, parse_request
from termcredit.serve.server import MAX_BODY_BYTES, RequestLog, make_server


def log_lines(log: io.StringIO, n: int) -> list[str]:
    """The log once it has ``n`` lines (a request's line follows its reply by a moment)."""
    deadline = time.monotonic() + 5
    while len(lines := log.getvalue().splitlines()) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return lines


def body(**kw) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": "hi"}], **kw}).encode()


def test_a_full_request_is_read_field_by_field():
    req = parse_request(json.dumps({
        "model": "x", "messages": [{"role": "developer", "content": "be brief"},
                                   {"role": "user", "content": [{"type": "text", "text": "a"},
                                                                {"type": "text", "text": "b"}]},
                                   {"role": "assistant", "content": None}],
        "max_tokens": 9, "max_completion_tokens": 7, "temperature": 0, "top_p": 0.5, "seed": 3,
        "stop": "\n", "stream": True, "stream_options": {"include_usage": True},
        "frequency_penalty": 0.1, "user": "u"}).encode())
    assert req == ChatRequest(messages=[{"role": "system", "content": "be brief"},
                                        {"role": "user", "content": "ab"},
                                        {"role": "assistant", "content": ""}],
                              max_tokens=7, temperature=0.0, top_p=0.5, seed=3, stop=("\n",),
                              stream=True, include_usage=True, model="x")
    plain = parse_request(body())
    assert (plain.max_tokens, plain.temperature, plain.top_p, plain.seed, plain.stop,
            plain.stream) == (None, 1.0, 1.0, None, (), False)


@pytest.mark.parametrize("raw,param,words", [
    (b"{not json", None, "not valid JSON"),
    (b"\xff\xfe", None, "not UTF-8"),
    (b"[1, 2]", None, "must be a JSON object"),
    (b"{}", "messages", "missing"),
    (json.dumps({"messages": []}).encode(), "messages", "non-empty list"),
    (json.dumps({"messages": ["hi"]}).encode(), "messages[0]", "object with role"),
    (json.dumps({"messages": [{"role": "root", "content": "x"}]}).encode(), "messages[0].role",
     "must be one of"),
    (json.dumps({"messages": [{"role": "user", "content": 5}]}).encode(),
     "messages[0].content", "not int"),
    (json.dumps({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}).encode(),
     "messages[0].content[0]", "only text parts"),
    (body(max_tokens=0), "max_tokens", "at least 1"),
    (body(max_tokens=True), "max_tokens", "whole number"),
    (body(max_tokens="5"), "max_tokens", "whole number"),
    (body(temperature=2.5), "temperature", "at most 2"),
    (body(temperature=False), "temperature", "must be a number"),
    (body(top_p=0), "top_p", "above 0"),
    (body(seed=-1), "seed", "0 to 2**63"),
    (body(n=2), "n", "only n = 1"),
    (body(stop=["a", ""]), "stop", "non-empty string"),
    (body(stop=list("abcde")), "stop", "at most 4"),
    (body(stream="yes"), "stream", "true or false"),
    (body(stream_options={"include_usage": 1}), "stream_options", "include_usage"),
    (body(model=7), "model", "must be a string"),
])
def test_bad_requests_name_the_field(raw, param, words):
    with pytest.raises(ApiError) as info:
        parse_request(raw)
    err = info.value
    assert err.status == 400 and err.param == param and words in err.message
    if param:
        assert err.message.startswith(param + ":")
    assert err.body()["error"]["param"] == param


class _Model:
    """Stands in for the policy: records the requests, answers with a fixed completion."""

    def __init__(self):
        self.seen: list[ChatRequest] = []

    def __call__(self, req: ChatRequest) -> Completion:
        self.seen.append(req)
        if req.messages[-1]["content"] == "crash":
            raise RuntimeError("boom\x1b[2J")
        return Completion("echo hi", prompt_tokens=11, completion_tokens=4, finish_reason="stop")


@pytest.fixture
def server():
    model, stream = _Model(), io.StringIO()
    httpd = make_server(model, "served-name", port=0, log=RequestLog(stream=stream))
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield url, model, stream
    httpd.shutdown()
    httpd.server_close()
    t.join(timeout=10)


def test_chat_completion_models_and_the_log(server):
    url, model, log = server
    r = requests.post(url + "/v1/chat/completions", data=body(model="whatever", max_tokens=5))
    assert r.status_code == 200
    doc = r.json()
    assert doc["object"] == "chat.completion" and doc["model"] == "served-name"
    assert doc["choices"] == [{"index": 0, "message": {"role": "assistant", "content": "echo hi"},
                               "finish_reason": "stop", "logprobs": None}]
    assert doc["usage"] == {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}
    assert model.seen[0].max_tokens == 5
    models = requests.get(url + "/v1/models").json()
    assert [m["id"] for m in models["data"]] == ["served-name"]
    lines = log_lines(log, 2)
    assert len(lines) == 2
    assert " 127.0.0.1 POST /v1/chat/completions 200 prompt_tokens=11 completion_tokens=4 " \
        in lines[0] and lines[0].endswith("ms")
    assert " GET /v1/models 200 " in lines[1]


def test_stream_sends_server_sent_events(server):
    url, _, _ = server
    r = requests.post(url + "/v1/chat/completions",
                      data=body(stream=True, stream_options={"include_usage": True}))
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/event-stream"
    events = [e.removeprefix("data: ") for e in r.text.split("\n\n") if e]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "echo hi"}
    assert chunks[1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert chunks[2]["usage"]["total_tokens"] == 15 and chunks[2]["choices"] == []
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}


def test_errors_are_json_with_the_right_status(server):
    url, model, log = server
    cases = [
        (requests.post(url + "/v1/chat/completions", data=b'{"messages": 3}'), 400, "messages"),
        (requests.post(url + "/v1/completions", data=body()), 404, None),
        (requests.get(url + "/v1/chat/completions"), 404, None),
        (requests.delete(url + "/v1/models"), 405, None),
        (requests.post(url + "/v1/chat/completions", data=body(stop=5)), 400, "stop"),
    ]
    for r, status, param in cases:
        assert r.status_code == status, r.text
        assert r.json()["error"]["param"] == param
    crash = requests.post(url + "/v1/chat/completions",
                          json={"messages": [{"role": "user", "content": "crash"}]})
    assert crash.status_code == 500
    assert crash.json()["error"]["message"] == "generation failed: RuntimeError: boom\\x1b[2J"
    # the server lives on
    assert requests.post(url + "/v1/chat/completions", data=body()).status_code == 200
    statuses = [line.split()[4] for line in log_lines(log, 7)]
    assert statuses == ["400", "404", "404", "405", "400", "500", "200"]


def _raw(url: str, data: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)  # all we send: a short body ends here
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_body_limits_and_hostile_request_lines(server):
    url, model, log = server
    big = _raw(url, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
               + str(MAX_BODY_BYTES + 1).encode() + b"\r\n\r\n")
    assert big.startswith(b"HTTP/1.1 413") and b"at most" in big
    chunked = _raw(url, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 411")
    nolen = _raw(url, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert nolen.startswith(b"HTTP/1.1 411")
    short = _raw(url, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n"
                 b"\r\n{\"messages\"")
    assert short.startswith(b"HTTP/1.1 400") and b"ended after 11 of 50 bytes" in short
    evil = _raw(url, b"GET /\x1b[31mred\x1b[0m HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert evil.startswith(b"HTTP/1.1 404")
    assert model.seen == []  # none of these reached the model
    text = "\n".join(log_lines(log, 5))
    assert "\x1b" not in text and "GET /\\x1b[31mred\\x1b[0m 404" in text


def test_a_peer_that_stalls_mid_body_gets_408(monkeypatch):
    monkeypatch.setattr("termcredit.serve.server.READ_TIMEOUT", 0.5)
    model, log = _Model(), io.StringIO()
    httpd = make_server(model, "m", port=0, log=RequestLog(stream=log))
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        with socket.create_connection(("127.0.0.1", httpd.server_address[1]), timeout=10) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99\r\n"
                      b"\r\n{")  # and nothing more, the socket left open
            t0 = time.monotonic()
            reply = b""  # headers and body may come in two segments: read to the close
            while (chunk := s.recv(65536)) and time.monotonic() - t0 < 5:
                reply += chunk
            assert time.monotonic() - t0 < 5
        assert reply.startswith(b"HTTP/1.1 408") and b"did not arrive within 0.5s" in reply
        assert model.seen == []
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join(timeout=10)


def test_model_sources_a_user_may_name(tmp_path):
    from termcredit.serve.engine import resolve_source, served_name

    hf = tmp_path / "hf"
    (hf).mkdir()
    (hf / "config.json").write_text("{}")
    run = tmp_path / "run"
    for step in ("step-000002", "step-000010"):
        (run / "checkpoints" / step / "model").mkdir(parents=True)
        (run / "checkpoints" / step / "model" / "config.json").write_text("{}")
    ckpt = run / "checkpoints" / "step-000002"
    assert resolve_source("tiny") == "tiny" and resolve_source(str(hf)) == str(hf)
    assert resolve_source(str(ckpt)) == str(ckpt / "model")
    assert resolve_source(str(run)) == str(run / "checkpoints" / "step-000010" / "model")
    with pytest.raises(ValueError, match="not a model directory"):
        resolve_source(str(tmp_path / "run" / "checkpoints"))
    assert served_name("smollm2-135m") == "smollm2-135m" and served_name(str(ckpt)) == "step-000002"


def test_serve_without_torch_says_which_extra_it_needs():
    code = ("import sys; sys.modules['torch'] = None  # as if torch were not installed\n"
            "from termcredit.cli import main; sys.exit(main(['serve', '--port', '0']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "300"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert "error: termcredit serve runs the model with torch and transformers, which come with " \
        "the `train` extra: pip install 'termcredit[train]'" in proc.stderr
    assert "Traceback" not in proc.stderr
