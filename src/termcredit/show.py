"""User and agent text for the terminal: plain Rich text, never markup, never control codes."""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text

from .rawtext import printable

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_NL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def shown(value: Any, style: str = "", *, one_line: bool = False) -> Text:
    """User or agent text (a command, a path, a task name, an error, output) for Rich: plain
    text, never markup, so `[/x]`, `[bold]` or `[a-z]` print as they are. Control characters
    are shown as escapes (`\\x1b`, `\\r`) so the text cannot drive the terminal; newlines
    and tabs stay unless ``one_line`` (one path per line in a table cell); bytes that are not
    UTF-8 as ``\\xNN`` (rawtext.py)."""
    s = printable(value if isinstance(value, str) else str(value))
    rx = _CONTROL_NL if one_line else _CONTROL
    return Text(rx.sub(lambda m: repr(m.group())[1:-1], s), style=style)
