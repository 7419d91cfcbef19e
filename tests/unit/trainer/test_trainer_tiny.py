"""The locally built tiny/micro policy: deterministic, reloadable offline, ChatML template."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

TEXTS = [
    "ls -la /app && echo 'Hello, world!' > /app/hello.txt",
    "exit code: 0\nstdout:\n123456789\n\n  indented\ttab",
    "unicode: naïve café — 日本語 🙂",
    "<|im_start|>user\nhi<|im_end|>\n",
    "",
]


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_seed_same_files_other_seed_other_weights(micro_dir, tmp_path):
    from termcredit.trainer.tiny import build_tiny

    again = build_tiny(tmp_path / "again", "micro", seed=0)
    other = build_tiny(tmp_path / "other", "micro", seed=1)
    for name in ("tokenizer.json", "model.safetensors", "config.json", "chat_template.jinja"):
        assert _sha(micro_dir / name) == _sha(again / name), name
    assert _sha(micro_dir / "tokenizer.json") == _sha(other / "tokenizer.json")
    assert _sha(micro_dir / "model.safetensors") != _sha(other / "model.safetensors")


def test_tokenizer_training_is_deterministic_across_processes():
    # the Rust trainer uses per-process hash seeds: a second process must agree byte for byte
    code = ("import hashlib\n"
            "from termcredit.trainer.tiny import train_tokenizer\n"
            "from termcredit.trainer.corpus import corpus_lines, default_tasks_dir\n"
            "tok = train_tokenizer(corpus_lines(default_tasks_dir()))\n"
            "print(hashlib.sha256(tok.backend_tokenizer.to_str().encode()).hexdigest())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    from termcredit.trainer.corpus import corpus_lines, default_tasks_dir
    from termcredit.trainer.tiny import train_tokenizer

    here = train_tokenizer(corpus_lines(default_tasks_dir())).backend_tokenizer.to_str()
    assert out.stdout.strip() == hashlib.sha256(here.encode()).hexdigest()


def test_reloaded_tokenizer_gives_the_same_ids(micro_dir):
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    raw = Tokenizer.from_file(str(micro_dir / "tokenizer.json"))
    auto = AutoTokenizer.from_pretrained(micro_dir, local_files_only=True)
    fast = PreTrainedTokenizerFast.from_pretrained(micro_dir, local_files_only=True)
    for text in TEXTS:
        ids = raw.encode(text, add_special_tokens=False).ids
        assert auto.encode(text, add_special_tokens=False) == ids
        assert fast.encode(text, add_special_tokens=False) == ids
        assert auto.decode(ids) == text  # byte-level: lossless, no unknown token
    assert json.loads((micro_dir / "tokenizer_config.json").read_text())["tokenizer_class"] \
        == "PreTrainedTokenizerFast"


def test_specials_and_chat_template(micro):
    tok = micro.tokenizer
    assert [tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")] \
        == [0, 1, 2]
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert "{% generation %}" in micro.chat_template
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "make a file"},
            {"role": "assistant", "content": "touch /app/x"}, {"role": "user", "content": "exit code: 0"},
            {"role": "assistant", "content": "done"}]
    enc = tok.apply_chat_template(msgs, tokenize=True, return_dict=True,
                                  return_assistant_tokens_mask=True)
    ids, mask = enc["input_ids"], enc["assistant_masks"]
    picked = tok.decode([i for i, m in zip(ids, mask) if m])
    assert picked == "touch /app/x<|im_end|>done<|im_end|>"


def test_sizes(micro, tmp_path):
    from termcredit.trainer.tiny import SIZES, build_tiny

    n_micro = sum(p.numel() for p in micro.model.parameters())
    assert 50_000 < n_micro < 500_000
    assert micro.model.config.num_hidden_layers == SIZES["micro"]["num_hidden_layers"]
    d = build_tiny(tmp_path / "tiny", "tiny", seed=0)
    info = json.loads((d / "termcredit_tiny.json").read_text())
    assert 4_000_000 < info["params"] < 6_500_000
    with pytest.raises(ValueError):
        build_tiny(tmp_path / "x", "huge")


def test_load_policy_builds_into_the_cache_once(micro_dir, tmp_path):
    from termcredit.trainer.policy import load_policy

    p1 = load_policy("micro", cache_dir=tmp_path)
    (built,) = [d for d in tmp_path.iterdir() if d.name.startswith("micro-s0-")]
    stamp = (built / "model.safetensors").stat().st_mtime_ns
    p2 = load_policy("micro", cache_dir=tmp_path)
    assert (built / "model.safetensors").stat().st_mtime_ns == stamp
    assert _sha(built / "model.safetensors") == _sha(micro_dir / "model.safetensors")
    assert str(p1) == str(p2) == "micro-s0"
    with pytest.raises(ValueError, match="unknown policy"):
        load_policy("no-such-policy")
