"""Batched multi-turn rollouts: G episodes of one task from one initial state, in G sandboxes,
one generation call per turn for all live episodes.

Token layout A (reference/trainer.md §1.0): one growing id list per episode; sampled ids are
kept exactly as sampled (loss mask 1, behaviour log-probs), the harness's observation ids are
appended with mask 0. Nothing is ever detokenised and retokenised into the training sequence.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..harness.agents import AgentEnv, AgentTimeout, ResourceLimit
from ..harness.infra import is_infra, is_infra_exception, mark_infra
from ..harness.trial import task_spec
from ..records import Step, TokenLayout, Trajectory, VerifierReport, save_json
from ..sandbox import Sandbox, SandboxPool
from ..tasks import Task
from ..harness.verify import verify_episode
from .actions import SYSTEM_PROMPT, Action, format_observation, invalid_observation, parse_action


@dataclass
class RolloutConfig:
    max_turns: int = 6
    max_new_tokens: int = 48
    max_total_tokens: int = 1536
    temperature: float = 1.0
    top_p: float = 1.0
    command_timeout: float = 20.0
    obs_chars: int = 600
    system_prompt: str = SYSTEM_PROMPT


@dataclass
class _Episode:
    index: int
    sandbox: Sandbox
    env: AgentEnv
    traj: Trajectory
    tokens: TokenLayout
    trial_dir: Path
    anchor: str
    done: bool = False
    timings: dict[str, float] = field(default_factory=dict)


def _append(tok: TokenLayout, ids: list[int], logprobs: list[float] | None) -> tuple[int, int]:
    start = len(tok.token_ids)
    tok.token_ids.extend(ids)
    tok.loss_mask.extend([1 if logprobs is not None else 0] * len(ids))
    tok.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))
    return start, len(tok.token_ids)


def rollout_group(policy: Any, layout: Any, task: Task, image: str, pool: SandboxPool,
                  group_size: int, out_dir: Path, cfg: RolloutConfig, *, instance: int = 0,
                  policy_version: int = 0, seed: int | None = None) -> list[Trajectory]:
    """Run ``group_size`` episodes; returns their trajectories (verified, files on disk)."""
    spec = task_spec(task, image)
    pool.plan([spec] * group_size)
    t_env = time.monotonic()
    prompt = layout.prompt_ids(cfg.system_prompt, task.instruction)
    episodes: list[_Episode] = []
    for k in range(group_size):
        sb = pool.acquire(spec)
        trial_dir = out_dir / f"g{k}"
        trial_dir.mkdir(parents=True, exist_ok=True)
        traj = Trajectory(task=task.name, instruction=task.instruction, agent=str(policy),
                          trial_dir=str(trial_dir), info={"instance": instance,
                                                          "policy_version": policy_version,
                                                          "container": sb.id[:12]})
        tok = TokenLayout()
        _append(tok, list(prompt), None)
        episodes.append(_Episode(k, sb, AgentEnv(sb, task, traj, trial_dir,
                                                 command_timeout=cfg.command_timeout),
                                 traj, tok, trial_dir, anchor=task.instruction))
    gen_s = env_s = 0.0
    env_s += time.monotonic() - t_env
    with ThreadPoolExecutor(max_workers=group_size) as threads:
        for _turn in range(cfg.max_turns):
            live = [e for e in episodes if not e.done]
            if not live:
                break
            t0 = time.monotonic()
            samples = policy.generate([e.tokens.token_ids for e in live],
                                      max_new_tokens=cfg.max_new_tokens,
                                      temperature=cfg.temperature, top_p=cfg.top_p,
                                      seed=None if seed is None else seed * 1009 + _turn)
            gen_s += time.monotonic() - t0
            t0 = time.monotonic()
            actions = []
            for e, s in zip(live, samples):
                span = _append(e.tokens, list(s.token_ids), list(s.logprobs))
                e.tokens.step_spans.append(list(span))
                text = policy.tokenizer.decode(s.token_ids, skip_special_tokens=True)
                actions.append((e, text, parse_action(text), s))
            list(threads.map(lambda a: _act(*a, cfg), actions))
            for e, _text, _action, s in actions:
                if e.done:
                    continue
                # cut off by max_new_tokens: the harness closes the turn (mask 0)
                obs_ids = layout.observation_ids(e.traj.steps[-1].observation,
                                                 after_truncated=not s.finished)
                _append(e.tokens, obs_ids, None)
                if len(e.tokens.token_ids) + cfg.max_new_tokens > cfg.max_total_tokens:
                    e.done, e.traj.termination = True, "token_budget"
            env_s += time.monotonic() - t0
        for e in episodes:
            if not e.done:
                e.done, e.traj.termination = True, "max_turns"
        t0 = time.monotonic()
        list(threads.map(lambda e: _verify(e, task, instance), episodes))
        env_s += time.monotonic() - t0
    for e in episodes:
        pool.release(e.sandbox)
        e.traj.tokens = e.tokens
        e.traj.info["time"] = {"generate_s": gen_s, "env_s": env_s}
        save_json(e.traj, e.trial_dir / "trajectory.json")
    return [e.traj for e in episodes]


def _act(e: _Episode, text: str, action: Action, sample: Any, cfg: RolloutConfig) -> None:
    anchor = e.anchor
    if action.kind == "command":
        try:
            rec = e.env.step(action.command, action=text)
            obs = format_observation(rec, cfg.obs_chars)
        except ResourceLimit as exc:  # the step ran and is kept; the episode ends
            obs, e.done, e.traj.termination = f"error: {exc}", True, "resource_limit"
        except AgentTimeout as exc:  # the agent's own time is used up
            e.traj.steps.append(Step(index=len(e.traj.steps), action=text))
            obs, e.done, e.traj.termination = f"error: {exc}", True, "agent_timeout"
        except Exception as exc:  # sandbox gone, engine error: not the agent's doing
            e.traj.steps.append(Step(index=len(e.traj.steps), action=text))
            obs, e.done, e.traj.termination = f"error: {exc}", True, "error"
            if is_infra_exception(exc):
                mark_infra(e.traj, exc, f"step {len(e.traj.steps) - 1}")
        step = e.traj.steps[-1]
    else:
        step = Step(index=len(e.traj.steps), action=text, invalid=action.kind == "invalid")
        e.traj.steps.append(step)
        obs = "" if action.kind == "done" else invalid_observation(action)
        if action.kind == "done":
            e.done, e.traj.termination = True, "done"
    step.anchor_obs, step.action_key, step.observation = anchor, action.key, obs
    step.info["finished"] = bool(sample.finished)
    e.anchor = obs


def _verify(e: _Episode, task: Task, instance: int) -> None:
    if is_infra(e.traj):  # the sandbox is gone: nothing to verify
        return
    try:
        e.env.finalize()
        e.traj.verifier = verify_episode(e.sandbox, task, e.traj, e.trial_dir,
                                         instance=instance)
    except Exception as exc:  # a harness crash is an infrastructure failure, not a reward 0
        e.traj.verifier = VerifierReport(reward=0.0, error=f"{type(exc).__name__}: {exc}")
        mark_infra(e.traj, exc, "verification")
