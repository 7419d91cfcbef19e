"""Batched multi-turn rollouts: G episodes of one task from one initial state, in G sandboxes
(a group), or several groups and tasks at once (an update's groups, an evaluation batch); one
generation call per turn for all live episodes.

Each episode is a harness ``TextEnv`` over an ``Episode`` (the one lifecycle `termcredit run`
uses, so a rollout's trial directory has the same files as a run's trial): it parses each
reply, runs the command and records the step, every kind of step in ``steps.jsonl`` too. This
module owns only the tokens.

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

from ..harness.actions import SYSTEM_PROMPT
from ..harness.episode import Episode, task_spec
from ..harness.hooks import NO_HOOKS, Hooks
from ..harness.textenv import TextEnv
from ..records import TokenLayout, Trajectory
from ..sandbox import SandboxPool
from ..tasks import Task
from .menu import Menu, task_menu


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
    tracer: str = "strace"  # the resolved backend (the trainer sets it: tracer/choice.py)
    # sample only the task's declared commands and `done` (menu.py): failures become choices
    menu: bool = False


@dataclass
class _Turns:
    """The token side of one episode."""

    env: TextEnv
    tokens: TokenLayout
    max_turns: int
    menu: Menu | None = None

    @property
    def traj(self) -> Trajectory:
        return self.env.trajectory


def _append(tok: TokenLayout, ids: list[int], logprobs: list[float] | None) -> tuple[int, int]:
    start = len(tok.token_ids)
    tok.token_ids.extend(ids)
    tok.loss_mask.extend([1 if logprobs is not None else 0] * len(ids))
    tok.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))
    return start, len(tok.token_ids)


@dataclass
class Job:
    """One episode to roll out: the task, its image and instance, its trial directory, and its
    turn budget (None: the rollout config's ``max_turns``)."""

    task: Task
    image: str
    instance: int
    out: Path
    max_turns: int | None = None


def rollout_group(policy: Any, layout: Any, task: Task, image: str, pool: SandboxPool,
                  group_size: int, out_dir: Path, cfg: RolloutConfig, *, instance: int = 0,
                  policy_version: int = 0, seed: int | None = None,
                  before_finish: Callable[[list[Trajectory]], None] | None = None,
                  hooks: Hooks = NO_HOOKS) -> list[Trajectory]:
    """``group_size`` episodes of one task from one initial state (``out_dir/g<k>``)."""
    jobs = [Job(task, image, instance, out_dir / f"g{k}") for k in range(group_size)]
    return rollout_episodes(policy, layout, jobs, pool, cfg, policy_version=policy_version,
                            seed=seed, before_finish=before_finish, hooks=hooks)


def rollout_episodes(policy: Any, layout: Any, jobs: list[Job], pool: SandboxPool,
                     cfg: RolloutConfig, *, policy_version: int = 0, seed: int | None = None,
                     before_finish: Callable[[list[Trajectory]], None] | None = None,
                     hooks: Hooks = NO_HOOKS) -> list[Trajectory]:
    """Run the jobs' episodes together (several groups, several tasks: one generation call
    per turn for all live episodes, which costs little more than one for a single group);
    returns their trajectories in the jobs' order (verified, files on disk). ``before_finish``
    sees the trajectories once the turns are over, before verification and before anything is
    written (e.g. the trainer's teacher scoring), so each trajectory is written once,
    complete. ``hooks``: the trainer's (``depgpo.trial_hook.default_hooks``), passed to each
    episode."""
    specs = [task_spec(j.task, j.image, tracer=cfg.tracer) for j in jobs]
    pool.plan(specs)
    t_env = time.monotonic()
    prompts: dict[str, list[int]] = {}
    menus: dict[Path, Menu] = {}
    episodes: list[_Turns] = []
    for job, spec in zip(jobs, specs):
        ep = Episode(job.task, pool, spec, job.out, agent=str(policy), instance=job.instance,
                     command_timeout=cfg.command_timeout,
                     info={"policy_version": policy_version}, hooks=hooks)
        env = TextEnv(ep, obs_chars=cfg.obs_chars)
        if job.task.instruction not in prompts:
            prompts[job.task.instruction] = layout.prompt_ids(cfg.system_prompt,
                                                              job.task.instruction)
        tok = TokenLayout()
        _append(tok, list(prompts[job.task.instruction]), None)
        ep.traj.tokens = tok
        if cfg.menu and job.task.path not in menus:
            menus[job.task.path] = task_menu(layout, job.task)
        episodes.append(_Turns(env, tok, max_turns=job.max_turns or cfg.max_turns,
                               menu=menus.get(job.task.path)))
    finished = False
    try:
        with ThreadPoolExecutor(max_workers=min(8, len(episodes)) or 1) as threads:
            # a sandbox that failed to start: an infrastructure failure, already done
            list(threads.map(lambda e: e.env.init(), episodes))
        trajs = _turns(policy, layout, episodes, cfg, seed, before_finish,
                       time.monotonic() - t_env)
        finished = True
    finally:
        if not finished:  # interrupted or crashed mid-group: keep what ran, free the sandboxes
            for e in episodes:
                e.env.abandon()
    return trajs


def _turns(policy: Any, layout: Any, episodes: list[_Turns], cfg: RolloutConfig,
           seed: int | None, before_finish: Callable[[list[Trajectory]], None] | None,
           start_s: float) -> list[Trajectory]:
    """The turns of the episodes (one generation call each), then the episodes finished."""
    gen_s, env_s = 0.0, start_s
    with ThreadPoolExecutor(max_workers=len(episodes)) as threads:
        for _turn in range(max(e.max_turns for e in episodes)):
            live = [e for e in episodes if not e.env.done]
            if not live:
                break
            t0 = time.monotonic()
            samples = policy.generate([e.tokens.token_ids for e in live],
                                      max_new_tokens=cfg.max_new_tokens,
                                      temperature=cfg.temperature, top_p=cfg.top_p,
                                      seed=None if seed is None else seed * 1009 + _turn,
                                      **({"menus": [e.menu for e in live]} if cfg.menu else {}))
            gen_s += time.monotonic() - t0
            t0 = time.monotonic()
            replies = []
            for e, s in zip(live, samples):
                span = _append(e.tokens, list(s.token_ids), list(s.logprobs))
                e.tokens.step_spans.append(list(span))
                replies.append((e, policy.tokenizer.decode(s.token_ids, skip_special_tokens=True),
                                s))
            observed = list(threads.map(
                lambda r: r[0].env.act(r[1], finished=bool(r[2].finished)), replies))
            for (e, _text, s), (obs, done) in zip(replies, observed):
                if done:
                    continue
                # cut off by max_new_tokens: the harness closes the turn (mask 0)
                obs_ids = layout.observation_ids(obs, after_truncated=not s.finished)
                _append(e.tokens, obs_ids, None)
                if len(e.tokens.token_ids) + cfg.max_new_tokens > cfg.max_total_tokens:
                    e.env.end("token_budget")
                elif _turn + 1 >= e.max_turns:
                    e.env.end("max_turns")
            env_s += time.monotonic() - t0
        for e in episodes:
            e.env.end("max_turns")  # no-op for one that already ended
            e.traj.info["time"] = {"generate_s": gen_s, "env_s": env_s}
        trajs = [e.traj for e in episodes]
        if before_finish is not None:
            before_finish(trajs)
        list(threads.map(lambda e: e.env.close(), episodes))
    return trajs

