"""A real OpenAI-compatible HTTP server for tests, scripted: a ThreadingHTTPServer on 127.0.0.1
(a free port) in a thread; each POST gets the next answer of its script. It records every
request (path, headers, JSON body) and how many were in flight at once."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

# an answer: (status, body, headers); body a dict (sent as JSON), bytes or str
Answer = tuple[int, Any, dict[str, str]]


def completion(content: str | None, prompt_tokens: int = 10, completion_tokens: int = 5,
               finish_reason: str = "stop") -> Answer:
    return (200, {"id": "chatcmpl-test", "object": "chat.completion", "model": "scripted",
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                               "finish_reason": finish_reason}],
                  "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                            "total_tokens": prompt_tokens + completion_tokens}}, {})


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Answer:
    return (status, {"error": {"message": message, "type": "test"}}, headers or {})


class ScriptedChatServer:
    def __init__(self, script: list[Answer | Callable[[dict], Answer]], *,
                 fallback: Answer | None = None, delay: float = 0.0):
        self.script = list(script)
        self.fallback = fallback or error(500, "the test's script is used up")
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                req = {"path": self.path, "headers": dict(self.headers),
                       "json": json.loads(body or b"null")}
                with outer._lock:
                    outer.requests.append(req)
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                    answer = outer.script.pop(0) if outer.script else outer.fallback
                try:
                    if outer.delay:
                        time.sleep(outer.delay)
                    status, payload, headers = answer(req) if callable(answer) else answer
                    data = (payload if isinstance(payload, bytes) else payload.encode()
                            if isinstance(payload, str) else json.dumps(payload).encode())
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)
