"""Token-exact multi-turn layout: incremental ids == the template's full re-render."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SYSTEM = "You are an agent in a Linux shell."


def _messages(system, instruction, actions, observations):
    msgs = [{"role": "system", "content": system}] if system is not None else []
    msgs.append({"role": "user", "content": instruction})
    for k, a in enumerate(actions):
        msgs.append({"role": "assistant", "content": a})
        if k < len(observations):
            msgs.append({"role": "user", "content": observations[k]})
    return msgs


def _cut_at_last(ids, end_id):
    return ids[:len(ids) - ids[::-1].index(end_id)]


def test_prompt_and_observation_ids(micro, layout):
    tok = micro.tokenizer
    prompt = layout.prompt_ids(SYSTEM, "Create /app/hello.txt")
    assert tok.decode(prompt).endswith("<|im_start|>assistant\n")
    assert tok.decode(prompt).startswith(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n")
    obs = layout.observation_ids("exit code: 0")
    assert tok.decode(obs) == "\n<|im_start|>user\nexit code: 0<|im_end|>\n<|im_start|>assistant\n"
    assert layout.observation_ids("x", after_truncated=True) == [layout.end_id] + layout.observation_ids("x")
    assert tok.decode(layout.prompt_ids(None, "hi")) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_build_layout_masks_spans_logprobs(micro, layout):
    from termcredit.trainer.chat import LayoutBuilder, build_layout

    prompt = layout.prompt_ids(SYSTEM, "task")
    a1, a2 = [5, 6, layout.end_id], [7, layout.end_id]
    o1 = layout.observation_ids("exit code: 0")
    lay = build_layout(prompt, [a1, a2], [o1], logprobs=[[-1.0, -2.0, -3.0], [-4.0, -5.0]])
    n = len(prompt)
    assert lay.token_ids == prompt + a1 + o1 + a2
    assert lay.step_spans == [[n, n + 3], [n + 3 + len(o1), n + 5 + len(o1)]]
    assert lay.loss_mask == [0] * n + [1] * 3 + [0] * len(o1) + [1] * 2
    assert lay.logprobs == [0.0] * n + [-1.0, -2.0, -3.0] + [0.0] * len(o1) + [-4.0, -5.0]
    for (s, e), a in zip(lay.step_spans, [a1, a2]):
        assert lay.token_ids[s:e] == a
    with pytest.raises(ValueError):
        build_layout(prompt, [a1], [o1, o1])
    with pytest.raises(ValueError):
        LayoutBuilder(prompt).add_action([1, 2], [0.0])


def test_layout_of_sampled_turns_scores_like_the_sampler(micro, layout):
    from termcredit.trainer.chat import LayoutBuilder

    b = LayoutBuilder(layout.prompt_ids(SYSTEM, "Create /app/hello.txt"))
    for turn in range(3):
        (s,) = micro.generate([b.token_ids], max_new_tokens=6, seed=turn)
        b.add_action(s.token_ids, s.logprobs)
        b.add_observation(layout.observation_ids(f"exit code: {turn}", after_truncated=not s.finished))
    lay = b.layout
    assert len(lay.token_ids) == len(lay.loss_mask) == len(lay.logprobs)
    (scored,) = micro.score([lay.token_ids], [lay.loss_mask])
    assert scored == pytest.approx(lay.logprobs, abs=1e-4)
    assert sum(lay.loss_mask) == sum(e - s for s, e in lay.step_spans)


text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
shellish = st.text(alphabet=st.sampled_from(list("lsca -/.|>'\"$\n\t_0123456789éü日")), max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(system=st.one_of(st.none(), text), instruction=text,
       turns=st.lists(st.tuples(st.one_of(text, shellish), st.one_of(text, shellish)),
                      min_size=1, max_size=4),
       end_on_observation=st.booleans())
def test_incremental_ids_equal_full_rerender(micro, layout, system, instruction, turns,
                                             end_on_observation):
    from termcredit.trainer.chat import build_layout

    tok = micro.tokenizer
    actions = [a for a, _ in turns]
    observations = [o for _, o in turns][:len(turns) if end_on_observation else len(turns) - 1]
    sampled = [tok.encode(a, add_special_tokens=False) + [layout.end_id] for a in actions]
    lay = build_layout(layout.prompt_ids(system, instruction), sampled,
                       [layout.observation_ids(o) for o in observations])
    msgs = _messages(system, instruction, actions, observations)
    enc = tok.apply_chat_template(msgs, tokenize=True, return_dict=True,
                                  add_generation_prompt=end_on_observation,
                                  return_assistant_tokens_mask=True)
    full, mask = list(enc["input_ids"]), list(enc["assistant_masks"])
    if not end_on_observation:
        full = _cut_at_last(full, layout.end_id)
    assert lay.token_ids == full
    assert lay.loss_mask == mask[:len(full)]  # the template's {% generation %} spans
