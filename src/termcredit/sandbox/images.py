"""Task images: a task's ``environment/`` folder built on the base its ``FROM`` maps to
(imagemap.py, bases.py), content-hash tagged and cached.

A base a task needs is built on first use. A failed build's error starts with one line that
says why the step cannot work here and what to do, when builderrors.diagnose knows the case.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from .bases import BASES, ensure_base_image, image_exists
from .builderrors import ImageBuildError, diagnose, plain
from .imagemap import FromLine, ImageMap, rewrite_from_lines

Log = Callable[[str], None]


def _tree_digest(directory: Path, extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(directory)).encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def map_dockerfile(env_dir: Path, image_map: ImageMap | None, base_ref: str
                   ) -> tuple[str, list[FromLine]]:
    """The task's Dockerfile with FROM lines mapped, and what each FROM became."""
    return rewrite_from_lines((env_dir / "Dockerfile").read_text(), image_map or ImageMap.load(),
                              base_ref)


def task_image_ref(env_dir: Path, name: str, *, base_ref: str,
                   image_map: ImageMap | None = None,
                   build_args: dict[str, str] | None = None) -> tuple[str, str]:
    """(content-hash ref, Dockerfile with FROM lines mapped) of a task's ``environment/``
    folder: the same folder content gives the same ref on every host."""
    text, _ = map_dockerfile(env_dir, image_map, base_ref)
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-.") or "task"
    args = dict(sorted((build_args or {}).items()))
    return f"termcredit/task-{slug}:{_tree_digest(env_dir, text + json.dumps(args))[:12]}", text


def build_task_image(client: Any, env_dir: Path, name: str, *, base_ref: str,
                     image_map: ImageMap | None = None, force: bool = False,
                     build_args: dict[str, str] | None = None, log: Log = print) -> str:
    """Build (or reuse) the image for a task's ``environment/`` folder; ``base_ref`` is the
    default base's (the caller made sure it exists), other bases are built here if missing."""
    image_map = image_map or ImageMap.load()
    dockerfile = env_dir / "Dockerfile"
    args = dict(sorted((build_args or {}).items()))
    ref, text = task_image_ref(env_dir, name, base_ref=base_ref, image_map=image_map,
                               build_args=args)
    if not force and image_exists(client, ref):
        return ref
    _, froms = map_dockerfile(env_dir, image_map, base_ref)
    for base in dict.fromkeys(f.base for f in froms if f.base and f.ref != base_ref):
        ensure_base_image(client, name=base, log=log)
    pythons = {b.name: b.python for b in BASES.values()}

    def explain(step: str, output: list[str]) -> str | None:
        return diagnose(text, str(dockerfile), step, output, froms, image_map.where(), pythons)

    with tempfile.TemporaryDirectory(prefix="termcredit-ctx-") as tmp:
        ctx = Path(tmp) / "ctx"
        shutil.copytree(env_dir, ctx, symlinks=True)
        (ctx / "Dockerfile").write_text(text)
        docker_build(client, ctx, ref, dockerfile, log, buildargs=args, explain=explain)
    return ref


def docker_build(client: Any, ctx: Path, ref: str, shown: Path, log: Log,
                 buildargs: dict[str, str] | None = None,
                 explain: Callable[[str, list[str]], str | None] | None = None) -> None:
    """``docker build`` with host networking; a failure raises ImageBuildError with the
    failing step, the last output lines and, first, what ``explain`` makes of them."""
    lines: list[str] = []
    step, since = "", 0
    for chunk in client.api.build(path=str(ctx), tag=ref, network_mode="host", rm=True,
                                  buildargs=buildargs or None,
                                  forcerm=True, decode=True, labels={"termcredit": "1"}):
        if "stream" in chunk:
            for line in chunk["stream"].splitlines():
                line = plain(line)
                if not line.strip():
                    continue
                lines.append(line)
                if line.startswith("Step "):
                    step, since = line, len(lines)
        if "error" in chunk:
            error = plain(str(chunk["error"]).strip())
            tail = "\n".join(lines[-25:])
            hint = explain(step, lines[since:][-400:] + [error]) if explain else None
            raise ImageBuildError(
                (f"{hint}\n" if hint else "")
                + f"{shown}: build failed at {step or 'an early step'}: "
                f"{error}\n--- last build output ---\n{tail}"
            )
    log(f"built {ref}")
