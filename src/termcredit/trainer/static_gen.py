"""Generation with a static KV cache: fixed shapes, so the decode step can be compiled.

``Policy.generate`` with ``generation = "static"`` comes here. Same contract as the Hugging Face
path (``generation = "hf"``): left-padded prompts, behaviour log-probs from ``_sample`` (the same
temperature / top-p rules), a row stops at its first stop id, ``Sample`` per prompt. What differs:

* The KV cache is a ``transformers.StaticCache`` of a fixed [batch, length]: the batch rounded up
  to a power of two (extra rows repeat the first prompt and are dropped), the length
  (prompt + new tokens) up to a power of two, at least ``MIN_LENGTH``. Its tensors never move,
  so one compiled decode step serves every call of that size; a few sizes are kept (``KEEP``).
  Powers of two: rollouts whose prompts grow turn by turn pass through few sizes (each new
  one compiles), for at most twice the attention reads of a tight cache.
* The 2-D attention mask covers the whole cache from the start (ones after the prompt): the
  causal mask, from the cache's own position, hides the slots not written yet, so the mask
  tensor never changes during decoding.
* On CUDA the decode step is ``torch.compile(mode="reduce-overhead")`` (CUDA graphs: one replay
  per token instead of a few hundred kernel launches from Python). ``compile=False`` (the
  default off CUDA) runs the same static-cache step eagerly, which is how the CPU tests
  exercise this path.
* Stops are checked on the device; the host looks every ``CHECK_EVERY`` tokens, so it does not
  wait for the GPU at every token. A row's output is cut at its first stop id, so the extra
  tokens drawn before the host notices are never returned.

With greedy decoding the tokens equal the Hugging Face path's (a test checks that on CPU); with
sampling, the draws for a seed are reproducible but not the same as the other path's.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import torch

MIN_LENGTH = 256  # the shortest cache
KEEP = 4  # static caches kept per policy (each size its own CUDA graph)
CHECK_EVERY = 8  # tokens between the host's looks at "every row stopped"


def _bucket(batch: int, length: int) -> tuple[int, int]:
    return _pow2(batch), max(_pow2(length), MIN_LENGTH)


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


class StaticGenerator:
    """One policy's static caches and compiled decode step."""

    def __init__(self, model: Any, *, compile: bool | None = None):
        from .policy import cache_arg

        self.model = model
        self._cache_arg = cache_arg(model)
        dev = next(model.parameters()).device
        self.compile = dev.type == "cuda" if compile is None else compile
        self._caches: OrderedDict[tuple[int, int], Any] = OrderedDict()
        self._step: Callable[..., torch.Tensor] = self._decode
        if self.compile:
            # one graph per cache size (static shapes): let dynamo keep one per kept size
            torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit,
                                                        4 * KEEP)
            self._step = torch.compile(self._decode, mode="reduce-overhead", dynamic=False)

    def _cache(self, rows: int, length: int):
        from transformers import StaticCache

        key = (rows, length)
        cache = self._caches.pop(key, None)
        if cache is None:
            if len(self._caches) >= KEEP:
                self._caches.popitem(last=False)  # the least recently used size
            cache = StaticCache(config=self.model.config, max_cache_len=length)
        else:
            cache.reset()
        self._caches[key] = cache
        return cache

    def _decode(self, tok: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor,
                cache: Any) -> torch.Tensor:
        out = self.model(input_ids=tok, attention_mask=mask, position_ids=pos, use_cache=True,
                         **{self._cache_arg: cache})
        return out.logits[:, -1].float()

    @torch.no_grad()
    def generate(self, ids: torch.Tensor, attn: torch.Tensor, pos: torch.Tensor, *,
                 max_new_tokens: int,
                 sample: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
                 stops: frozenset[int]) -> tuple[list[list[int]], list[list[float]], list[bool]]:
        """Left-padded prompts ids/attn/pos [B, P] -> per row (tokens, log-probs, finished)."""
        B, P = ids.shape
        rows, length = _bucket(B, P + max_new_tokens)
        if rows > B:  # filler rows: copies of row 0, never sampled from
            fill = lambda t: torch.cat([t, t[:1].expand(rows - B, -1)])  # noqa: E731
            ids, attn, pos = fill(ids), fill(attn), fill(pos)
        cache = self._cache(rows, length)
        mask = torch.cat([attn, attn.new_ones((rows, length - P))], dim=1)
        logits = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                            logits_to_keep=1, **{self._cache_arg: cache}).logits[:, -1].float()
        dev = ids.device
        stop_t = torch.tensor(sorted(stops), dtype=torch.long, device=dev)
        toks = torch.zeros((B, max_new_tokens), dtype=torch.long, device=dev)
        lps = torch.zeros((B, max_new_tokens), dtype=torch.float32, device=dev)
        done = torch.zeros(B, dtype=torch.bool, device=dev)
        tok_in = ids[:, -1:].clone()  # filler rows keep feeding their last prompt token
        next_pos = pos[:, -1:] + 1
        n = 0
        for step in range(max_new_tokens):
            tok, lp = sample(logits[:B])
            toks[:, step], lps[:, step] = tok, lp
            done |= torch.isin(tok, stop_t)
            n = step + 1
            if n == max_new_tokens or (n % CHECK_EVERY == 0 and bool(done.all())):
                break
            tok_in[:B, 0] = tok
            if self.compile:
                torch.compiler.cudagraph_mark_step_begin()  # the last logits are consumed
            logits = self._step(tok_in, next_pos, mask, cache)
            next_pos = next_pos + 1
        return _cut(toks[:, :n].tolist(), lps[:, :n].tolist(), stops)


def _cut(toks: list[list[int]], lps: list[list[float]], stops: frozenset[int]
         ) -> tuple[list[list[int]], list[list[float]], list[bool]]:
    """Each row up to and including its first stop id."""
    out_t, out_l, finished = [], [], []
    for row_t, row_l in zip(toks, lps):
        end = next((i + 1 for i, t in enumerate(row_t) if t in stops), len(row_t))
        out_t.append(row_t[:end])
        out_l.append(row_l[:end])
        finished.append(end <= len(row_t) and bool(row_t) and row_t[end - 1] in stops)
    return out_t, out_l, finished

