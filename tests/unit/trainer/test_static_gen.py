"""generation = "static": a StaticCache and a fixed-shape decode step (compiled on CUDA; eager
here). Greedy tokens equal Hugging Face ``generate``'s; sampled draws equal the "hf" path's."""

from __future__ import annotations

import shutil

import pytest

torch = pytest.importorskip("torch")

INSTRUCTIONS = ["ls", "Create /app/hello.txt containing Hello, world!",
                "Count the lines of /app/a.csv"]


@pytest.fixture(scope="module")
def sharp(micro):
    """The micro shape with weights drawn wide (std 0.5): its greedy continuations vary from
    token to token (the 0.02 init repeats one token), so equality says something."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    from termcredit.trainer.policy import Policy

    torch.manual_seed(0)
    cfg = LlamaConfig(**{**micro.model.config.to_dict(), "initializer_range": 0.5})
    return Policy(AutoModelForCausalLM.from_config(cfg).eval(), micro.tokenizer,
                  generation="static")


@pytest.fixture(scope="module")
def prompts(micro, layout):
    return [layout.prompt_ids("You are an agent.", t) for t in INSTRUCTIONS]


def _with(policy, generation: str, prompts, **kw):
    policy.generation = generation
    try:
        return policy.generate(prompts, **kw)
    finally:
        policy.generation = "static"


def test_greedy_equals_hf_generate_token_for_token(sharp, prompts):
    from termcredit.trainer.policy import pad_batch

    got = sharp.generate(prompts, max_new_tokens=20, temperature=0)
    ids, attn = pad_batch(prompts, sharp.pad_id, side="left")
    ref = sharp.model.generate(input_ids=ids, attention_mask=attn, max_new_tokens=20,
                               do_sample=False, pad_token_id=sharp.pad_id,
                               eos_token_id=sorted(sharp.stop_ids))
    for i, s in enumerate(got):
        assert s.token_ids == ref[i, ids.shape[1]:].tolist()
        assert len(set(s.token_ids)) > 10  # a varied continuation, not one token repeated
    ours = _with(sharp, "hf", prompts, max_new_tokens=20, temperature=0)
    for a, b in zip(ours, got):
        assert a.token_ids == b.token_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)  # wide weights: more noise


def test_sampled_draws_equal_the_hf_path_for_a_seed(micro, prompts):
    # the same logits (to float noise) and the same generator draws, so the same tokens
    a = _with(micro, "hf", prompts, max_new_tokens=24, seed=1, temperature=1.0, top_p=0.9)
    b = _with(micro, "static", prompts, max_new_tokens=24, seed=1, temperature=1.0, top_p=0.9)
    for x, y in zip(a, b):
        assert x.token_ids == y.token_ids and len(y.token_ids) == 24
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-5)
        assert not y.finished


def test_rows_stop_at_their_first_stop_id(micro, prompts):
    free = _with(micro, "static", prompts, max_new_tokens=24, seed=2)
    # stop ids: row 0's 3rd token and row 1's 6th (row 2 may meet either, or run to 24)
    stops = [free[0].token_ids[2], free[1].token_ids[5]]
    a = _with(micro, "hf", prompts, max_new_tokens=24, seed=2, stop_ids=stops)
    b = _with(micro, "static", prompts, max_new_tokens=24, seed=2, stop_ids=stops)
    assert [s.token_ids for s in a] == [s.token_ids for s in b]
    assert [s.finished for s in a] == [s.finished for s in b]
    assert len(b[0].token_ids) <= 3 and b[0].finished and b[0].token_ids[-1] in stops
    assert len(b[1].token_ids) <= 6 and b[1].finished
    for s in b:
        assert not any(t in stops for t in s.token_ids[:-1])  # cut at the first one
        assert s.finished == (s.token_ids[-1] in stops)
        assert len(s.logprobs) == len(s.token_ids)


def test_bucket_sizes():
    from termcredit.trainer.static_gen import MIN_LENGTH, _bucket

    assert MIN_LENGTH == 256
    assert _bucket(3, 300) == (4, 512)
    assert _bucket(32, 256) == (32, 256)
    assert _bucket(1, 1) == (1, 256)
    assert _bucket(5, 513) == (8, 1024)
    assert _bucket(17, 1536) == (32, 2048)


def test_a_cache_per_size_reused_across_calls(micro, prompts):
    from termcredit.trainer.policy import Policy

    pol = Policy(micro.model, micro.tokenizer, generation="static")
    first = pol.generate(prompts, max_new_tokens=8, seed=4)
    gen = pol._static
    assert gen is not None and not gen.compile  # CPU: the eager static-cache step
    assert list(gen._caches) == [(4, 256)]
    cache = gen._caches[(4, 256)]
    again = pol.generate(prompts, max_new_tokens=8, seed=4)  # the same cache, reset
    assert gen._caches[(4, 256)] is cache
    assert [s.token_ids for s in again] == [s.token_ids for s in first]
    pol.generate(prompts[:1], max_new_tokens=8, seed=4)
    assert list(gen._caches) == [(4, 256), (1, 256)]


def test_unknown_generation_is_refused(micro):
    from termcredit.trainer.policy import Policy

    with pytest.raises(ValueError, match="generation must be one of hf, static"):
        Policy(micro.model, micro.tokenizer, generation="vllm")


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")),
                    reason="torch.compile on CPU needs a C compiler")
def test_compiled_decode_step_gives_the_same_tokens_and_compiles_once_per_size(micro, prompts):
    """What runs on CUDA (torch.compile of the decode step; CUDA graphs are CUDA's alone),
    here through the CPU compiler: the same draws as the hf path, one compile for two calls."""
    from torch._dynamo.utils import counters

    from termcredit.trainer.policy import Policy
    from termcredit.trainer.static_gen import StaticGenerator

    pol = Policy(micro.model, micro.tokenizer, generation="static")
    pol._static = StaticGenerator(micro.model, compile=True)
    ref = _with(micro, "hf", prompts, max_new_tokens=12, seed=5)
    first = pol.generate(prompts, max_new_tokens=12, seed=5)
    graphs = counters["stats"]["unique_graphs"]
    again = pol.generate(prompts, max_new_tokens=12, seed=5)
    assert graphs >= 1 and counters["stats"]["unique_graphs"] == graphs  # no recompile
    for r, a, b in zip(ref, first, again):
        assert r.token_ids == a.token_ids == b.token_ids
        assert r.logprobs == pytest.approx(a.logprobs, abs=1e-4)
