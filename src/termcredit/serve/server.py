"""The HTTP side of `termcredit serve`: the standard library's ThreadingHTTPServer (one thread per
connection; generation itself is serialised by the engine), which is all one local model server
needs.

    POST /v1/chat/completions   non-streaming, or "stream": true (server-sent events)
    GET  /v1/models             the one model served
    GET  /health                200 once the model is loaded

Everything from the peer is untrusted: the body is read only up to ``MAX_BODY_BYTES`` and only
with a Content-Length, a slow peer times out, bad requests get a JSON error naming the field,
and the request line is logged with its control characters escaped. One line per request
(time, peer, method, path, status, tokens, milliseconds) goes to stderr and the log file.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any, Callable

from .protocol import ApiError, Completion, completion_body, models_body, parse_request, \
    stream_events

MAX_BODY_BYTES = 4 << 20
READ_TIMEOUT = 60.0  # seconds a peer may take to send its request
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class RequestLog:
    """One line per request to stderr and, when given, appended to a file."""

    def __init__(self, path: str | None = None, stream: IO[str] | None = None):
        self.stream = stream or sys.stderr
        self.file = open(path, "a", buffering=1, encoding="utf-8") if path else None
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        with self._lock:
            for out in (self.stream, self.file):
                if out is not None:
                    out.write(line + "\n")
                    out.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _printable(text: str, cap: int = 200) -> str:
    text = text if len(text) <= cap else text[:cap] + "…"
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def make_server(complete: Callable[..., Completion], model: str, *, host: str = "127.0.0.1",
                port: int = 0, log: RequestLog | None = None) -> ThreadingHTTPServer:
    """A bound server (``port`` 0: a free one, see ``server_address``); call serve_forever."""
    log = log or RequestLog()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = READ_TIMEOUT
        server_version = "termcredit-serve"

        def log_message(self, format: str, *args: Any) -> None:  # our own line instead
            pass

        def _done(self, status: int, t0: float, c: Completion | None = None) -> None:
            tokens = (f" prompt_tokens={c.prompt_tokens} completion_tokens="
                      f"{c.completion_tokens}" if c else "")
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {self.client_address[0]} "
                      f"{_printable(self.command or '?', 10)} {_printable(self.path or '')} "
                      f"{status}{tokens} {(time.monotonic() - t0) * 1000:.0f}ms")

        def _json(self, status: int, doc: dict[str, Any]) -> None:
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, err: ApiError, t0: float) -> None:
            if err.status >= 400 and err.status != 404:
                self.close_connection = True  # the rest of a refused body is not read
            self._json(err.status, err.body())
            self._done(err.status, t0)

        def _route(self) -> str:
            return self.path.split("?", 1)[0]

        def do_GET(self) -> None:
            t0 = time.monotonic()
            route = self._route()
            if route == "/v1/models":
                self._json(200, models_body(model))
            elif route == "/health":
                self._json(200, {"status": "ok", "model": model})
            else:
                return self._error(ApiError(404, f"no such path: GET {_printable(route)}",
                                            kind="not_found"), t0)
            self._done(200, t0)

        def do_POST(self) -> None:
            t0 = time.monotonic()
            if self._route() != "/v1/chat/completions":
                return self._error(ApiError(404, f"no such path: POST "
                                            f"{_printable(self._route())}", kind="not_found"), t0)
            try:
                req = parse_request(self._body())
                c = complete(req)
            except ApiError as err:
                return self._error(err, t0)
            except Exception as exc:  # a bug or a model failure: this request fails, not us
                return self._error(ApiError(500, f"generation failed: {type(exc).__name__}: "
                                            f"{_printable(str(exc))}", kind="server_error"), t0)
            if req.stream:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for event in stream_events(c, model, req.include_usage):
                    self.wfile.write(event)
            else:
                self._json(200, completion_body(c, model))
            self._done(200, t0, c)

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding"):
                raise ApiError(411, "send the body with a Content-Length (no chunked encoding)")
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                raise ApiError(411, "a Content-Length header is required")
            n = int(length)
            if n > MAX_BODY_BYTES:
                raise ApiError(413, f"the body is {n} bytes; at most {MAX_BODY_BYTES}")
            try:
                data = self.rfile.read(n)
            except OSError:  # the read timed out or the peer went away
                raise ApiError(408, f"the body did not arrive within {READ_TIMEOUT:g}s") from None
            if len(data) < n:
                raise ApiError(400, f"the body ended after {len(data)} of {n} bytes")
            return data

        def _not_allowed(self) -> None:
            self._error(ApiError(405, f"method {_printable(self.command, 10)} not allowed"),
                        time.monotonic())

        do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _not_allowed

    class Server(ThreadingHTTPServer):
        daemon_threads = True  # a hung peer does not hold up shutdown
        request_queue_size = 64

        def handle_error(self, request: Any, client_address: Any) -> None:
            exc = sys.exc_info()[1]  # a peer that left mid-reply: one line, no traceback
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {client_address[0]} connection "
                      f"error: {type(exc).__name__}: {_printable(str(exc))}")

    return Server((host, port), Handler)
