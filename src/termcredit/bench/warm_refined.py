"""The bench's refined warm start (``warm_demos = "refined"``): the noisy demonstrations,
turned into real trials and run through `termcredit refine`.

How the trials are obtained: each task's noisy demonstrations (``demos.noisy_demos``, the same
seeded mix the noisy warm start trains on) are replayed as they are, one command a step
(``refine.run.replay``: a fresh sandbox of the task's image, instance 0), giving real trials
with traces. The successful ones (the wrong chains fail and are left out, as refine takes only
trials the verifier passed) are refined (graph-proven droppable steps removed, the rest
replayed again and kept only if the verifier still gives 1); their chat lines are the
demonstrations. Identical noisy copies are replayed once and count as often as they occur.
Observations are the replays' real ones (``obs_chars`` as the bench's rollouts), not the noisy
set's synthetic "exit code: 0". Everything lands in ``start/refine/`` with ``warm.json``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable

from ..estimators.rewards import training_reward
from ..jsonl import read_jsonl
from ..refine.run import Source, refine_sources, replay
from ..tasks import Task
from ..harness.actions import parse_action
from ..trainer.sft import Demo, load_sft_jsonl
from .demos import noisy_demos


def demo_commands(demo: Demo) -> list[str]:
    """The commands a demonstration runs (its ``done`` left out)."""
    out = []
    for action, _ in demo.turns:
        a = parse_action(action)
        if a.kind == "command":
            out.append(a.command)
    return out


def refined_demos(tasks: list[Task], out: Path, *, obs_chars: int = 600,
                  command_timeout: float = 10.0, concurrency: int = 2,
                  log: Callable[[str], None] = lambda m: None) -> list[Demo]:
    """Noisy demonstrations -> trials -> refine -> demonstrations (see the module doc)."""
    rng = random.Random(0)  # the noisy warm start's own draw
    unique: dict[tuple[str, tuple[str, ...]], int] = {}
    by_task = {t.name: t for t in tasks}
    for t in tasks:
        for d in noisy_demos(t, rng):
            key = (t.name, tuple(demo_commands(d)))
            unique[key] = unique.get(key, 0) + 1
    keys = list(unique)
    trials = replay([(by_task[name], 0, list(cmds)) for name, cmds in keys],
                    out / "noisy-trials", concurrency=concurrency,
                    command_timeout=command_timeout, log=log, agent="noisy-demo")
    ok = [(k, tr) for k, tr in zip(keys, trials)
          if tr is not None and training_reward(tr) >= 1.0]
    log(f"refined warm start: {len(ok)} of {len(keys)} distinct noisy demos solve their task")
    dataset = out / "refined.jsonl"
    report = refine_sources([Source(tr, by_task[k[0]]) for k, tr in ok], dataset,
                            obs_chars=obs_chars, command_timeout=command_timeout,
                            concurrency=concurrency, log=log)
    lines = read_jsonl(dataset)
    demos = load_sft_jsonl(dataset)
    counts = {tr.trial_dir: unique[k] for k, tr in ok}
    weighted = [d for d, row in zip(demos, lines) for _ in range(counts.get(row["source"], 1))]
    (out / "warm.json").write_text(json.dumps({
        "noisy_demos": sum(unique.values()), "distinct": len(keys), "successful": len(ok),
        "refined": len(lines), "refined_demos": len(weighted),
        "steps_dropped": report["steps_dropped"], "tokens_saved": report["tokens_saved"],
        "token_unit": report["token_unit"]}, indent=2) + "\n")
    if not weighted:
        raise RuntimeError(f"{out}: no noisy demonstration survived refine: nothing to "
                           "warm-start on (see refined.jsonl.report.json)")
    return weighted
