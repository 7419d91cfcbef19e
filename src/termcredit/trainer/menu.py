"""Menu sampling: the policy may only say one of a task's declared commands (or `done`).

A small policy's failures are mostly typos inside otherwise right commands, and no per-step
credit can fix a typo. Restricting each reply to a fixed menu (the task's solution commands,
its look-arounds and its breaking decoys, ``tasks/demos.py``, plus `done`) makes every failure
a choice: a decoy, an order, an omission. The commands still run for real in the sandbox and
are traced; only the sampler is constrained (the logits of tokens that leave the menu are set
to -inf), so the policy trained is the unconstrained one and its log-probs are re-scored
without the mask (trainer/train.py ``score_old``).

Each reply is tokenised as the chat template writes it in an assistant turn
(``ChatLayout.reply_ids``), so a menu reply's ids are the ids the warm start was fine-tuned on;
the trie is over those ids, ending with the end-of-turn id.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..tasks import Task
from ..tasks.demos import reference_commands

DONE = "done"  # one of harness/actions.py's DONE_WORDS: the reply that ends an episode


class Menu:
    """A trie over the token ids of the allowed replies."""

    def __init__(self, replies: Sequence[Sequence[int]]):
        if not replies or any(len(r) == 0 for r in replies):
            raise ValueError("a menu needs at least one reply, none of them empty")
        self._next: dict[tuple[int, ...], set[int]] = {}
        for ids in replies:
            for k in range(len(ids)):
                self._next.setdefault(tuple(ids[:k]), set()).add(int(ids[k]))

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """The ids that may follow ``prefix`` (the reply's ids so far); [] once it is complete
        or off the menu."""
        return sorted(self._next.get(tuple(prefix), ()))


def menu_commands(task: Task) -> list[str]:
    """The task's declared commands (solution, look-arounds, decoys) and `done`, each once."""
    return list(dict.fromkeys([*reference_commands(task), DONE]))


def task_menu(layout: Any, task: Task) -> Menu:
    """The task's menu over ``layout``'s (a ``ChatLayout``'s) reply ids."""
    return Menu([layout.reply_ids(c) for c in menu_commands(task)])
