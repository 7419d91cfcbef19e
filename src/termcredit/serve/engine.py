"""A termcredit policy behind the protocol: the messages rendered by the policy's own chat
template (as the trainer renders its prompts), one ``Policy.generate`` call per request, ending at
the end-of-turn token. One generation at a time (a lock): requests queue, which on CPU is as fast
as batching them and keeps every request's seed reproducible on its own."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from .protocol import ApiError, ChatRequest, Completion


def resolve_source(source: str) -> str:
    """What ``load_policy`` takes, from what a user may name: ``tiny``, ``smollm2-135m``, a Hugging
    Face model directory, a checkpoint (``<run>/checkpoints/step-N``, its model in ``model/``) or
    a training run directory (its newest checkpoint)."""
    p = Path(source)
    if not p.is_dir() or (p / "config.json").is_file():
        return source
    if (p / "model" / "config.json").is_file():
        return str(p / "model")
    ckpts = sorted((p / "checkpoints").glob("step-*")) if (p / "checkpoints").is_dir() else []
    if ckpts and (ckpts[-1] / "model" / "config.json").is_file():
        return str(ckpts[-1] / "model")
    raise ValueError(f"{source}: not a model directory (no config.json), a checkpoint (no "
                     "model/config.json) or a training run (no checkpoints/step-*)")


def served_name(source: str) -> str:
    """The model id clients see: a built-in name as given, else the folder's name."""
    p = Path(source)
    return p.resolve().name if p.is_dir() else source


class PolicyEngine:
    def __init__(self, policy: Any, *, max_tokens: int = 1024):
        self.policy = policy
        self.layout = policy.chat()
        self.max_tokens = max_tokens
        cfg = getattr(policy.model, "config", None)
        self.context = int(getattr(cfg, "max_position_embeddings", 0) or 0) or None
        self._lock = threading.Lock()

    def prompt_ids(self, req: ChatRequest) -> list[int]:
        try:
            return self.layout.render(req.messages, add_generation_prompt=True)
        except Exception as exc:  # the template refused these messages (e.g. role order)
            raise ApiError(400, f"messages: the model's chat template cannot render them "
                           f"({type(exc).__name__}: {exc})", "messages") from None

    def complete(self, req: ChatRequest) -> Completion:
        ids = self.prompt_ids(req)
        budget = min(req.max_tokens or self.max_tokens, self.max_tokens)
        if self.context is not None:
            room = self.context - len(ids)
            if room < 1:
                raise ApiError(400, f"messages: the prompt is {len(ids)} tokens; the model's "
                               f"context is {self.context}", "messages")
            budget = min(budget, room)
        with self._lock:
            sample = self.policy.generate([ids], max_new_tokens=budget,
                                          temperature=req.temperature, top_p=req.top_p,
                                          seed=req.seed)[0]
        text = self.policy.tokenizer.decode(sample.token_ids, skip_special_tokens=True)
        finish = "stop" if sample.finished else "length"
        cuts = [i for i in (text.find(s) for s in req.stop) if i >= 0]
        if cuts:  # stop strings: the text ends before the first one
            text, finish = text[:min(cuts)], "stop"
        return Completion(text=text, prompt_tokens=len(ids),
                          completion_tokens=len(sample.token_ids), finish_reason=finish)
