"""Fast paths for the tracer's hot spots; each is an exact shortcut of the general code.

* `BODY`: one regex for the dominant line shape, a complete call
  `name(arg, ...) = RET[<ann>][(deleted)][ ERRNO ...]` whose arguments are plain tokens,
  `-y` annotations, quoted strings without backslashes and flat string arrays (argv). It
  captures what `lines.LineParser._call` computes; any other body (escapes, structs, nested
  brackets, `(deleted)` after an argument, `<unfinished ...>`, odd spacing, non-ASCII
  outside quotes) does not match and takes the general path. `ROWS` splits a whole text
  into `PID TS body` rows in one C-level pass.
* `slot_builder`: frozen slots dataclass instances without the per-field object.__setattr__.
* `memoized`, `new_table`/`remember`: bounded, process-wide memo tables for pure functions
  (argument decoding, lines, events, environment lookups). A trace repeats the same few
  hundred call texts and paths thousands of times, and a session is parsed again and again
  as it grows.

`ENABLED` switches all of it off (`slow_path()`, for tests comparing both ways).
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
# Argument pieces. Outside quotes and annotations an argument holds no bracket, comma,
# backslash, control or non-ASCII character, and spaces only between pieces: so the
# arguments are exactly the parts split_top cuts at top-level commas, after its .strip().
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


def _more_args(n: int) -> str:
    """`, ARG` n more times, each optional (nested); after the last, `(, ARG)*` as one group."""
    return rf"((?:, {ARG})*+)" if n == 0 else rf"(?:, ({ARG}){_more_args(n - 1)})?+"


# After the arguments: lines._RET verbatim (match, not fullmatch: the rest is ignored).
_RET = (
    r"\s*=\s*(?P<ret>0x[0-9a-fA-F]{1,16}(?![0-9a-fA-F])|-?[0-9]{1,20}(?![0-9])|\?)"
    r"(?:\s*/\* (?P<nsret>[0-9]{1,10}) in strace's PID NS \*/)?"  # --pidns-translation: the pid as strace sees it
    r"(?:<(?P<ann>[^<>\n]*)>)?(?P<deleted>\s*\(deleted\))?"
    r"(?:\s+(?P<errno>E[A-Z0-9_]+))?"
)
# `PID TS ` exactly as lines._PREFIX (re.A) splits it when one space ends it.
_PREFIX = r"([0-9]{1,10}) +([0-9]{1,20}(?:\.[0-9]{1,9})?) (?=\S)"
PREFIX = re.compile(_PREFIX, re.A)
# Every line of a text as (pid, ts, body) when PREFIX matches it, else ("", "", line); `.`
# and `$` stop at `\n` only, so the rows are text.split("\n").
ROWS = re.compile(rf"^(?:{_PREFIX})?(.*)$", re.A | re.M)
# groups(): name, MAX_ARGS arguments (None from the first absent one on), the further ones
# (`, ARG, ARG`; None unless all MAX_ARGS are there), ret, nsret, ann, deleted, errno
BODY = re.compile(
    rf"([A-Za-z_][A-Za-z0-9_]*)\((?:({ARG}){_more_args(MAX_ARGS - 1)})?+\){_RET}",
    re.A,
)


def body_args(groups: tuple[str | None, ...]) -> tuple[str, ...]:
    """The arguments from BODY's groups()."""
    args = groups[1 : MAX_ARGS + 1]
    if args[-1] is None:
        return args[: args.index(None)]  # type: ignore[return-value]
    more = groups[MAX_ARGS + 1]
    return args + tuple(ARG_RE.findall(more)) if more else args  # type: ignore[operator]


# --- records ------------------------------------------------------------------------
def slot_builder(cls: type) -> Callable[..., Any]:
    """build(*values): a `cls` instance from all its dataclass fields, in order (no defaults).

    The frozen dataclass __init__ sets each field through object.__setattr__, a call per
    field. Here the fields are stored plainly into a twin class with the same slots, and the
    finished object then becomes a `cls` (`__class__` assignment between identical slot
    layouts), as if __init__ had made it. Generated straight-line, as dataclasses does."""
    names = tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    if cls.__dict__.get("__slots__") != names or cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__}: not a plain slots dataclass")
    twin = type(f"_{cls.__name__}Twin", (), {"__slots__": names})
    env: dict[str, Any] = {"_new": object.__new__, "_twin": twin, "_cls": cls}
    lines = [f"def build({', '.join(names)}):", "    obj = _new(_twin)"]
    lines += [f"    obj.{name} = {name}" for name in names]
    lines += ["    obj.__class__ = _cls", "    return obj"]
    exec("\n".join(lines), env)  # noqa: S102 - the names are the class's own field names
    build: Callable[..., Any] = env["build"]
    probe = build(*names)  # fails here, at import, if the layouts were not the same
    if type(probe) is not cls or any(getattr(probe, name) != name for name in names):
        raise TypeError(f"{cls.__name__}: slot_builder does not work for it")
    return build


# --- memo tables ------------------------------------------------------------------------
F = TypeVar("F", bound=Callable[..., Any])
MEMO_MAX = 1 << 14  # entries per table; a full table starts over (no per-hit bookkeeping)
MEMO_KEY_MAX = 2048  # characters in a key; longer ones (huge names) are not remembered
_TABLES: list[dict[Any, Any]] = []


def clear_memos() -> None:
    """Forget everything remembered (for cold-start measurements and tests)."""
    for table in _TABLES:
        table.clear()


def new_table() -> dict[Any, Any]:
    """A memo table for remember(); clear_memos() empties it."""
    table: dict[Any, Any] = {}
    _TABLES.append(table)
    return table


def _size(key: Any) -> int:
    if isinstance(key, str):
        return len(key)
    if isinstance(key, tuple):
        return sum(_size(k) for k in key)
    return 0


def remember(table: dict[Any, Any], key: Any, value: Any) -> None:
    if _size(key) <= MEMO_KEY_MAX:
        if len(table) >= MEMO_MAX:
            table.clear()
        table[key] = value


def memoized(fn: F) -> F:
    """fn(key) remembered while ENABLED. Only for pure functions of one hashable argument (a
    text, a tuple of texts) with an immutable result: every caller gets the same object."""
    table = new_table()

    @wraps(fn)
    def wrapper(key: Any) -> Any:
        if ENABLED:
            try:
                return table[key]
            except KeyError:
                pass
            except TypeError:  # unhashable (a list where a tuple belongs): no memo
                return fn(key)
            value = fn(key)
            remember(table, key, value)
            return value
        return fn(key)

    return wrapper  # type: ignore[return-value]


def memoized_args(fn: F) -> F:
    """memoized() for a function of several hashable positional arguments."""
    table = new_table()

    @wraps(fn)
    def wrapper(*args: Any) -> Any:
        if ENABLED:
            try:
                return table[args]
            except KeyError:
                pass
            except TypeError:  # unhashable (a list where a tuple belongs): no memo
                return fn(*args)
            value = fn(*args)
            remember(table, args, value)
            return value
        return fn(*args)

    return wrapper  # type: ignore[return-value]
