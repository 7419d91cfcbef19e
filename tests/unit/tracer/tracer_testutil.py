"""Shared helpers for the tracer tests (a uniquely named module, not a package)."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "strace"
NONCE = "9f3c0a17"  # the nonce record.py uses
WORK = "/w"  # the case directory, as rewritten by record.py


def load(name: str) -> str:
    # Fixtures are ASCII (strace escapes everything else); keep any stray byte round-trippable.
    return (FIXTURES / f"{name}.strace").read_text(encoding="ascii", errors="surrogateescape")


def rel(paths: set[str] | dict[str, str]) -> set[str]:
    """Paths under the case dir, relative to it."""
    return {p[len(WORK) + 1 :] for p in paths if p.startswith(WORK + "/")}


def outside(paths: set[str]) -> set[str]:
    return {p for p in paths if not p.startswith(WORK + "/")}


def segment(text: str, seq: int, nonce: str = NONCE) -> str:
    """The lines the sandbox stores for command SEQ: first start marker to last end marker."""
    lines = text.split("\n")
    start_re = re.compile(rf'chdir\("/__termcredit__/{nonce}/s{seq}"\)')
    end_re = re.compile(rf'chdir\("/__termcredit__/{nonce}/e{seq}"\)')
    first = next(i for i, line in enumerate(lines) if start_re.search(line))
    last = max(i for i, line in enumerate(lines) if end_re.search(line))
    return "\n".join(lines[first : last + 1]) + "\n"
