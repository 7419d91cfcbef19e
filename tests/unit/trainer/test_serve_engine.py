"""`termcredit serve`'s engine on a real (micro) policy: the chat template renders the prompt,
the request's sampling settings reach ``Policy.generate``, usage and finish reasons are right."""

from __future__ import annotations

import copy

import pytest

from termcredit.serve.engine import PolicyEngine
from termcredit.serve.protocol import ApiError, ChatRequest

MSGS = [{"role": "system", "content": "You run shell commands."},
        {"role": "user", "content": "list /app"}]


def test_prompt_is_the_chat_template_and_usage_counts_tokens(micro):
    engine = PolicyEngine(micro, max_tokens=6)
    c = engine.complete(ChatRequest(messages=MSGS, temperature=0.0))
    # ChatML, written out by hand; the tokenizer reads <|im_start|>/<|im_end|> as single ids
    text = ("<|im_start|>system\nYou run shell commands.<|im_end|>\n"
            "<|im_start|>user\nlist /app<|im_end|>\n<|im_start|>assistant\n")
    prompt = micro.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert c.prompt_tokens == len(prompt)
    greedy = micro.generate([prompt], max_new_tokens=6, temperature=0.0)[0]
    assert c.text == micro.tokenizer.decode(greedy.token_ids, skip_special_tokens=True)
    assert c.completion_tokens == len(greedy.token_ids)
    assert c.finish_reason == ("stop" if greedy.finished else "length")
    assert c.usage == {"prompt_tokens": len(prompt), "completion_tokens": len(greedy.token_ids),
                       "total_tokens": len(prompt) + len(greedy.token_ids)}


def test_seed_top_p_and_max_tokens_are_honoured(micro):
    engine = PolicyEngine(micro, max_tokens=8)
    a = engine.complete(ChatRequest(messages=MSGS, temperature=1.0, top_p=0.9, seed=5,
                                    max_tokens=100))
    b = engine.complete(ChatRequest(messages=MSGS, temperature=1.0, top_p=0.9, seed=5))
    assert a == b  # same seed, same reply; 100 asked, capped at the server's 8
    ids = engine.prompt_ids(ChatRequest(messages=MSGS))
    direct = micro.generate([ids], max_new_tokens=8, temperature=1.0, top_p=0.9, seed=5)[0]
    assert a.completion_tokens == len(direct.token_ids) <= 8
    assert a.text == micro.tokenizer.decode(direct.token_ids, skip_special_tokens=True)
    short = engine.complete(ChatRequest(messages=MSGS, temperature=0.0, max_tokens=2))
    two = micro.generate([ids], max_new_tokens=2, temperature=0.0)[0]
    assert (short.completion_tokens, short.finish_reason) == (
        len(two.token_ids), "stop" if two.finished else "length")
    assert len(two.token_ids) == 2 and not two.finished  # micro says more than two tokens


def test_the_end_of_turn_token_stops_the_reply(micro):
    im_end = micro.tokenizer.get_vocab()["<|im_end|>"]
    assert im_end in micro.stop_ids  # what the engine stops at by default
    engine = PolicyEngine(micro, max_tokens=8)
    first = micro.generate([engine.prompt_ids(ChatRequest(messages=MSGS))], max_new_tokens=1,
                           temperature=0.0)[0].token_ids[0]
    stopper = copy.copy(micro)
    stopper.stop_ids = frozenset({first})  # greedy's first token now ends the turn
    c = PolicyEngine(stopper, max_tokens=8).complete(ChatRequest(messages=MSGS, temperature=0.0))
    assert (c.completion_tokens, c.finish_reason) == (1, "stop")


def test_stop_strings_and_the_context_limit(micro):
    engine = PolicyEngine(micro, max_tokens=12)
    full = engine.complete(ChatRequest(messages=MSGS, temperature=0.0))
    assert len(full.text) >= 4
    cut = engine.complete(ChatRequest(messages=MSGS, temperature=0.0, stop=(full.text[2:4],)))
    assert cut.text == full.text[:full.text.index(full.text[2:4])]
    assert cut.finish_reason == "stop" and cut.completion_tokens == full.completion_tokens
    n = len(engine.prompt_ids(ChatRequest(messages=MSGS)))
    engine.context = n + 2  # room for two new tokens
    assert engine.complete(ChatRequest(messages=MSGS, temperature=0.0)).completion_tokens <= 2
    engine.context = n
    with pytest.raises(ApiError, match=f"the prompt is {n} tokens; the model's context is {n}"):
        engine.complete(ChatRequest(messages=MSGS))
