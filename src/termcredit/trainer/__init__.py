"""Trainer: policies, token-exact multi-turn layout, loss, rollouts.

Modules (imported lazily, so ``termcredit.trainer.actions`` and friends need no torch):
  policy  ``Policy`` (generate / score / forward_logprobs / save) and ``load_policy``
  tiny    the locally built ``tiny`` / ``micro`` models (``build_tiny``)
  chat    ``ChatLayout`` and ``build_layout`` (pattern A token layout)
  loss    ``policy_loss`` (PPO clip, clip-higher, dual clip, k3 KL, global aggregation)
  corpus  the tokenizer's training text
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Policy": "policy", "Sample": "policy", "load_policy": "policy", "pad_batch": "policy",
    "build_tiny": "tiny", "ensure_tiny": "tiny",
    "ChatLayout": "chat", "LayoutBuilder": "chat", "build_layout": "chat",
    "LossConfig": "loss", "LossInputs": "loss", "LossOutputs": "loss", "policy_loss": "loss",
    "aggregate": "loss", "global_counts": "loss",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
