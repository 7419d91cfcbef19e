"""A refined trajectory as one line of the SFT dataset (the chat layout `trainer.sft` reads).

Each line: ``{"messages": [...]}`` (``trainer.sft.demo_messages``: system, instruction, then
action / observation turns, ending with the assistant's ``done``) plus what refine did:
the source trial, the steps kept and dropped (with why), the replay's trial folder and reward,
and the tokens saved. Observations are the *replay's* (what the kept commands really printed,
``format_observation`` at the rollout's ``obs_chars``), so the chat is one that happened.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

from ..records import Step, Trajectory
from ..harness.actions import format_observation, parse_action
from ..trainer.sft import Demo, demo_messages
from .select import StepDecision


@lru_cache(maxsize=1)
def token_counter() -> tuple[str, Callable[[str], int]]:
    """("tiny", count) with the tiny policy's tokenizer when the train extra is installed
    (built into the cache on first use), else ("chars", len)."""
    try:
        from transformers import AutoTokenizer

        from ..trainer.tiny import cache_root, ensure_tiny

        tok = AutoTokenizer.from_pretrained(ensure_tiny("tiny", 0, cache_root()),
                                            local_files_only=True)
    except Exception:  # no transformers/torch, or no tokenizer to be built: count characters
        return "chars", len
    return "tiny", lambda text: len(tok.encode(text, add_special_tokens=False))


def action_text(step: Step) -> str:
    """What the assistant said for a step: its own reply when that parses back to the command
    it ran, else the command (a fenced block when it spans lines, as demos write it)."""
    cmd = step.command.command if step.command is not None else ""
    if step.action and parse_action(step.action).command == cmd:
        return step.action
    return f"```bash\n{cmd}\n```" if "\n" in cmd else cmd


def demo_of(traj: Trajectory, obs_chars: int) -> Demo:
    """The commands a trajectory ran, each with its observation, then ``done``."""
    turns = [(action_text(s), format_observation(s.command, obs_chars))
             for s in traj.steps if s.command is not None]
    return Demo(traj.instruction, turns + [("done", "")])


def chat_tokens(demo: Demo, count: Callable[[str], int]) -> int:
    return sum(count(m["content"]) for m in demo_messages(demo))


def record(source: Trajectory, replay: Trajectory, decisions: list[StepDecision],
           replay_reward: float, obs_chars: int) -> dict[str, Any]:
    unit, count = token_counter()
    before, after = demo_of(source, obs_chars), demo_of(replay, obs_chars)
    n_before, n_after = chat_tokens(before, count), chat_tokens(after, count)
    return {
        "messages": demo_messages(after),
        "task": source.task,
        "instance": source.info.get("instance", 0),
        "source": source.trial_dir,
        "replay": replay.trial_dir,
        "replay_reward": replay_reward,
        "steps_kept": [{"step": d.step, "command": d.command, "why": d.why}
                       for d in decisions if d.keep and d.command is not None],
        "steps_dropped": [{"step": d.step, "command": d.command, "why": d.why}
                          for d in decisions if not d.keep],
        "token_unit": unit,
        "tokens_before": n_before,
        "tokens_after": n_after,
        "tokens_saved": n_before - n_after,
    }
