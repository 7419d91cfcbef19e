"""Menu sampling (trainer/menu.py): the trie, the chat-template ids of a reply, the menu a task
declares, and generation that never leaves it. Expected values written out by hand."""

from __future__ import annotations

import pytest
import torch

from termcredit.tasks import load_task
from termcredit.harness.actions import DONE_WORDS
from termcredit.trainer.menu import DONE, Menu, menu_commands, task_menu
from termcredit.trainer.policy import Sample, _on_menu


def test_trie_allows_exactly_the_next_ids_of_the_replies():
    m = Menu([[1, 2, 9], [1, 3, 9], [4, 9]])
    assert m.allowed([]) == [1, 4]
    assert m.allowed([1]) == [2, 3]
    assert m.allowed([1, 2]) == [9]
    assert m.allowed([4]) == [9]
    assert m.allowed([1, 2, 9]) == []  # complete
    assert m.allowed([5]) == []  # off the menu


def test_empty_menu_or_reply_is_refused():
    with pytest.raises(ValueError, match="at least one reply"):
        Menu([])
    with pytest.raises(ValueError, match="none of them empty"):
        Menu([[1], []])


def test_on_menu_masks_only_rows_with_a_menu():
    logits = torch.zeros(3, 6)
    menu = Menu([[1, 2, 5], [3, 5]])
    rows = [Sample([], [], False), Sample([1], [0.0], False), Sample([], [], False)]
    out = _on_menu(logits, [menu, menu, None], rows)
    inf = float("-inf")
    assert out[0].tolist() == [inf, 0, inf, 0, inf, inf]  # the first ids: 1 or 3
    assert out[1].tolist() == [inf, inf, 0, inf, inf, inf]  # after 1: 2 only
    assert out[2].tolist() == [0] * 6  # no menu: unchanged


def test_tally_orders_menu_is_its_solution_lookarounds_decoys_and_done():
    task = load_task("tasks/tally-orders")
    assert menu_commands(task) == [
        "cd /data", "N=$(ls orders | wc -l)", "cat orders/*.txt > /tmp/all",
        "sort /tmp/all > /tmp/s", "uniq -c /tmp/s > summary.txt", "echo $N > count.txt",
        "mv orders/*.txt done/",
        "ls orders", "head -n 3 /tmp/all", "wc -l /tmp/all", "head -n 3 summary.txt",
        "echo $N",
        "rm -f /tmp/all", "unset N", "rm -f orders/*.txt",
        "done"]
    assert DONE == "done" and DONE in DONE_WORDS  # the harness ends the episode on it


def test_reply_ids_are_the_template_ids_through_end_of_turn(micro, layout):
    for text in ("cd /data", "echo $N > count.txt", "done"):
        ids = layout.reply_ids(text)
        assert ids[-1] == layout.end_id and layout.end_id not in ids[:-1]
        assert micro.tokenizer.decode(ids[:-1]) == text
        # the ids a fine-tuned demonstration with this reply trains on
        head = layout.render([{"role": "system", "content": "S"},
                              {"role": "user", "content": "U"}], add_generation_prompt=True)
        full = layout.render([{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                              {"role": "assistant", "content": text}])
        assert full[len(head):len(head) + len(ids)] == ids


def test_generation_never_leaves_the_menu(micro, layout):
    task = load_task("tasks/tally-orders")
    menu = task_menu(layout, task)
    replies = {tuple(layout.reply_ids(c)) for c in menu_commands(task)}
    prompt = layout.prompt_ids("You are an agent.", task.instruction)
    free = micro.generate([prompt] * 8, max_new_tokens=24, temperature=1.0, seed=3)
    assert any(tuple(s.token_ids) not in replies for s in free)  # the untrained model wanders
    for seed in range(3):
        got = micro.generate([prompt] * 8, max_new_tokens=24, temperature=1.0, seed=seed,
                             menus=[menu] * 8)
        for s in got:
            assert s.finished and tuple(s.token_ids) in replies
            assert all(lp <= 0.0 for lp in s.logprobs)
    mixed = micro.generate([prompt] * 2, max_new_tokens=24, temperature=1.0, seed=3,
                           menus=[None, menu])
    assert tuple(mixed[1].token_ids) in replies
    # rows without a menu sample exactly as without menus
    none = micro.generate([prompt] * 2, max_new_tokens=24, temperature=1.0, seed=3,
                          menus=[None, None])
    plain = micro.generate([prompt] * 2, max_new_tokens=24, temperature=1.0, seed=3)
    assert [s.token_ids for s in none] == [s.token_ids for s in plain]


def test_menus_must_match_the_prompts(micro, layout):
    menu = Menu([[1]])
    with pytest.raises(ValueError, match="one \\(or None\\) per prompt"):
        micro.generate([[1, 2]] * 2, max_new_tokens=2, menus=[menu])
