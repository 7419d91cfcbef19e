"""Token-exact multi-turn layout for chat models (sampled ids are never re-tokenised).

One growing id list per episode: ``[system+user+assistant header][a1][obs1][a2][obs2]...[aT]``.
Sampled action ids are kept exactly as sampled (loss mask 1, behaviour log-probs); the ids of
everything else (prompt, observation turns, role headers) come from the tokenizer's own chat
template and get mask 0. Nothing is ever detokenised and re-tokenised.

The observation delta is computed by rendering a fixed conversation with and without the new
user turn and slicing; the base is first cut at its last end-of-turn id, because the template
writes ``<|im_end|>\\n`` while a sampled action stops at ``<|im_end|>`` (without the cut,
incremental ids differ from a re-render). So the delta starts with the ``\\n`` that follows
the end-of-turn token.

Property (tested): for action ids that are the tokenizer's own encoding of their text,
``prompt_ids + a1 + observation_ids(o1) + ... + aT`` == the full chat re-rendered by the
template, cut after its last end-of-turn token.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..records import TokenLayout

_BASE = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
         {"role": "assistant", "content": "A"}]


class ChatLayout:
    def __init__(self, tokenizer: Any, *, end_token: str = "<|im_end|>",
                 observation_role: str = "user"):
        self.tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        self.end_id: int = vocab[end_token] if end_token in vocab else tokenizer.eos_token_id
        self.observation_role = observation_role
        base = self.render(_BASE)
        if self.end_id not in base:
            raise ValueError(f"the chat template never writes the end-of-turn id {self.end_id}")
        cut = len(base) - base[::-1].index(self.end_id)
        self._base_prefix = base[:cut]  # ... 'A' <|im_end|>   (without the trailing "\n")

    def render(self, messages: Sequence[dict], *, add_generation_prompt: bool = False) -> list[int]:
        ids = self.tokenizer.apply_chat_template(list(messages), tokenize=True,
                                                 add_generation_prompt=add_generation_prompt,
                                                 return_dict=False)
        return list(ids)

    def prompt_ids(self, system: str | None, instruction: str) -> list[int]:
        """System (omitted when None; a template may then insert its default) + user turn +
        assistant header: the ids the first action is sampled after."""
        msgs = [{"role": "system", "content": system}] if system is not None else []
        msgs.append({"role": "user", "content": instruction})
        return self.render(msgs, add_generation_prompt=True)

    def reply_ids(self, text: str) -> list[int]:
        """``text``'s ids as the template writes them in an assistant turn, through its
        end-of-turn id: what fine-tuning on a demonstration with that reply trains, and what a
        menu (menu.py) lets the policy sample."""
        head = self.render(_BASE[:2], add_generation_prompt=True)
        full = self.render(_BASE[:2] + [{"role": "assistant", "content": text}])
        rest = full[len(head):]
        if full[:len(head)] != head or self.end_id not in rest:
            raise ValueError(f"the chat template does not write reply {text!r} after its "
                             "generation prompt")
        return rest[:rest.index(self.end_id) + 1]

    def observation_ids(self, text: str, *, after_truncated: bool = False) -> list[int]:
        """Ids to append after an action that ended with the end-of-turn id: the rest of the
        template's turn ending (``\\n``), the observation turn, and the next assistant header.
        ``after_truncated``: the action was cut off before its end-of-turn id, so the harness
        closes the turn itself (the end-of-turn id is prepended; it is not a sampled token)."""
        full = self.render(_BASE + [{"role": self.observation_role, "content": text}],
                           add_generation_prompt=True)
        n = len(self._base_prefix)
        if full[:n] != self._base_prefix:
            raise ValueError("the chat template renders earlier turns differently once a new "
                             "turn follows; token-exact incremental layout is impossible")
        delta = full[n:]
        return [self.end_id] + delta if after_truncated else delta


class LayoutBuilder:
    """Grows one ``TokenLayout`` turn by turn; ``token_ids`` is the next generation prompt."""

    def __init__(self, prompt_ids: Sequence[int]):
        n = len(prompt_ids)
        self.layout = TokenLayout(token_ids=list(prompt_ids), loss_mask=[0] * n,
                                  logprobs=[0.0] * n, step_spans=[])

    @property
    def token_ids(self) -> list[int]:
        return self.layout.token_ids

    def add_action(self, ids: Sequence[int], logprobs: Sequence[float] | None = None
                   ) -> tuple[int, int]:
        """Sampled ids (mask 1) with their behaviour log-probs; returns the [start, end) span."""
        lps = [0.0] * len(ids) if logprobs is None else [float(x) for x in logprobs]
        if len(lps) != len(ids):
            raise ValueError(f"{len(ids)} action ids but {len(lps)} log-probs")
        lay = self.layout
        start = len(lay.token_ids)
        lay.token_ids.extend(int(i) for i in ids)
        lay.loss_mask.extend([1] * len(ids))
        lay.logprobs.extend(lps)
        lay.step_spans.append([start, len(lay.token_ids)])
        return start, len(lay.token_ids)

    def add_observation(self, ids: Sequence[int]) -> None:
        lay = self.layout
        lay.token_ids.extend(int(i) for i in ids)
        lay.loss_mask.extend([0] * len(ids))
        lay.logprobs.extend([0.0] * len(ids))


def build_layout(prompt_ids: Sequence[int], actions: Sequence[Any],
                 observations: Sequence[Sequence[int]] = (),
                 logprobs: Sequence[Sequence[float]] | None = None) -> TokenLayout:
    """``actions``: sampled id lists, or ``Sample``s (their ``token_ids``/``logprobs`` are used);
    ``observations[k]`` follows ``actions[k]`` (one fewer observation than actions when the
    episode ended on an action, as many when it ended on an observation)."""
    if len(observations) not in (len(actions), len(actions) - 1) and actions:
        raise ValueError(f"{len(actions)} actions need {len(actions) - 1} or {len(actions)} "
                         f"observations, got {len(observations)}")
    b = LayoutBuilder(prompt_ids)
    for k, a in enumerate(actions):
        ids = getattr(a, "token_ids", a)
        lps = logprobs[k] if logprobs is not None else getattr(a, "logprobs", None)
        b.add_action(ids, lps)
        if k < len(observations):
            b.add_observation(observations[k])
    return b.layout
