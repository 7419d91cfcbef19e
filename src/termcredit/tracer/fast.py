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
from functools import wraps
from typing import Any, TypeVar

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
_A = r"<[^<>\n]*+>"  # as decode.TOKEN / decode._FD / lines._RET take an annotation
_P = r'[^"<>\[\]{}(),\\\x00-\x20\x7f-\U0010ffff]++'
_ATOM = rf"(?:{_Q}|{_A}|{_P})"
_ARRAY = rf'\[(?:{_Q}|[^"<>\[\]{{}}()\\\x00-\x1f\x7f-\U0010ffff]++)*+\]'  # argv: strings, `...`
# Possessive: the pieces start with distinct characters, so there is nothing to retry
# (and a near-miss line cannot backtrack exponentially through `"..."...` ambiguities).
ARG = rf"(?:{_ARRAY}|{_ATOM}(?:{_ATOM}| ++(?={_ATOM}))*+)"
ARG_RE = re.compile(ARG)
MAX_ARGS = 6  # captured one by one; any further ones come as `, ARG, ARG...` in a group


def _args(n: int) -> str:
    return "" if n == 0 else rf"(?:, ({ARG}){_args(n - 1)})?+"


# After the arguments: lines._RET verbatim (match, not fullmatch: the rest is ignored).
_RET = (
    r"\s*=\s*(?P<ret>0x[0-9a-fA-F]{1,16}(?![0-9a-fA-F])|-?[0-9]{1,20}(?![0-9])|\?)"
    r"(?:<(?P<ann>[^<>\n]*)>)?(?P<deleted>\s*\(deleted\))?"
    r"(?:\s+(?P<errno>E[A-Z0-9_]+))?"
)
# `PID TS ` exactly as lines._PREFIX splits it when the body starts with a name.
_PREFIX = r"([0-9]{1,10}) +([0-9]{1,20}(?:\.[0-9]{1,9})?) (?=[A-Za-z_])"
PREFIX = re.compile(_PREFIX, re.A)
# Every line of a text as (pid, ts, body) when PREFIX matches it, else ("", "", line); `.`
# and `$` stop at `\n` only, so the rows are text.split("\n").
ROWS = re.compile(rf"^(?:{_PREFIX})?(.*)$", re.A | re.M)
# groups(): name, MAX_ARGS arguments (None when absent), the rest, ret, ann, deleted, errno
BODY = re.compile(
    rf"([A-Za-z_][A-Za-z0-9_]*)\((?:({ARG}){_args(MAX_ARGS - 1)})?+((?:, {ARG})*+)\){_RET}",
    re.A,
)


def body_args(groups: tuple[str | None, ...]) -> tuple[str, ...]:
    """The arguments from BODY's groups()."""
    args = groups[1 : MAX_ARGS + 1]
    if args[-1] is None:
        return args[: args.index(None)]  # type: ignore[return-value]
    more = groups[MAX_ARGS + 1]
    return args + tuple(ARG_RE.findall(more)) if more else args  # type: ignore[operator]


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


# --- records ------------------------------------------------------------------------
def slot_builder(cls: type) -> Callable[..., Any]:
    """build(*values): a `cls` instance from all its dataclass fields, in order, as the frozen
    dataclass __init__ makes it but with the slots set directly (no object.__setattr__ per
    field, no defaults: every value is given). Generated straight-line, as dataclasses does."""
    names = tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = [f"def build({', '.join(names)}):", "    obj = _new(_cls)"]
    for i, name in enumerate(names):
        env[f"_set{i}"] = getattr(cls, name).__set__  # the slot's member descriptor
        lines.append(f"    _set{i}(obj, {name})")
    lines.append("    return obj")
    exec("\n".join(lines), env)  # noqa: S102 - names are the class's own field identifiers
    return env["build"]  # type: ignore[no-any-return]


# --- memo tables ------------------------------------------------------------------------
F = TypeVar("F", bound=Callable[[Any], Any])
G = TypeVar("G", bound=Callable[..., Any])
MEMO_MAX = 1 << 13  # entries per table; a full table starts over (no per-hit bookkeeping)
MEMO_KEY_MAX = 1024  # longer texts (a 4 KiB write buffer...) are decoded every time
_TABLES: list[dict[str, Any]] = []


def clear_memos() -> None:
    """Forget everything remembered (for cold-start measurements)."""
    for table in _TABLES:
        table.clear()


def new_table() -> dict[Any, Any]:
    """A memo table that clear_memos() empties; fill it with remember()."""
    table: dict[Any, Any] = {}
    _TABLES.append(table)
    return table


def remember(table: dict[Any, Any], key: Any, value: Any) -> None:
    if len(table) >= MEMO_MAX:
        table.clear()
    table[key] = value


def memoized(fn: F) -> F:
    """fn(key), remembered while ENABLED. Only for pure functions of one hashable argument
    (a text, a tuple of texts) with immutable results."""
    table: dict[Any, Any] = {}

    @wraps(fn)
    def wrapper(key: Any) -> Any:
        if ENABLED:
            try:
                return table[key]
            except KeyError:
                pass
            value = fn(key)
            if len(table) >= MEMO_MAX:
                table.clear()
            if not isinstance(key, str) or len(key) <= MEMO_KEY_MAX:
                table[key] = value
            return value
        return fn(key)

    wrapper.cache_clear = table.clear  # type: ignore[attr-defined]
    _TABLES.append(table)
    return wrapper  # type: ignore[return-value]


def memoized_args(fn: G) -> G:
    """memoized() for functions of several hashable positional arguments."""
    table: dict[tuple[Any, ...], Any] = {}

    @wraps(fn)
    def wrapper(*args: Any) -> Any:
        if ENABLED:
            try:
                return table[args]
            except KeyError:
                pass
            value = fn(*args)
            if len(table) >= MEMO_MAX:
                table.clear()
            table[args] = value
            return value
        return fn(*args)

    wrapper.cache_clear = table.clear  # type: ignore[attr-defined]
    _TABLES.append(table)
    return wrapper  # type: ignore[return-value]
