"""Decoding of single strace argument tokens (strings, `-y` fd annotations, numbers).

Every function here is total: malformed input gives ``None``, never an exception,
because trace text is untrusted (file names are chosen by the agent).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from . import fast

AT_FDCWD = -100

# One token of an argument list. Order matters: a quoted string (with `\"` escapes and an
# optional `...` truncation mark) must win over the bracket characters it may contain, and a
# `-y` annotation `<...>` is taken whole (strace escapes `<`, `>` inside it as \74, \76).
# An unclosed quote swallows the rest (strace always closes its strings, so such a line is
# malformed). The final `.` guarantees progress on anything else (a stray `<`).
TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*(?:"(?:\.\.\.)?|\\?\Z)|<[^<>\n]*>|[\[\]{}(),]|[^"<\[\]{}(),]+|.', re.S
)

_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"(\.\.\.)?', re.S)
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{2})|(.))", re.S)
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8, "e": 27}
_FD = re.compile(r"(-?[0-9]{1,10}|AT_FDCWD)(?:<([^<>\n]*)>)?\s*(\(deleted\))?", re.S)
_DELETED_INSIDE = " (deleted)"  # strace < 5.19 put the marker inside the brackets


def _to_bytes(text: str) -> bytes:
    # Trace text is ASCII in practice (strace escapes everything else); a caller that decoded
    # raw bytes with surrogateescape gets them back. Anything else is replaced, not raised.
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def unescape(body: str) -> bytes:
    """Decode strace's C escapes (\\n, \\", \\\\, \\NNN octal, \\xNN) into raw bytes."""
    if fast.ENABLED and "\\" not in body:
        return _to_bytes(body)
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += _to_bytes(body[pos : m.start()])
        octal, hexa, char = m.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)  # \777 is not a byte; keep the low bits
        elif hexa is not None:
            out.append(int(hexa, 16))
        else:
            code = _SIMPLE_ESCAPES.get(char)
            out += bytes([code]) if code is not None else _to_bytes(char)
        pos = m.end()
    out += _to_bytes(body[pos:])
    return bytes(out)


def decode_text(body: str) -> str:
    """unescape() then fsdecode: undecodable bytes survive as surrogates (round-trippable)."""
    if fast.ENABLED and body.isascii() and "\\" not in body:
        return body  # ASCII without escapes decodes to itself
    return os.fsdecode(unescape(body))


@dataclass(frozen=True, slots=True)
class StrArg:
    value: str
    truncated: bool  # strace printed `"..."...` because of -s


@fast.memoized
def parse_str(arg: str) -> StrArg | None:
    """A quoted string argument; None for NULL, bare addresses or anything else."""
    m = _STRING.fullmatch(arg.strip())
    if m is None:
        return None
    return StrArg(decode_text(m.group(1)), m.group(2) is not None)


@dataclass(frozen=True, slots=True)
class FdArg:
    num: int | None  # -100 for AT_FDCWD
    path: str | None  # decoded -y annotation, if any (may be `pipe:[1]`, not only paths)
    deleted: bool

    @property
    def is_cwd(self) -> bool:
        return self.num == AT_FDCWD

    @property
    def fs_path(self) -> str | None:
        """The annotation when it names a file system path (not pipe:/socket:/anon_inode:)."""
        return self.path if self.path is not None and self.path.startswith("/") else None


@fast.memoized
def parse_annotation(inner: str) -> tuple[str, bool]:
    """Decode the text between `<` and `>`; also strip the pre-5.19 inner ` (deleted)`."""
    path = decode_text(inner)
    if path.endswith(_DELETED_INSIDE):
        return path[: -len(_DELETED_INSIDE)], True
    return path, False


@fast.memoized
def parse_fd(arg: str) -> FdArg | None:
    """`3</a/b>`, `3</a/b>(deleted)`, `-100</cwd>`, `AT_FDCWD`, `5`."""
    m = _FD.fullmatch(arg.strip())
    if m is None:
        return None
    num_text, inner, deleted_outside = m.groups()
    num = AT_FDCWD if num_text == "AT_FDCWD" else int(num_text)
    if inner is None:
        return FdArg(num, None, deleted_outside is not None)
    path, deleted_inside = parse_annotation(inner)
    return FdArg(num, path, deleted_inside or deleted_outside is not None)


@fast.memoized
def parse_int(arg: str) -> int | None:
    """Numbers as -X raw prints them: 0x241, 0666 (octal mode), -100, 0x1200000|17."""
    total = 0
    parts = arg.strip().split("|")
    for part in parts:
        part = part.strip()
        neg = part.startswith("-")
        digits = part[1:] if neg else part
        if not digits.isascii():  # int() accepts other Unicode digits; strace never prints them
            return None
        try:
            if digits[:2] in ("0x", "0X"):
                value = int(digits[2:], 16)
            elif len(digits) > 1 and digits.startswith("0"):
                value = int(digits[1:], 8)
            else:
                value = int(digits, 10)
        except ValueError:
            return None
        total |= -value if neg else value
    return total


def struct_field(arg: str, name: str) -> str | None:
    """Top-level `name=value` inside a `{...}` struct argument (openat2 how, clone3 args)."""
    text = arg.strip()
    if not text.startswith("{"):
        return None
    for item in split_top(text[1:])[0]:
        key, sep, value = item.partition("=")
        if sep and key.strip() == name:
            return value.strip()
    return None


def split_top(text: str, start: int = 0) -> tuple[list[str], int | None]:
    """Split at top-level commas up to the first unbalanced closer `)`, `]` or `}`.

    Returns the stripped parts and the index just past that closer (None if the text ran
    out first, as for an `<unfinished ...>` prefix).
    """
    parts: list[str] = []
    depth = 0
    part_start = start
    for m in TOKEN.finditer(text, start):
        tok = m.group()
        if len(tok) != 1:
            continue
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            if depth == 0:
                parts.append(text[part_start : m.start()].strip())
                return _drop_empty(parts), m.end()
            depth -= 1
        elif tok == "," and depth == 0:
            parts.append(text[part_start : m.start()].strip())
            part_start = m.end()
    parts.append(text[part_start:].strip())
    return _drop_empty(parts), None


def _drop_empty(parts: list[str]) -> list[str]:
    # `vfork()` has no arguments, not one empty one.
    return [] if parts == [""] else parts


@fast.memoized
def parse_str_array(arg: str) -> tuple[str, ...] | None:
    """An argv array `["sed", "-i", ...]`; elements elided by -s (`...`) are dropped."""
    text = arg.strip()
    if not text.startswith("["):
        return None
    items, _ = split_top(text[1:])
    out = []
    for item in items:
        s = parse_str(item)
        if s is not None:
            out.append(s.value)
    return tuple(out)
