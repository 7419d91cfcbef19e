"""Batched multi-turn rollouts: G episodes of one task from one initial state, in G sandboxes,
one generation call per turn for all live episodes.

Each episode is a harness ``Episode`` (the one lifecycle `termcredit run` uses, so a rollout's
trial directory has the same files as a run's trial); this module owns only the tokens.

Token layout: one growing id list per episode; sampled ids are kept exactly as sampled (loss
mask 1, behaviour log-probs), the harness's observation ids are appended with mask 0. Nothing is
ever detokenised and retokenised into the training sequence (re-tokenising a decoded reply can
give other ids than the ones sampled, and the ratio would then compare different tokens).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..harness.agents import AgentTimeout, ResourceLimit
from ..harness.episode import Episode, task_spec
from ..records import Step, TokenLayout, Trajectory
from ..sandbox import SandboxPool
from ..tasks import Task
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
class _Turns:
    """The token side of one episode."""

    ep: Episode
    tokens: TokenLayout
    anchor: str

    @property
    def traj(self) -> Trajectory:
        return self.ep.traj


def _append(tok: TokenLayout, ids: list[int], logprobs: list[float] | None) -> tuple[int, int]:
    start = len(tok.token_ids)
    tok.token_ids.extend(ids)
    tok.loss_mask.extend([1 if logprobs is not None else 0] * len(ids))
    tok.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))
    return start, len(tok.token_ids)


def rollout_group(policy: Any, layout: Any, task: Task, image: str | list[str],
                  pool: SandboxPool, group_size: int, out_dir: Path, cfg: RolloutConfig, *,
                  instance: int | list[int] = 0, policy_version: int = 0,
                  seed: int | None = None,
                  before_finish: Callable[[list[Trajectory]], None] | None = None,
                  ) -> list[Trajectory]:
    """Run ``group_size`` episodes; returns their trajectories (verified, files on disk).
    ``image`` and ``instance`` are one for the whole group (a training group: the same
    initial state) or one per episode (an evaluation batch over held-out instances, generated
    together). ``before_finish`` sees the trajectories once the turns are over, before
    verification and before anything is written (e.g. the trainer's teacher scoring), so each
    trajectory is written once, complete."""
    images = [image] * group_size if isinstance(image, str) else list(image)
    instances = [instance] * group_size if isinstance(instance, int) else list(instance)
    if not len(images) == len(instances) == group_size:
        raise ValueError(f"rollout_group: {group_size} episodes but {len(images)} images and "
                         f"{len(instances)} instances")
    specs = [task_spec(task, im) for im in images]
    pool.plan(specs)
    t_env = time.monotonic()
    prompt = layout.prompt_ids(cfg.system_prompt, task.instruction)
    episodes: list[_Turns] = []
    for k, (spec, inst) in enumerate(zip(specs, instances)):
        ep = Episode(task, pool, spec, out_dir / f"g{k}", agent=str(policy), instance=inst,
                     command_timeout=cfg.command_timeout,
                     info={"policy_version": policy_version})
        tok = TokenLayout()
        _append(tok, list(prompt), None)
        ep.traj.tokens = tok
        ep.start()  # a sandbox that failed to start: an infrastructure failure, already done
        episodes.append(_Turns(ep, tok, anchor=task.instruction))
    start_s = time.monotonic() - t_env
    finished = False
    try:
        trajs = _turns(policy, layout, episodes, cfg, seed, before_finish, start_s)
        finished = True
    finally:
        if not finished:  # interrupted or crashed mid-group: keep what ran, free the sandboxes
            for e in episodes:
                e.ep.abandon()
    return trajs


def _turns(policy: Any, layout: Any, episodes: list[_Turns], cfg: RolloutConfig,
           seed: int | None, before_finish: Callable[[list[Trajectory]], None] | None,
           start_s: float) -> list[Trajectory]:
    """The turns of the group (one generation call each), then its episodes finished."""
    gen_s, env_s = 0.0, start_s
    group_size = len(episodes)
    with ThreadPoolExecutor(max_workers=group_size) as threads:
        for _turn in range(cfg.max_turns):
            live = [e for e in episodes if not e.ep.done]
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
                if e.ep.done:
                    continue
                # cut off by max_new_tokens: the harness closes the turn (mask 0)
                obs_ids = layout.observation_ids(e.traj.steps[-1].observation,
                                                 after_truncated=not s.finished)
                _append(e.tokens, obs_ids, None)
                if len(e.tokens.token_ids) + cfg.max_new_tokens > cfg.max_total_tokens:
                    e.ep.end("token_budget")
            env_s += time.monotonic() - t0
        for e in episodes:
            e.ep.end("max_turns")  # no-op for one that already ended
            e.traj.info["time"] = {"generate_s": gen_s, "env_s": env_s}
        trajs = [e.traj for e in episodes]
        if before_finish is not None:
            before_finish(trajs)
        list(threads.map(lambda e: e.ep.finish(), episodes))
    return trajs


def _act(e: _Turns, text: str, action: Action, sample: Any, cfg: RolloutConfig) -> None:
    anchor, env, traj = e.anchor, e.ep.env, e.traj
    assert env is not None
    if action.kind == "command":
        try:
            rec = env.step(action.command, action=text)
            obs = format_observation(rec, cfg.obs_chars)
        except ResourceLimit as exc:  # the step ran and is kept; the episode ends
            obs = f"error: {exc}"
            e.ep.end("resource_limit")
        except AgentTimeout as exc:  # the agent's own time is used up
            traj.steps.append(Step(index=len(traj.steps), action=text))
            obs = f"error: {exc}"
            e.ep.end("agent_timeout")
        except Exception as exc:  # sandbox gone, engine error: not the agent's doing
            traj.steps.append(Step(index=len(traj.steps), action=text))
            obs = f"error: {exc}"
            e.ep.fail(exc, f"step {len(traj.steps) - 1}", by_agent=True)
        step = traj.steps[-1]
    else:
        step = Step(index=len(traj.steps), action=text, invalid=action.kind == "invalid")
        traj.steps.append(step)
        obs = "" if action.kind == "done" else invalid_observation(action)
        if action.kind == "done":
            e.ep.end("done")
    step.anchor_obs, step.action_key, step.observation = anchor, action.key, obs
    step.info["finished"] = bool(sample.finished)
    e.anchor = obs
