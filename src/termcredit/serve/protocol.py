"""The OpenAI chat-completions protocol, as much of it as `termcredit serve` speaks: a request
body checked field by field into a ``ChatRequest``, and the response documents. No torch here.

Every field we use is type-checked (a bool is not a number); a bad one is an ``ApiError`` (HTTP
400) that names it, in OpenAI's error shape. Fields we do not use (``frequency_penalty``,
``user``, ``tools``, ...) are ignored, as a client library sends many of them by default.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool"}  # developer: OpenAI's newer name for the system role
MAX_MESSAGES = 4096
MAX_STOP = 4


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None,
                 kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.kind = status, message, param, kind

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param,
                          "code": None}}


@dataclass
class ChatRequest:
    messages: list[dict[str, str]]  # {"role", "content"}, roles normalised
    max_tokens: int | None = None  # None: the server's cap
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False  # stream_options.include_usage
    model: str | None = None


def _bad(param: str, why: str) -> ApiError:
    return ApiError(400, f"{param}: {why}", param)


def _number(body: dict, name: str, lo: float, hi: float, default: float,
            lo_open: bool = False) -> float:
    v = body.get(name)
    if v is None:
        return default
    if type(v) not in (int, float) or v != v:
        raise _bad(name, f"must be a number, not {json.dumps(v)[:40]}")
    if v > hi or v < lo or (lo_open and v == lo):
        raise _bad(name, f"must be {'above' if lo_open else 'at least'} {lo:g} and at most "
                   f"{hi:g}, not {v}")
    return float(v)


def _content(msg: Any, k: int) -> str:
    param = f"messages[{k}].content"
    content = msg.get("content")
    if content is None:
        return ""  # an assistant turn that only called tools
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: text only
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" \
                    or not isinstance(part.get("text"), str):
                raise _bad(f"{param}[{j}]", "only text parts ({\"type\": \"text\", \"text\": "
                           "...}) are supported")
            texts.append(part["text"])
        return "".join(texts)
    raise _bad(param, f"must be a string or a list of text parts, not {type(content).__name__}")


def parse_request(raw: bytes) -> ChatRequest:
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, "the body is not UTF-8") from None
    except ValueError as exc:
        raise ApiError(400, f"the body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object")
    msgs = body.get("messages")
    if msgs is None:
        raise _bad("messages", "missing (a list of {\"role\", \"content\"} objects)")
    if not isinstance(msgs, list) or not msgs:
        raise _bad("messages", "must be a non-empty list")
    if len(msgs) > MAX_MESSAGES:
        raise _bad("messages", f"at most {MAX_MESSAGES} messages")
    messages = []
    for k, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise _bad(f"messages[{k}]", "must be an object with role and content")
        role = m.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise _bad(f"messages[{k}].role", f"must be one of {', '.join(ROLES)}, not "
                       f"{json.dumps(role)[:40]}")
        messages.append({"role": ROLES[role], "content": _content(m, k)})
    req = ChatRequest(messages=messages)
    for name in ("max_completion_tokens", "max_tokens"):  # the newer name wins
        v = body.get(name)
        if v is not None:
            if type(v) is not int or v < 1:
                raise _bad(name, f"must be a whole number of at least 1, not {json.dumps(v)[:40]}")
            req.max_tokens = v
            break
    req.temperature = _number(body, "temperature", 0.0, 2.0, 1.0)
    req.top_p = _number(body, "top_p", 0.0, 1.0, 1.0, lo_open=True)
    seed = body.get("seed")
    if seed is not None and (type(seed) is not int or not 0 <= seed < 2 ** 63):
        raise _bad("seed", "must be a whole number from 0 to 2**63 - 1")
    req.seed = seed
    n = body.get("n")
    if n is not None and (type(n) is not int or n != 1):
        raise _bad("n", "only n = 1 is supported")
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop is not None:
        if not isinstance(stop, list) or len(stop) > MAX_STOP or not all(
                isinstance(s, str) and s for s in stop):
            raise _bad("stop", f"must be a non-empty string or a list of at most {MAX_STOP}")
        req.stop = tuple(stop)
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise _bad("stream", "must be true or false")
    req.stream = bool(stream)
    opts = body.get("stream_options")
    if opts is not None:
        if not isinstance(opts, dict) or not isinstance(opts.get("include_usage", False), bool):
            raise _bad("stream_options", "must be {\"include_usage\": true|false}")
        req.include_usage = bool(opts.get("include_usage"))
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise _bad("model", "must be a string")
    req.model = model
    return req


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # stop | length

    @property
    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens}


def completion_body(c: Completion, model: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": c.text},
                         "finish_reason": c.finish_reason, "logprobs": None}],
            "usage": c.usage}


def stream_events(c: Completion, model: str, include_usage: bool) -> list[bytes]:
    """The whole reply as server-sent events: one content delta (generation is not
    incremental), the finish reason, the usage if asked, ``[DONE]``."""
    head = {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}
    chunks = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": c.text},
                                    "finish_reason": None}]},
              {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": c.finish_reason}]}]
    if include_usage:
        chunks.append({**head, "choices": [], "usage": c.usage})
    return [f"data: {json.dumps(ch)}\n\n".encode() for ch in chunks] + [b"data: [DONE]\n\n"]


def models_body(model: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": 0,
                                        "owned_by": "termcredit"}]}
