"""Demonstrations with real observations (``BenchConfig.replay_demos``): each warm-start
demonstration replayed as it is, in a sandbox, and its chat rebuilt from what its commands
printed.

Why (issue #34): the horizon tier's demonstrations (decoy_demos.py) carry synthetic
observations ("exit code: 0"; a look-around's output elided). At run time the policy meets
real ones (a look-around's listing, an error message) it never saw in training, and the
5 M-parameter start, three or four commands in, lost the thread and garbled the next command
(the pilot: 42% of commands errored). Replayed, every observation is one the policy will meet.

How: the demonstrations' commands, one step each (``refine.run.replay``: a fresh sandbox of
the task's image), copy k of a task at training instance k (``train_instances``: the values
in stdout vary between copies, as they do between rollouts); the chat is
``refine.dataset.demo_of`` of the replay (``format_observation`` at the rollout's
``obs_chars``), then ``done``. Nothing is dropped and the outcome is not filtered: a failed
copy (a decoy that breaks the task) stays a failed copy, the mix is the demonstrations'.
Everything lands in ``<start>/replay/`` with ``replayed.jsonl`` and ``warm.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from ..estimators.inside import errored
from ..estimators.rewards import training_reward
from ..jsonl import write_jsonl
from ..refine.dataset import demo_of
from ..refine.run import replay
from ..tasks import Task
from ..trainer.sft import Demo, demo_messages
from .warm_refined import demo_commands


def replayed_demos(per_task: list[tuple[Task, list[Demo]]], out: Path, *, train_instances: int,
                   obs_chars: int = 600, command_timeout: float = 10.0, concurrency: int = 2,
                   log: Callable[[str], None] = lambda m: None) -> list[Demo]:
    """Every demonstration of ``per_task`` replayed (see the module doc), in the same order."""
    jobs = [(task, (k % train_instances) if task.parametrized else 0, demo_commands(d))
            for task, demos in per_task for k, d in enumerate(demos)]
    trials = replay(jobs, out / "trials", concurrency=concurrency,
                    command_timeout=command_timeout, log=log, agent="demo-replay")
    missing = [f"{task.name} copy at instance {inst}"
               for (task, inst, _), tr in zip(jobs, trials) if tr is None]
    if missing:
        raise RuntimeError(f"{out}: no trajectory from the replay of {', '.join(missing)}")
    demos = [demo_of(tr, obs_chars) for tr in trials if tr is not None]
    rewards = [training_reward(tr) for tr in trials if tr is not None]
    write_jsonl(out / "replayed.jsonl", [
        {"messages": demo_messages(d), "task": task.name, "instance": inst, "reward": r}
        for d, (task, inst, _), r in zip(demos, jobs, rewards)])
    (out / "warm.json").write_text(json.dumps({
        "demos": len(demos), "solved": sum(r >= 1.0 for r in rewards),
        "errored_commands": sum(errored(s) for tr in trials if tr is not None
                                for s in tr.steps)}, indent=2) + "\n")
    log(f"replayed warm start: {len(demos)} demonstrations, "
        f"{sum(r >= 1.0 for r in rewards)} solve their task")
    return demos
