"""The image map: which ``FROM`` images are built on which termcredit base.

No registry may be reachable, so images such as Terminal-Bench's
``ghcr.io/laude-institute/t-bench/python-3-13`` or ``python:3.12-slim`` are replaced by a base
(sandbox/bases.py). A rule is a shell glob (fnmatch) and a target:

* ``"base"``: the default base (bookworm); ``"base:NAME"``: that base;
* ``"base:python3.12"``: the base whose Python is closest to 3.12 (a distribution image,
  whose name does not say its Python: ``ubuntu:24.04`` carries 3.12);
* ``"base:python"``: the same, with the version read from the image name itself
  (``python:3.12-slim``, ``t-bench/python-3-13``; none, as in ``python:latest``: the newest);
* anything else: an image ref used as is.

Rules are tried in order, a user's file (``--image-map``, ``TERMCREDIT_IMAGE_MAP``) before the
built-in ``data/image_map.toml``, so a user's rule wins over a broader built-in one. An image
no rule names is left as written (docker uses a local copy or pulls it); when it can be
neither, the build error names the map files (builderrors.py).
"""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .bases import BASES, DEFAULT_BASE, base_image_ref, closest_base, get_base
from .builderrors import ImageBuildError

BUILTIN_MAP = "data/image_map.toml"
_PYTHON_TARGET = re.compile(r"base:python(?:(\d+)\.(\d+))?")
# the Python an image name asks for: python:3.12-slim, python-3-13, python3.11, python:3
_PYTHON_IN_NAME = re.compile(r"python[:\-_]?(\d+)(?:[.\-_](\d+))?(?!\d)", re.IGNORECASE)


def builtin_map_path() -> str:
    return str(resources.files("termcredit").joinpath(BUILTIN_MAP))


def python_in_name(image: str) -> tuple[int, int | None] | None:
    """(major, minor) of the Python an image name asks for, from its last path component."""
    m = _PYTHON_IN_NAME.search(image.rsplit("/", 1)[-1])
    if m is None:
        return None
    return int(m[1]), int(m[2]) if m[2] is not None else None


@dataclass(frozen=True)
class FromLine:
    """One ``FROM`` of a Dockerfile, as written and as built."""

    line: int  # 1-based
    image: str  # as written
    ref: str  # what the build uses (the image itself when nothing mapped it)
    base: str | None = None  # the termcredit base it became
    rule: str | None = None  # the map pattern that matched
    stage: bool = False  # an earlier build stage's name, not an image


def _check_target(target: object, pattern: str, source: str) -> str:
    if not isinstance(target, str) or not target:
        raise ImageBuildError(f"{source}: [image_map] {pattern!r}: the target must be a "
                              f"non-empty string, got {target!r}")
    if target.startswith("base:") and not _PYTHON_TARGET.fullmatch(target) \
            and target[5:] not in BASES:
        raise ImageBuildError(f"{source}: [image_map] {pattern!r} = {target!r}: no base "
                              f"{target[5:]!r} (bases: {', '.join(BASES)}; or base:python3.X)")
    return target


@dataclass
class ImageMap:
    """Ordered rules, pattern -> target; ``sources``: the files they came from (for errors)."""

    rules: dict[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    @classmethod
    def load(cls, path: str | Path | None = None) -> "ImageMap":
        builtin = builtin_map_path()
        text = resources.files("termcredit").joinpath(BUILTIN_MAP).read_text()
        defaults = {k: _check_target(v, k, builtin)
                    for k, v in tomllib.loads(text)["image_map"].items()}
        path = path or os.environ.get("TERMCREDIT_IMAGE_MAP")
        if not path:
            return cls(defaults, (builtin,))
        try:
            extra = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ImageBuildError(f"{path}: cannot read image map: {exc}") from exc
        if not isinstance(extra.get("image_map"), dict):
            raise ImageBuildError(f"{path}: field [image_map] missing or not a table")
        rules = {k: _check_target(v, k, str(path)) for k, v in extra["image_map"].items()}
        rules.update((k, v) for k, v in defaults.items() if k not in rules)
        return cls(rules, (str(path), builtin))

    def map(self, image: str, base_ref: str) -> FromLine:
        """What ``image`` becomes; ``base_ref`` is the default base's ref."""
        for pattern, target in self.rules.items():
            if not fnmatch.fnmatchcase(image, pattern):
                continue
            m = _PYTHON_TARGET.fullmatch(target)
            if m:
                want = python_in_name(image) if m[1] is None else (int(m[1]), int(m[2]))
                base = closest_base(want).name
            elif target == "base" or target.startswith("base:"):
                base = target[5:] or DEFAULT_BASE
            else:
                return FromLine(0, image, target, rule=pattern)
            ref = base_ref if base == DEFAULT_BASE else base_image_ref(base)
            return FromLine(0, image, ref, base=get_base(base).name, rule=pattern)
        return FromLine(0, image, image)

    def resolve(self, image: str, base_ref: str) -> str | None:
        """The ref ``image`` is built on instead, or None when no rule names it."""
        mapped = self.map(image, base_ref)
        return mapped.ref if mapped.rule is not None else None

    def where(self) -> str:
        """The map files, for messages: the user's (if any) and the built-in one."""
        return " and ".join(self.sources) if self.sources else "the rules given"


_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)


def rewrite_from_lines(dockerfile: str, image_map: ImageMap, base_ref: str
                       ) -> tuple[str, list[FromLine]]:
    """The Dockerfile with each FROM image the map names replaced (never an earlier build
    stage's name, never ``scratch`` or an ``$ARG``), and what each FROM became."""
    stages: set[str] = set()
    out, froms = [], []
    for n, line in enumerate(dockerfile.splitlines(), 1):
        m = _FROM.match(line)
        if m:
            head, flags, image, rest = m.groups()
            alias = re.search(r"\bAS\s+(\S+)", rest, re.IGNORECASE)
            if image.lower() in stages:
                froms.append(FromLine(n, image, image, stage=True))
            elif image.lower() == "scratch" or "$" in image:
                froms.append(FromLine(n, image, image))
            else:
                mapped = image_map.map(image, base_ref)
                froms.append(FromLine(n, image, mapped.ref, mapped.base, mapped.rule))
                image = mapped.ref
            if alias:
                stages.add(alias.group(1).lower())
            line = f"{head}{flags}{image}{rest}"
        out.append(line)
    return "\n".join(out) + "\n", froms
