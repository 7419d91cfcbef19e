"""Issue #16: the warm start's noisy demonstrations. Expected shapes written out by hand."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from termcredit.bench.demos import DISTRACT, EXPLORE, noisy_demos, oracle_commands, wrong_variant
from termcredit.bench.protocol import CREDIT_TASKS
from termcredit.tasks import load_task

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", CREDIT_TASKS)
def test_noisy_mix_of_a_credit_task(name: str) -> None:
    task = load_task(REPO / "tasks" / name)
    oracle = oracle_commands(task)
    demos = [[a for a, _ in d.turns] for d in noisy_demos(task, random.Random(0))]
    assert len(demos) == 8 and all(d[-1] == "done" for d in demos)
    # four correct copies with the stray write after the work, one with a look around first too
    assert demos[:4] == [oracle + [DISTRACT, "done"]] * 4
    assert demos[4] == [EXPLORE] + oracle + [DISTRACT, "done"]
    # three wrong chains: exactly one command differs from the oracle's
    for d, distract in zip(demos[5:], (True, True, False)):
        chain = d[:-2] if distract else d[:-1]
        assert (d[-2] == DISTRACT) == distract
        assert len(chain) == len(oracle)
        assert sum(a != b for a, b in zip(chain, oracle)) == 1


@pytest.mark.parametrize("cmd, expected", [
    ("grep -l x /app/conf/*.conf > /tmp/primary", "grep -l x /ap/conf/*.conf > /tmp/primary"),
    ("sort /app/a | uniq -c", "sort /app/a"),
    ("sed -i 's/^port = .*/port = 6432/' \"$(cat /tmp/primary)\"",
     "sed -i 's/^port = .*/por = 6432/' \"$(cat /tmp/primary)\""),
    ("true", "truex"),
])
def test_wrong_variant_always_breaks_the_command(cmd: str, expected: str) -> None:
    # rng draws >= 0.5 here, so a redirect is not moved and the next rule applies
    class High(random.Random):
        def random(self) -> float:
            return 0.9

    assert wrong_variant(cmd, High()) == expected
