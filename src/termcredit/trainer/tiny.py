"""The `tiny` and `micro` policies: built locally and deterministically, no download.

    build_tiny(out_dir, size="tiny", seed=0)   # -> out_dir, a normal Hugging Face model directory

* Tokenizer: byte-level BPE trained with `tokenizers` on ``corpus.corpus_lines()`` (shell
  commands, command output, task instructions); special tokens ``<|endoftext|>`` (pad),
  ``<|im_start|>``, ``<|im_end|>`` (eos, end of turn); a ChatML chat template whose assistant
  content is wrapped in ``{% generation %}`` so ``return_assistant_tokens_mask`` works.
  The BPE training is deterministic (no seed involved): same corpus -> same ids.
* Model: a Llama-style decoder (``LlamaConfig``), weights initialised under ``torch.manual_seed
  (seed)`` inside a forked RNG (the caller's RNG state is left alone).

Why Llama and the Qwen2 pre-tokenizer together: with
``model_type=qwen2`` transformers 5 swaps in ``Qwen2Tokenizer``, which rebuilds the pipeline from
vocab + merges, so ids change on reload unless the trained pipeline is exactly Qwen2's. A Llama
config keeps the tokenizer.json pipeline as saved (and is the architecture SmolLM2 uses, so tiny
and smollm2-135m run through the same code). We still train with the Qwen2 normalizer +
split regex (NFC; digits one by one; words, punctuation runs and newlines apart), which is what
a real BPE chat model does and is safe under either class. ``tokenizer_class`` is written as
``PreTrainedTokenizerFast`` so the directory also loads with transformers 4.x. A test
checks that AutoTokenizer and PreTrainedTokenizerFast give the ids of the in-memory tokenizer.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from .corpus import corpus_fingerprint, corpus_lines, default_tasks_dir

RECIPE_VERSION = 1
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN2_SPLIT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
               r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
CHATML_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}{{ '<|im_start|>assistant\n' }}"
    "{% generation %}{{ m['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\n' }}"
    "{% else %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

SIZES: dict[str, dict[str, int]] = {
    # ~5.2 M parameters with the ~2k vocabulary (4.7 M of them in the 6 blocks)
    "tiny": dict(hidden_size=256, intermediate_size=768, num_hidden_layers=6,
                 num_attention_heads=4, num_key_value_heads=2),
    # ~0.2 M parameters, for unit tests
    "micro": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2),
}
VOCAB_SIZE = 2048  # BPE target; a small corpus may stop below it (deterministically)
MAX_POSITIONS = 4096


def train_tokenizer(lines: list[str], vocab_size: int = VOCAB_SIZE):
    """A byte-level BPE ``PreTrainedTokenizerFast`` with the ChatML specials and template."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(lines, trainer)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                 pad_token="<|endoftext|>")
    hf.chat_template = CHATML_TEMPLATE
    return hf


def model_config(size: str, tokenizer):
    from transformers import LlamaConfig

    if size not in SIZES:
        raise ValueError(f"unknown tiny size {size!r}: choose from {', '.join(SIZES)}")
    dims = SIZES[size]
    return LlamaConfig(vocab_size=len(tokenizer), max_position_embeddings=MAX_POSITIONS,
                       tie_word_embeddings=True, rms_norm_eps=1e-5, **dims,
                       head_dim=dims["hidden_size"] // dims["num_attention_heads"],
                       pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                       bos_token_id=None)


def build_tiny(out_dir: str | os.PathLike, size: str = "tiny", seed: int = 0, *,
               tasks_dir: str | os.PathLike | None = "default",
               vocab_size: int = VOCAB_SIZE) -> Path:
    """Build tokenizer + randomly initialised model into ``out_dir`` (created, or replaced if it
    exists). Same corpus, size and seed -> identical tokenizer files and weights."""
    import torch
    from transformers import AutoModelForCausalLM

    tdir = default_tasks_dir() if tasks_dir == "default" else (Path(tasks_dir) if tasks_dir else None)
    tok = train_tokenizer(corpus_lines(tdir), vocab_size)
    cfg = model_config(size, tok)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    tc = out / "tokenizer_config.json"
    conf = json.loads(tc.read_text())
    conf["tokenizer_class"] = "PreTrainedTokenizerFast"  # also loads in transformers 4
    tc.write_text(json.dumps(conf, indent=2, ensure_ascii=False) + "\n")
    info = {"size": size, "seed": seed, "recipe": RECIPE_VERSION, "vocab": len(tok),
            "params": sum(p.numel() for p in model.parameters()),
            "corpus": corpus_fingerprint(tdir)}
    (out / "termcredit_tiny.json").write_text(json.dumps(info, indent=2) + "\n")
    return out


def cache_root() -> Path:
    env = os.environ.get("TERMCREDIT_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "termcredit"


def ensure_tiny(size: str = "tiny", seed: int = 0, root: str | os.PathLike | None = None) -> Path:
    """The cached build of (size, seed, corpus, recipe), built on first use. Safe against a
    concurrent builder: each builds into a temporary sibling and renames; the loser discards."""
    tdir = default_tasks_dir()
    root = Path(root) if root else cache_root()
    final = root / f"{size}-s{seed}-{corpus_fingerprint(tdir)}-r{RECIPE_VERSION}"
    if (final / "termcredit_tiny.json").exists():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
    try:
        build_tiny(tmp, size, seed, tasks_dir=tdir)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        try:
            os.rename(tmp, final)
        except OSError:  # another process finished first (or a partial dir is in the way)
            if not (final / "termcredit_tiny.json").exists():
                shutil.rmtree(final, ignore_errors=True)
                os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final
