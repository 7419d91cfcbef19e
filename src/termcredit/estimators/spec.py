"""Algorithm specs: ``name[key=value,...]``, the one syntax for an algorithm with settings.

``--algo`` of `termcredit train` and `termcredit bench`, ``algo`` in a train config and the
bench's ablations all read it here: ``depgpo[negative=errors]`` is DepGPO with the setting
``negative = "errors"``; ``depgpo+opd[scope=relevant]`` gives the setting to every part of the
sum that takes it (``build``). Values are read as TOML (``true``, ``0.5``, ``"x"``); a bare
word is a string. A value cannot hold a comma.
"""

from __future__ import annotations

import tomllib
from typing import Any

from . import build

EXAMPLE = "depgpo[negative=errors]"


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """The syntax alone: ``"depgpo[beta=0, std=false]"`` -> ``("depgpo", {"beta": 0,
    "std": False})``. Whether the estimator exists and takes those settings is ``parse_spec``'s."""
    name, bracket, rest = spec.partition("[")
    if bracket and not rest.endswith("]"):
        raise ValueError(f"{spec!r}: settings go in brackets, e.g. {EXAMPLE}")
    settings: dict[str, Any] = {}
    for item in filter(str.strip, rest[:-1].split(",")):
        key, eq, val = (s.strip() for s in item.partition("="))
        if not eq or not key:
            raise ValueError(f"{spec!r}: {item.strip()!r} is not key=value, e.g. {EXAMPLE}")
        if key in settings:
            raise ValueError(f"{spec!r}: setting {key!r} is given twice")
        try:
            settings[key] = tomllib.loads(f"v = {val}")["v"]
        except tomllib.TOMLDecodeError:
            settings[key] = val
    return name.strip(), settings


def parse_spec(spec: str, defaults: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """An estimator of the registry and its settings: ``defaults`` (a config's [estimator]
    table) with the spec's own settings on top. An unknown estimator, a setting it does not
    take (named) or a value it refuses fails here, before anything runs."""
    name, own = split_spec(spec)
    settings = {**(defaults or {}), **own}
    try:
        build(name, **settings)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{spec!r}: {exc}") from exc
    return name, settings
