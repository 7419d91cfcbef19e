"""Checkpoints: model + tokenizer (HF format), optimizer state, RNG states, step counter.

Written to ``<run>/checkpoints/step-<n>/`` through a temporary folder renamed at the end, so a
kill mid-write never leaves a half checkpoint that resume would pick up.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import torch


def save_checkpoint(run_dir: Path, step: int, policy: Any, optimizer: torch.optim.Optimizer,
                    extra: dict[str, Any] | None = None, keep: int = 2) -> Path:
    root = run_dir / "checkpoints"
    final = root / f"step-{step:06d}"
    tmp = root / f".tmp-step-{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    policy.save(tmp / "model")
    torch.save({"optimizer": optimizer.state_dict(), "torch_rng": torch.get_rng_state(),
                "python_rng": random.getstate()}, tmp / "state.pt")
    (tmp / "meta.json").write_text(json.dumps({"step": step, **(extra or {})}, indent=2))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in sorted(root.glob("step-*"))[:-keep]:  # keep the newest few
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: Path) -> Path | None:
    found = sorted((run_dir / "checkpoints").glob("step-*"))
    return found[-1] if found else None


def load_state(ckpt: Path, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    state = torch.load(ckpt / "state.pt", weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(state["python_rng"])
    return json.loads((ckpt / "meta.json").read_text())
