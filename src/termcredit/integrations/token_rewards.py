"""DepGPO's step weights carried in token rewards, for engines whose estimators see only a
[B, T] token-reward tensor, a response mask and a group index (SkyRL, verl).

Encoding (one response): its turns are the runs of loss tokens (mask 1; an observation between
two replies is mask 0); turn t has n_t tokens, N = Σ n_t. DepGPO's weights w_t are first
token-normalised to these counts (w ∝ f, so Σ n_t w_t = N holds for the engine's own tokens),
then turn t's last token gets

    r_t = (R · n_t + SCALE · n_t · (w_t − 1)) / N

and every other token 0. The second terms sum to 0 (Σ n_t w_t = N), so the row still sums to R
and an estimator that reads the row's sum (GRPO, RLOO) is unchanged; the weights survive R = 0
(a failed episode, whose negative advantage DepGPO spreads by them too). Decoding: R = Σ r_t,
w_t = 1 + (N · r_t / n_t − R) / SCALE.

``depgpo_advantage`` is the estimator over such rows in the engines' signature: GRPO's
group-relative Â_i over R_i (population std, as termcredit's estimators), times w_t on turn t's
tokens (0 off the mask)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import torch

from ..estimators.group import group_advantages

SCALE = 1.0  # how strongly the weights show in the rewards: a pure scale, decoded exactly


def turns(mask: Sequence[int]) -> list[tuple[int, int]]:
    """[start, end) of each run of loss tokens: the replies of a multi-turn response."""
    out: list[tuple[int, int]] = []
    start = None
    for i, m in enumerate(list(mask) + [0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append((start, i))
            start = None
    return out


def normalized(weights: Sequence[float], n: Sequence[int]) -> list[float]:
    """w ∝ weights with Σ n_t w_t = Σ n_t (unit weights when nothing is left to scale)."""
    weighted = sum(a * b for a, b in zip(n, weights))
    if not weighted > 0:
        return [1.0] * len(n)
    return [w * sum(n) / weighted for w in weights]


def encode(reward: float, weights: Sequence[float], mask: Sequence[int]) -> list[float]:
    """One response's token rewards (same length as ``mask``). ``weights``: one per turn (the
    first turns' when the response was cut short; missing ones count 1)."""
    spans = turns(mask)
    out = [0.0] * len(mask)
    if not spans:
        return out
    n = [b - a for a, b in spans]
    w = normalized([*weights[:len(n)], *[1.0] * (len(n) - len(weights))], n)
    total = sum(n)
    for (_a, b), n_t, w_t in zip(spans, n, w):
        out[b - 1] = (reward * n_t + SCALE * n_t * (w_t - 1.0)) / total
    return out


def decode(rewards: Sequence[float], mask: Sequence[int]) -> tuple[float, list[float]]:
    """(R, per-turn weights) of one encoded response."""
    spans = turns(mask)
    r = [float(rewards[b - 1]) for _a, b in spans]
    reward = sum(r)
    total = sum(b - a for a, b in spans)
    return reward, [1.0 + (total * r_t / (b - a) - reward) / SCALE
                    for r_t, (a, b) in zip(r, spans)]


def depgpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                     index: Sequence[Any], epsilon: float = 1e-6, norm_by_std: bool = True,
                     **_kw: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns), both [B, T]: A = Â_i · w_t on turn t's tokens of row i, Â_i
    group-relative over the rows sharing ``index[i]``."""
    rows = token_level_rewards.detach().float().cpu().tolist()
    masks = response_mask.detach().long().cpu().tolist()
    decoded = [decode(r, m) for r, m in zip(rows, masks)]
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, key in enumerate(index):
        groups[key].append(i)
    adv = torch.zeros_like(token_level_rewards, dtype=torch.float32)
    for members in groups.values():
        a_hat = group_advantages([decoded[i][0] for i in members], std=norm_by_std, eps=epsilon)
        for i, a in zip(members, a_hat):
            for (s, e), w in zip(turns(masks[i]), decoded[i][1]):
                adv[i, s:e] = a * w
    adv = adv.to(token_level_rewards.device) * response_mask
    return adv, adv
