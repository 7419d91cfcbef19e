"""GiGPO's and AdaStep's per-step facts carried in token rewards, for verl: its estimators see
only a [B, T] token-reward tensor, the response mask and the group index, never the rows'
other fields, and unlike DepGPO's weights these facts are keys compared across rows.

What the two estimators read per step, beyond the episode's reward R: the anchor key (which
steps of a group share a state), the action key (AdaStep's per-action variances) and whether
the action was invalid (its penalty). Per-step env rewards are 0 in termcredit (the returns
G_t follow from R, γ and the invalid flags), so nothing else is needed.

Encoding (one response; the agent loop writes it): turn t is the t-th run of loss tokens, and
the observation after it (mask 0; the agent loop closes the last turn with one too) carries
four values on its first four tokens,

    +a_t·u, −a_t·u, +c_t·u, −c_t·u        u = 2⁻²⁴, a_t = anchor code, c_t = 2·action code + invalid

and R sits on the last loss token. Codes are 1 + (sha256 of the key mod 2ᵇ − 1): integers
below 2²⁴, so every value is exact in float32, and the pairs cancel: the row still sums to R
(verl's score metrics read the sum). Mask-0 tokens are never trained on, and the estimators
give them 0. Two different keys share a code with probability ~2⁻²⁴ (anchors) or ~2⁻²² per pair
(actions). A turn whose observation was cut (the response length) decodes as its own anchor and
action, valid."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any, Callable, Sequence

import torch

from .. import estimators
from ..records import Step, TokenLayout, Trajectory, VerifierReport
from .token_rewards import turns

UNIT = 2.0 ** -24
ANCHOR_BITS, ACTION_BITS = 24, 22
SLOTS = 4  # mask-0 tokens each turn's facts need after it


def code(key: str, bits: int) -> int:
    """A key's code in [1, 2**bits − 1] (0 stays free: no facts)."""
    return 1 + int(hashlib.sha256(key.encode()).hexdigest(), 16) % (2 ** bits - 1)


def _gaps(mask: Sequence[int]) -> list[tuple[int, int]]:
    """Per turn: [start, end) of the mask-0 tokens that follow it (up to the next turn)."""
    spans = turns(mask)
    ends = [a for a, _b in spans[1:]] + [len(mask)]
    return [(b, e) for (_a, b), e in zip(spans, ends)]


def encode_facts(reward: float, anchors: Sequence[str], actions: Sequence[str],
                 invalid: Sequence[bool], mask: Sequence[int]) -> list[float]:
    """One response's token rewards (same length as ``mask``); one fact per turn (a turn
    without facts, e.g. the reply cut by the length limit before its step ran, keeps none)."""
    out = [0.0] * len(mask)
    spans = turns(mask)
    if not spans:
        return out
    out[spans[-1][1] - 1] = float(reward)
    for (s, e), anchor, action, bad in zip(_gaps(mask), anchors, actions, invalid):
        if e - s < SLOTS:
            continue  # cut by the response length: decodes as a step of its own
        a = code(anchor, ANCHOR_BITS) * UNIT
        c = (2 * code(action, ACTION_BITS) + int(bool(bad))) * UNIT
        out[s:s + SLOTS] = [a, -a, c, -c]
    return out


def decode_facts(rewards: Sequence[float], mask: Sequence[int], row: Any = 0) -> Trajectory:
    """The row as a trajectory the estimators read: its reward, one step per turn (anchor key in
    ``anchor_obs``, action key, invalid flag) and the turns' token spans. ``row`` names the
    steps without facts, so that they match nothing."""
    spans = turns(mask)
    steps = []
    for t, (s, e) in enumerate(_gaps(mask)):
        a = round(float(rewards[s]) / UNIT) if e - s >= SLOTS else 0
        c = round(float(rewards[s + 2]) / UNIT) if a > 0 else 0
        if a > 0 and c > 0:
            steps.append(Step(index=t, action="", anchor_obs=f"a{a}", action_key=f"c{c >> 1}",
                              invalid=bool(c & 1)))
        else:
            steps.append(Step(index=t, action="", anchor_obs=f"none:{row}:{t}",
                              action_key=f"none:{row}:{t}"))
    reward = float(rewards[spans[-1][1] - 1]) if spans else 0.0
    tokens = TokenLayout(token_ids=[0] * len(mask), loss_mask=[int(m) for m in mask],
                         logprobs=[0.0] * len(mask), step_spans=[[a, b] for a, b in spans])
    return Trajectory(task="verl", instruction="", agent="verl", steps=steps,
                      verifier=VerifierReport(reward=reward), tokens=tokens)


def step_estimator(name: str, **settings: Any) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """termcredit's ``name`` estimator (gigpo, adastep) over rows encoded by ``encode_facts``,
    in verl's signature: (advantages, returns), both [B, T], each group (rows sharing
    ``index[i]``) estimated as termcredit's trainer does, anchors matched by their codes."""
    est = estimators.build(name, anchor="observation", **settings)

    def advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                  index: Sequence[Any], **_kw: Any) -> tuple[torch.Tensor, torch.Tensor]:
        rows = token_level_rewards.detach().double().cpu().tolist()
        masks = response_mask.detach().long().cpu().tolist()
        groups: dict[Any, list[int]] = defaultdict(list)
        for i, key in enumerate(index):
            groups[key].append(i)
        adv = torch.zeros_like(token_level_rewards, dtype=torch.float32)
        for members in groups.values():
            result = est([decode_facts(rows[i], masks[i], i) for i in members])
            for i, values in zip(members, result.advantages):
                adv[i] = torch.tensor(values, dtype=torch.float32)
        adv = adv.to(token_level_rewards.device) * response_mask
        return adv, adv

    advantage.__name__ = f"{name}_advantage"
    return advantage
