"""Untrusted bytes as text: one representation, everywhere.

File names, commands, output and traces come from the sandbox and may be any bytes. In memory
they are ``str`` in which each byte that is not UTF-8 is a lone surrogate U+DC80..U+DCFF
(Python's ``surrogateescape``, what ``os.fsdecode`` and the tracer give). Every stage keeps that
form; only these functions turn it into something else:

- text files (traces, logs, verifier output): the original bytes (``write_text``/``read_text``);
- JSON (trajectory.json, steps.jsonl, result.json, graph.json, ``--json`` output): UTF-8 with
  each lone surrogate written as a ``\\udcXX`` escape (``json_dumps``), which ``json.loads``
  reads back to the same string (text that is UTF-8 stays readable as it is);
- for people and policies (viewer, terminal, a policy's observations): ``printable`` shows each
  such byte as ``\\xNN``; a tokenizer, a browser or a strict stream cannot take surrogates.

A high surrogate (U+D800..U+DBFF) never comes from bytes; one in text from elsewhere is
written as ``?`` in a text file and escaped in JSON (two escapes in a row read back as a pair).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def to_bytes(text: str) -> bytes:
    """The bytes ``text`` was decoded from (a surrogate that no byte gives becomes ``?``)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def from_bytes(data: bytes) -> str:
    """Bytes as text, each byte that is not UTF-8 kept as a surrogate (``to_bytes`` inverts)."""
    return data.decode("utf-8", "surrogateescape")


def write_text(path: Path, text: str) -> None:
    Path(path).write_bytes(to_bytes(text))


def read_text(path: Path) -> str:
    return from_bytes(Path(path).read_bytes())


def _escape(m: re.Match[str]) -> str:
    return "\\u%04x" % ord(m.group())


def json_dumps(obj: Any, **kw: Any) -> str:
    """``json.dumps`` whose output is always encodable as UTF-8 and reads back with
    ``json.loads`` to the same strings (lone surrogates escaped, other text as it is)."""
    return _SURROGATE.sub(_escape, json.dumps(obj, ensure_ascii=False, **kw))


def _show(m: re.Match[str]) -> str:
    code = ord(m.group())
    return "\\x%02x" % (code - 0xDC00) if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def printable(text: str) -> str:
    """``text`` with each byte that is not UTF-8 shown as ``\\xNN`` (valid Unicode, for display:
    an HTML page, a terminal, a policy's observation)."""
    return _SURROGATE.sub(_show, text)
