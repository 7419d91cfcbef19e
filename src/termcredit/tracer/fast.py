"""Fast paths for the tracer's hot spots; every one is an exact shortcut of the general code.

* `LINE`: one regex for the dominant complete-call line shape
  `PID TS name(arg, ...) = RET[<ann>][(deleted)][ ERRNO ...]` whose arguments are plain
  tokens, `-y` annotations, quoted strings without backslashes and flat string arrays. It
  captures what `lines.LineParser._call` would compute; any other line (escapes, structs,
  nested brackets, `(deleted)` on an argument, `<unfinished ...>`, resumed lines, unusual
  spacing, non-ASCII) does not match and takes the general path.
* `SPLIT`: the tokens of `decode.TOKEN` that matter to `split_top` (quoted strings and
  annotations are skipped whole, brackets and commas are reported), found by search so the
  plain runs between them cost nothing.
* `Memo`: bounded memo tables for the pure decoders (`parse_str`, `parse_fd`, ...); a
  trace repeats the same few hundred argument texts thousands of times.

`ENABLED` switches all of it (`slow_path()` for tests comparing both ways).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

ENABLED = True


@contextmanager
def slow_path() -> Iterator[None]:
    """Run the block with every fast path off (the reference behaviour)."""
    global ENABLED
    old, ENABLED = ENABLED, False
    try:
        yield
    finally:
        ENABLED = old


# --- the complete-call line -------------------------------------------------------------
# Argument pieces. Control characters and spaces never start or end a plain piece, so each
# argument is exactly what split_top returns after its .strip() (for ASCII text).
_Q = r'"[^"\\\n]*+"(?:\.\.\.)?+'  # no escapes: its text is its value
_A = r"<[^<>\n]*>"  # as decode.TOKEN / decode._FD / lines._RET take an annotation
_P = r'[^"<>\[\]{}(),\\\x00-\x20\x7f-\U0010ffff]'
_ATOM = rf"(?:{_Q}|{_A}|{_P})"
_ARRAY = rf'\[(?:{_Q}|[^"<>\[\]{{}}()\\\x00-\x1f\x7f-\U0010ffff])*+\]'  # argv: strings, `...`
# Possessive: the pieces start with distinct characters, so there is nothing to retry
# (and a near-miss line cannot backtrack exponentially through `"..."...` ambiguities).
ARG = rf"(?:{_ARRAY}|{_ATOM}(?:{_ATOM}| +(?={_ATOM}))*+)"
ARG_RE = re.compile(ARG)

# After the arguments: lines._RET verbatim (match, not fullmatch: the rest is ignored).
_RET = (
    r"\s*=\s*(?P<ret>0x[0-9a-fA-F]{1,16}(?![0-9a-fA-F])|-?[0-9]{1,20}(?![0-9])|\?)"
    r"(?:<(?P<ann>[^<>\n]*)>)?(?P<deleted>\s*\(deleted\))?"
    r"(?:\s+(?P<errno>E[A-Z0-9_]+))?"
)
# `PID TS ` exactly as lines._PREFIX splits it when the body starts with a name.
PREFIX = re.compile(r"([0-9]{1,10}) +([0-9]{1,20}(?:\.[0-9]{1,9})?) (?=[A-Za-z_])", re.A)
BODY = re.compile(
    rf"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>(?:{ARG}(?:, {ARG})*+)?+)\){_RET}", re.A
)
SIMPLE_ARGS = re.compile(r'[^"<>\[\]{}(),\\\x00-\x1f\x7f-\U0010ffff]*')  # plain: split on ", "


def split_args(text: str) -> tuple[str, ...]:
    """The arguments of a BODY match (text already known to be `ARG, ARG, ...`)."""
    if not text:
        return ()
    if SIMPLE_ARGS.fullmatch(text) is not None:
        return tuple(text.split(", "))
    return tuple(ARG_RE.findall(text))


# --- split_top ------------------------------------------------------------------------
# decode.TOKEN minus the plain runs and the stray-character fallback: neither can hold a
# bracket or comma, and neither can start where a quoted string, annotation or bracket does.
SPLIT = re.compile(r'"(?:[^"\\]|\\.)*(?:"(?:\.\.\.)?|\\?\Z)|<[^<>\n]*>|([\[\]{}(),])', re.S)


def split_top(text: str, start: int = 0) -> tuple[list[str], int | None]:
    parts: list[str] = []
    depth = 0
    part_start = start
    for m in SPLIT.finditer(text, start):
        tok = m.group(1)
        if tok is None:
            continue
        if tok == ",":
            if depth == 0:
                parts.append(text[part_start : m.start()].strip())
                part_start = m.end()
        elif tok in "([{":
            depth += 1
        elif depth == 0:
            parts.append(text[part_start : m.start()].strip())
            return ([] if parts == [""] else parts), m.end()
        else:
            depth -= 1
    parts.append(text[part_start:].strip())
    return ([] if parts == [""] else parts), None


# --- memo tables ------------------------------------------------------------------------
K = TypeVar("K")
V = TypeVar("V")
MEMO_MAX = 1 << 14  # entries per table; a full table starts over (no per-hit bookkeeping)


class Memo(Generic[K, V]):
    """`memo(fn)`: fn(key), remembered. Only for pure functions of immutable results."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table: dict[K, V] = {}

    def get(self, key: K, fn: Callable[[K], V]) -> V:
        table = self.table
        try:
            return table[key]
        except KeyError:
            pass
        value = fn(key)
        if len(table) >= MEMO_MAX:
            table.clear()
        table[key] = value
        return value
