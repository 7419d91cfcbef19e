"""A minimal task folder for tests of the task model and the task tooling."""

from __future__ import annotations

from pathlib import Path


def make_task(root: Path, verifier: str) -> Path:
    """A task at ``root`` whose task.toml has ``verifier`` as its [verifier] table body."""
    root.mkdir(parents=True)
    (root / "task.toml").write_text("[verifier]\n" + verifier)
    (root / "instruction.md").write_text("Do it.")
    (root / "environment").mkdir()
    (root / "environment" / "Dockerfile").write_text("FROM termcredit/base\n")
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    return root
