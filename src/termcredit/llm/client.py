"""A small client for OpenAI-compatible ``POST {base_url}/chat/completions``, with our own
retries.

Plain HTTP through ``requests`` (the docker SDK already depends on it) rather than the ``openai``
SDK: the agent needs one endpoint and one non-streaming call, and what it does when the endpoint
misbehaves is a contract we record per step and test — which answers are retried, how long it
waits, how many times, how much it reads. The SDK would bring its own retry loop (to be switched
off), pydantic models and an httpx stack for none of that.

* Retried: HTTP 408, 409, 429 and 5xx, connection errors and read timeouts; at most
  ``max_attempts`` tries. The wait is the server's ``retry-after-ms`` / ``Retry-After`` when it
  sends one (capped at ``backoff_max``), else ``min(backoff_max, backoff_base * 2**k)`` times a
  jitter factor in [0.5, 1) for the k-th retry. Retries used up: ``EndpointUnavailable`` (a
  ``ConnectionError``, so the trial is an infrastructure failure, not the model's).
* Not retried: any other 4xx (bad request, bad key, unknown model), a 2xx body that is not a
  chat completion, a body over ``max_body_bytes``: ``ChatRequestError`` naming the status and the
  server's message. After a 401, 403 or 404 every later call fails at once with the same error
  (the key or URL will not get better within a run).
* ``max_requests`` requests in flight at once per client (one client per endpoint and run),
  whatever the number of trials running.

The reply is untrusted text: its size is bounded while it streams in, and every field read from
it is type-checked.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Callable

import requests

RETRY_STATUS = frozenset({408, 409, 429})
STICKY_STATUS = frozenset({401, 403, 404})  # a bad key or URL: no later call can succeed
_MESSAGE_CAP = 500  # characters of a server's error text kept in our message
# a connection that failed, timed out or broke mid-body: worth another try
_TRANSIENT = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError,
              requests.exceptions.ContentDecodingError)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class ChatRequestError(RuntimeError):
    """The endpoint refused the request, or answered with something that is not a chat
    completion; retrying cannot fix it."""


class EndpointUnavailable(ConnectionError):
    """The endpoint kept failing (HTTP 429/5xx, connection errors) through every attempt."""


class DeadlineReached(TimeoutError):
    """The caller's deadline passed before a reply came."""


@dataclass
class ClientSettings:
    base_url: str
    api_key: str | None = None
    max_requests: int = 4  # in flight at once, per endpoint
    max_attempts: int = 6
    backoff_base: float = 1.0  # seconds before the first retry (before jitter)
    backoff_max: float = 60.0  # no wait is longer, Retry-After included
    request_timeout: float = 600.0  # one attempt, connect to last byte
    max_body_bytes: int = 8 << 20


@dataclass
class Reply:
    content: str
    finish_reason: str | None
    usage: dict[str, int]  # prompt_tokens, completion_tokens, total_tokens: those the server sent
    retries: list[dict[str, Any]] = field(default_factory=list)  # {"error", "wait_s"} per retry
    latency_s: float = 0.0  # first attempt to reply, waits included


class _Retry(Exception):
    def __init__(self, error: str, retry_after: float | None = None):
        super().__init__(error)
        self.error, self.retry_after = error, retry_after


class ChatClient:
    def __init__(self, settings: ClientSettings, *, sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None):
        if settings.max_requests < 1 or settings.max_attempts < 1:
            raise ValueError("max_requests and max_attempts must be at least 1")
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self._slots = threading.BoundedSemaphore(settings.max_requests)
        self._sleep, self._rng = sleep, rng or random.Random()
        self._rng_lock = threading.Lock()
        self._local = threading.local()  # one requests.Session per thread
        self._sticky: str | None = None

    def backoff(self, retry: int) -> float:
        """The wait before retry ``retry`` (0-based) when the server names none."""
        s = self.settings
        with self._rng_lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        return min(s.backoff_max, s.backoff_base * 2 ** retry) * jitter

    def chat(self, model: str, messages: list[dict[str, str]], *, max_tokens: int | None = None,
             temperature: float | None = None, deadline: float | None = None) -> Reply:
        """One chat completion. ``deadline`` (time.monotonic()): give up with DeadlineReached
        rather than wait or send past it."""
        if self._sticky is not None:
            raise ChatRequestError(self._sticky)
        body: dict[str, Any] = {"model": model, "messages": messages}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        data = json.dumps(body).encode()
        t0 = time.monotonic()
        retries: list[dict[str, Any]] = []
        for attempt in range(self.settings.max_attempts):
            try:
                reply = self._attempt(data, deadline)
                reply.retries, reply.latency_s = retries, time.monotonic() - t0
                return reply
            except _Retry as exc:
                if attempt + 1 >= self.settings.max_attempts:
                    raise EndpointUnavailable(
                        f"{self.url}: no reply after {attempt + 1} attempts (last: {exc.error})"
                    ) from None
                wait = (min(self.settings.backoff_max, exc.retry_after)
                        if exc.retry_after is not None else self.backoff(attempt))
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise DeadlineReached(f"{self.url}: the agent's time ran out while retrying "
                                          f"({exc.error})") from None
                retries.append({"error": exc.error, "wait_s": round(wait, 3)})
                self._sleep(wait)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ one attempt
    def _session(self) -> requests.Session:
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = requests.Session()
            s.trust_env = True  # HTTPS_PROXY / NO_PROXY / CA bundle as the user set them
        return s

    def _attempt(self, data: bytes, deadline: float | None) -> Reply:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        timeout = self.settings.request_timeout
        with self._slots:
            if deadline is not None:
                timeout = min(timeout, deadline - time.monotonic())
                if timeout <= 0:
                    raise DeadlineReached(f"{self.url}: the agent's time ran out")
            end = time.monotonic() + timeout
            try:
                with self._session().post(self.url, data=data, headers=headers, stream=True,
                                          timeout=(min(timeout, 30.0), timeout)) as resp:
                    raw = self._read(resp, end)
                    status, resp_headers = resp.status_code, resp.headers
            except _TRANSIENT as exc:
                if deadline is not None and time.monotonic() >= deadline:
                    raise DeadlineReached(f"{self.url}: the agent's time ran out") from None
                raise _Retry(f"{type(exc).__name__}: {_short(str(exc))}") from None
        if status in RETRY_STATUS or 500 <= status < 600:
            raise _Retry(f"HTTP {status}: {_error_text(raw)}", _retry_after(resp_headers))
        if not 200 <= status < 300:
            msg = f"{self.url}: HTTP {status}: {_error_text(raw)}"
            if status in STICKY_STATUS:
                self._sticky = msg + " (every later request of this run fails the same way)"
            raise ChatRequestError(msg)
        return _parse_reply(raw, self.url)

    def _read(self, resp: requests.Response, end: float) -> bytes:
        """The body, at most ``max_body_bytes``, before ``end`` (a server dripping bytes
        cannot hold a trial past its timeout)."""
        cap, chunks, n = self.settings.max_body_bytes, [], 0
        for chunk in resp.iter_content(65536):
            n += len(chunk)
            if n > cap:
                raise ChatRequestError(f"{self.url}: reply body over {cap} bytes")
            chunks.append(chunk)
            if time.monotonic() > end:
                raise requests.Timeout("reply not complete within "
                                       f"{self.settings.request_timeout:g}s")
        return b"".join(chunks)


def _parse_reply(raw: bytes, url: str) -> Reply:
    def bad(why: str) -> ChatRequestError:
        return ChatRequestError(f"{url}: the reply is not a chat completion ({why})")

    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise bad(f"not JSON: {_short(raw.decode('utf-8', 'replace'))!r}") from None
    if not isinstance(doc, dict):
        raise bad("not a JSON object")
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise bad("no choices[0]")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise bad("no choices[0].message")
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content
                          if isinstance(p, dict) and isinstance(p.get("text"), str))
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise bad(f"choices[0].message.content is a {type(content).__name__}")
    finish = choices[0].get("finish_reason")
    usage_doc = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    usage = {k: v for k in ("prompt_tokens", "completion_tokens", "total_tokens")
             if type(v := usage_doc.get(k)) is int and v >= 0}
    return Reply(content=content, finish_reason=finish if isinstance(finish, str) else None,
                 usage=usage)


def _retry_after(headers: Any) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms`` (OpenAI) or ``Retry-After``
    (seconds or an HTTP date); None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    try:
        if ms is not None and float(ms) >= 0:
            return float(ms) / 1000
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        secs = float(value)
    except ValueError:
        try:
            secs = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return max(0.0, secs) if secs == secs else None  # NaN: unreadable


def _error_text(raw: bytes) -> str:
    """The server's error message (OpenAI's {"error": {"message"}}), else its body, short."""
    text = raw.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
        err = doc.get("error") if isinstance(doc, dict) else None
        msg = err.get("message") if isinstance(err, dict) else err
        if isinstance(msg, str) and msg:
            text = msg
    except ValueError:
        pass
    return _short(text.strip()) or "(empty body)"


def _short(text: str) -> str:
    """Server text for our messages: short, control characters as escapes (it is printed)."""
    text = text if len(text) <= _MESSAGE_CAP else text[:_MESSAGE_CAP] + "…"
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
