"""Writing the small TOML files termcredit produces (config.toml of runs); stdlib has a reader."""

from __future__ import annotations

import json
from typing import Any


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(str(v))  # a JSON string is a valid TOML basic string


def toml_table(items: dict[str, Any]) -> str:
    """`key = value` lines for scalars and lists; nested dicts become [tables] after them."""
    scalars = "".join(f"{k} = {toml_value(v)}\n" for k, v in items.items()
                      if v is not None and not isinstance(v, dict))
    tables = "".join(f"\n[{k}]\n" + toml_table(v) for k, v in items.items() if isinstance(v, dict))
    return scalars + tables
