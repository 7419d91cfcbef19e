"""`termcredit tasks import DIR --out DIR`: every Terminal-Bench-1 task of a dataset folder.

Each subfolder with a ``task.yaml`` is imported on its own (``import_tb1``) into
``OUT/<task name>``; one that fails is skipped with the error that stopped it, and the others
go on. Names are unique: a second task that would get a name already taken is skipped, named,
rather than written over the first.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..tasks.model import TaskError
from .tb_import import import_tb1, task_name


@dataclass
class ImportRow:
    source: Path
    name: str
    status: str  # "imported" or "skipped"
    out: Path | None = None
    warnings: list[str] = field(default_factory=list)
    why: str = ""  # why it was skipped


def is_dataset(path: Path) -> bool:
    """A folder of TB1 task folders (it has none of its own task.yaml)."""
    return (path.is_dir() and not any((path / n).is_file() for n in ("task.yaml", "task.yml"))
            and any((d / n).is_file() for d in path.iterdir() if d.is_dir()
                    for n in ("task.yaml", "task.yml")))


def import_dataset(src: str | Path, out: str | Path, *, force: bool = False) -> list[ImportRow]:
    src, out = Path(src), Path(out)
    folders = sorted(d for d in src.iterdir() if d.is_dir() and not d.name.startswith("."))
    rows: list[ImportRow] = []
    taken: dict[str, Path] = {}
    for d in folders:
        if not any((d / n).is_file() for n in ("task.yaml", "task.yml")):
            rows.append(ImportRow(d, d.name, "skipped", why="no task.yaml"))
            continue
        name = task_name(d)
        if name in taken:
            rows.append(ImportRow(d, name, "skipped",
                                  why=f"name {name!r} already taken by {taken[name]}"))
            continue
        dest = out / name
        try:
            report = import_tb1(d, dest, force=force)
        except (TaskError, ValueError, OSError) as exc:
            if isinstance(exc, TaskError) and dest.exists():
                shutil.rmtree(dest)  # a half-written task would load as a broken one
            rows.append(ImportRow(d, name, "skipped", why=str(exc)))
            continue
        taken[name] = d
        rows.append(ImportRow(d, name, "imported", dest, list(report.warnings)))
    return rows
