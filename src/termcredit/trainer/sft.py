"""Supervised fine-tuning on demonstrations: the warm start of a policy and the OPD teacher.

A demonstration is an instruction and a list of turns (action text, observation text); the
last action is usually `done`. It is laid out exactly as a rollout would be (same chat
template, same observation deltas), and only the action tokens (with their end-of-turn token)
are trained on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch

from ..jsonl import iter_jsonl
from ..records import TokenLayout
from ..harness.actions import SYSTEM_PROMPT
from .policy import pad_batch


@dataclass
class Demo:
    instruction: str
    turns: list[tuple[str, str]] = field(default_factory=list)  # (action, observation after it)


def demo_messages(demo: Demo, system: str = SYSTEM_PROMPT) -> list[dict[str, str]]:
    """The chat a demonstration is: system, the instruction (user), then per turn the action
    (assistant) and, except after the last, its observation (user), as ``demo_layout`` lays
    it out (``observation_role`` "user", the rollout's)."""
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": demo.instruction}]
    for i, (action, obs) in enumerate(demo.turns):
        msgs.append({"role": "assistant", "content": action})
        if i + 1 < len(demo.turns):
            msgs.append({"role": "user", "content": obs})
    return msgs


def demo_from_messages(msgs: Any, where: str = "messages") -> Demo:
    """``demo_messages``'s inverse (with the trainer's own system prompt); anything else is an
    error naming ``where``."""
    if not isinstance(msgs, list) or len(msgs) < 3:
        raise ValueError(f"{where}: a list of at least system, user and assistant messages")
    for k, m in enumerate(msgs):
        if not (isinstance(m, dict) and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str)):
            raise ValueError(f"{where}[{k}]: needs string 'role' and 'content'")
    roles = [m["role"] for m in msgs]
    want = ["system", "user"] + ["assistant", "user"] * ((len(msgs) - 2) // 2)
    want = (want + ["assistant"])[:len(msgs)]
    if roles != want or roles[-1] != "assistant":
        raise ValueError(f"{where}: roles must be system, user, then assistant/user turns ending "
                         f"with assistant, got {roles}")
    if msgs[0]["content"] != SYSTEM_PROMPT:
        raise ValueError(f"{where}[0]: the system message is not the trainer's system prompt "
                         "(harness/actions.py SYSTEM_PROMPT), which the SFT layout always uses")
    turns = [(msgs[k]["content"], msgs[k + 1]["content"] if k + 1 < len(msgs) else "")
             for k in range(2, len(msgs), 2)]
    return Demo(msgs[1]["content"], turns)


def load_sft_jsonl(path: str | Path) -> list[Demo]:
    """Demonstrations from a chat-format JSONL file (one ``{"messages": [...]}`` object a
    line, other keys ignored), e.g. what `termcredit refine` writes."""
    try:
        rows = list(iter_jsonl(path))  # a bad line: JsonlError, file and line named
    except OSError as exc:
        raise ValueError(f"{path}: cannot read SFT data: {exc}") from exc
    return [demo_from_messages(row.get("messages"), f"{path}:{n}: messages") for n, row in rows]


def demo_layout(policy: Any, demo: Demo, system: str = SYSTEM_PROMPT) -> TokenLayout:
    layout = policy.chat()
    tok = TokenLayout()
    ids = layout.prompt_ids(system, demo.instruction)
    tok.token_ids.extend(ids)
    tok.loss_mask.extend([0] * len(ids))
    for i, (action, obs) in enumerate(demo.turns):
        a = policy.tokenizer.encode(action, add_special_tokens=False) + [layout.end_id]
        tok.step_spans.append([len(tok.token_ids), len(tok.token_ids) + len(a)])
        tok.token_ids.extend(a)
        tok.loss_mask.extend([1] * len(a))
        if i + 1 < len(demo.turns):
            o = layout.observation_ids(obs)
            tok.token_ids.extend(o)
            tok.loss_mask.extend([0] * len(o))
    tok.logprobs = [0.0] * len(tok.token_ids)
    return tok


def sft(policy: Any, demos: Sequence[Demo], *, steps: int = 100, lr: float = 3e-3,
        batch_size: int = 8, seed: int = 0) -> list[float]:
    """Token-mean negative log-likelihood of the action tokens; returns the loss per step."""
    rng = random.Random(seed)
    layouts = [demo_layout(policy, d) for d in demos]
    opt = torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=0.0)
    policy.model.train()
    losses = []
    for _ in range(steps):
        batch = [rng.choice(layouts) for _ in range(min(batch_size, len(layouts) * 4))]
        ids, attn = pad_batch([b.token_ids for b in batch], policy.pad_id, device=policy.device)
        mask = pad_batch([b.loss_mask for b in batch], 0, dtype=torch.float32,
                         device=policy.device)[0]
        logp = policy.forward_logprobs(ids, attn)
        loss = -(logp * mask).sum() / mask.sum().clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    policy.model.eval()
    return losses
