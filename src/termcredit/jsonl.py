"""JSON lines: the one reader and writer of every ``*.jsonl`` file (steps.jsonl, metrics.jsonl,
eval files, refine's SFT data).

A line is one JSON object and ends at ``\\n``, the only separator: ``str.splitlines`` would also
split inside a string that holds U+2028, U+0085 or \\x1c, which JSON written with
``ensure_ascii=False`` keeps as they are. Lines are written by ``rawtext.json_dumps`` (text as it
is, each byte that is not UTF-8 as a ``\\udcXX`` escape) or, with ``ascii=True``, by ``json.dumps``
(every non-ASCII character escaped: the files that have always been written so, byte for byte).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from .rawtext import json_dumps


class JsonlError(ValueError):
    """A line that is not a JSON object (file and line named)."""

    def __init__(self, path: str | Path, line: int, why: str):
        super().__init__(f"{path}:{line}: {why}")
        self.path, self.line, self.why = path, line, why


def dumps_line(row: dict[str, Any], *, ascii: bool = False) -> bytes:
    """One line of a JSON-lines file, newline included."""
    return ((json.dumps(row) if ascii else json_dumps(row)) + "\n").encode()


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]], *, ascii: bool = False,
                fsync: bool = False) -> None:
    """The whole file, replaced at once (a crash leaves the old file or the new one)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(b"".join(dumps_line(r, ascii=ascii) for r in rows))
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    tmp.replace(path)


def append_jsonl(path: str | Path, row: dict[str, Any], *, ascii: bool = False,
                 fsync: bool = False) -> None:
    """One line added at the end (``fsync``: on disk before this returns)."""
    with open(path, "ab") as f:
        f.write(dumps_line(row, ascii=ascii))
        if fsync:
            f.flush()
            os.fsync(f.fileno())


def iter_jsonl(path: str | Path, *, torn_tail: bool = False,
               skip_bad: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line that is not blank. A line that is not a JSON object
    is a ``JsonlError``, except: ``torn_tail`` (a file that is appended to) drops a bad last line
    with no newline after it (the writer died in the middle of it); ``skip_bad`` (for display
    only) drops every bad line. A missing file is ``FileNotFoundError``."""
    lines = Path(path).read_bytes().split(b"\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        why, row = _parse(line)
        if why is None:
            yield n, row
        elif not (skip_bad or (torn_tail and n == len(lines))):
            raise JsonlError(path, n, why)


def _parse(line: bytes) -> tuple[str | None, dict[str, Any]]:
    """(None, the object) or (what is wrong with the line, {})."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 ({exc})", {}
    try:
        row = json.loads(text)
    except ValueError as exc:
        return f"not JSON ({exc})", {}
    if not isinstance(row, dict):
        return f"a JSON {type(row).__name__}, not an object", {}
    return None, row


def read_jsonl(path: str | Path, *, torn_tail: bool = False,
               skip_bad: bool = False) -> list[dict[str, Any]]:
    """The objects of ``iter_jsonl``, in order."""
    return [row for _, row in iter_jsonl(path, torn_tail=torn_tail, skip_bad=skip_bad)]
