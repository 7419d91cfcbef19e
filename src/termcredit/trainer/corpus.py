"""The text the `tiny` tokenizer is trained on: task instructions plus a small shell corpus.

Sources, in a fixed order so the corpus (and so the tokenizer) is a pure function of the files:
  1. ``trainer/data/*.txt`` (sorted by name): realistic shell commands, typical command output in
     the harness's observation format, and chat/system-prompt snippets;
  2. ``tasks/*/instruction.md`` (sorted by task folder) when a tasks directory is found.

The corpus changes when a task is added, so the tokenizer does too; ``corpus_fingerprint`` names
the cache directory of a built model, so a stale cache is never reused. A saved model directory
always carries its own tokenizer, so an old checkpoint stays loadable.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"


def default_tasks_dir() -> Path | None:
    """``<repo>/tasks`` for a source checkout (src/termcredit/trainer/corpus.py -> repo)."""
    cand = Path(__file__).resolve().parents[3] / "tasks"
    return cand if cand.is_dir() else None


def corpus_files(tasks_dir: Path | None = None) -> list[Path]:
    files = sorted(DATA_DIR.glob("*.txt"))
    if tasks_dir is not None and Path(tasks_dir).is_dir():
        files += sorted(Path(tasks_dir).glob("*/instruction.md"))
    return files


def corpus_lines(tasks_dir: Path | None = None) -> list[str]:
    """Non-empty lines of every corpus file, in a deterministic order. Commands and outputs are
    also given as two-line chunks so the trainer sees newlines between related lines."""
    lines: list[str] = []
    for f in corpus_files(tasks_dir):
        text = f.read_text(encoding="utf-8")
        raw = [ln for ln in text.splitlines() if ln.strip()]
        lines.extend(raw)
        lines.extend("\n".join(raw[i:i + 2]) + "\n" for i in range(0, len(raw), 2))
    return lines


def corpus_fingerprint(tasks_dir: Path | None = None) -> str:
    h = hashlib.sha256()
    for f in corpus_files(tasks_dir):
        h.update(f"{f.parent.name}/{f.name}".encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:10]
