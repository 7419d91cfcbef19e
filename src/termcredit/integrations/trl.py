"""GRPO in TRL's ``GRPOTrainer`` with termcredit's episodes and advantage estimators.

    envs = HarnessEnvs(run_id="trl-run")
    rollout = TermcreditRollout([load_task("tasks/hello-world")], envs, "runs/trl")
    trainer = TermcreditGRPOTrainer(model=model, processing_class=tok, args=GRPOConfig(...),
                                    train_dataset=task_dataset(rollout.tasks), rollout=rollout,
                                    estimator="depgpo")
    trainer.train()

TRL samples ``num_generations`` rows per prompt (consecutive, a group); ``TermcreditRollout``
is its ``rollout_func``: each row is a multi-turn episode in its own sandbox, token-exact (the
sampled ids as sampled, the observations' ids masked out of the loss with TRL's ``env_mask``),
its verifier's reward handed to TRL as the ``reward`` column (``episode_reward`` reads it).
``TermcreditGRPOTrainer`` then replaces TRL's one-advantage-per-row with the estimator's
per-token advantages of each group (TRL's loss takes a [B, T] advantage as it is).
Needs the ``trl`` extra (TRL 1.16.0)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from datasets import Dataset
from trl import GRPOTrainer

from .. import estimators
from ..harness.infra import is_infra
from ..records import Trajectory
from ..tasks import Task
from ..harness.actions import SYSTEM_PROMPT
from ..trainer.chat import ChatLayout, LayoutBuilder
from ..trainer.policy import Policy, Sample
from .base import HarnessEnvs, HarnessEpisode, Outcome

# (prompts as token-id lists, max_new_tokens, temperature) -> one Sample per prompt
Sampler = Callable[[list[list[int]], int, float], list[Sample]]


def task_dataset(tasks: Sequence[Task]) -> Dataset:
    """One row per task, its instruction as the prompt (the rollout finds the task by it)."""
    return Dataset.from_dict({"prompt": [t.instruction for t in tasks]})


def episode_reward(completions: list[Any], reward: list[float], **_kw: Any) -> list[float]:
    """TRL reward function: the verifier's training reward the rollout recorded per row."""
    return [float(r) for r in reward]


def policy_sampler(trainer: Any) -> Sampler:
    """Sample with the model TRL is training (termcredit's batched sampler with a KV cache)."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    policy = Policy(model, trainer.processing_class)
    return lambda prompts, n, temp: policy.generate(prompts, max_new_tokens=n, temperature=temp)


class TermcreditRollout:
    """TRL's ``rollout_func``: one episode per prompt row; ``last`` keeps the latest batch's
    trajectories (token layouts attached) for the trainer's advantages."""

    def __init__(self, tasks: Sequence[Task], envs: HarnessEnvs, out_dir: str | Path, *,
                 max_new_tokens: int = 48, temperature: float = 1.0,
                 system_prompt: str = SYSTEM_PROMPT,
                 sampler: Callable[[Any], Sampler] = policy_sampler):
        self.tasks = list(tasks)
        self.by_prompt = {t.instruction: t for t in self.tasks}
        self.envs, self.out_dir = envs, Path(out_dir)
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self.system_prompt, self.sampler = system_prompt, sampler
        self.calls = 0
        self.last: list[Trajectory] = []
        self.last_prompt_lens: list[int] = []

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list]:
        sample = self.sampler(trainer)
        layout = ChatLayout(trainer.processing_class)
        batch = self.out_dir / f"batch-{self.calls:04d}"
        self.calls += 1
        eps = [self.envs.open(self.by_prompt[_text(p)], batch / f"row{k}")
               for k, p in enumerate(prompts)]
        try:
            builders, outcomes = self._play(eps, sample, layout, trainer.processing_class)
        except BaseException:  # interrupted or crashed: keep the steps, free the sandboxes
            for e in eps:
                e.episode.abandon()
            raise
        # the first reply starts right after the prompt (no reply: all of it is the prompt)
        n_prompt = [b.layout.step_spans[0][0] if b.layout.step_spans else len(b.token_ids)
                    for b in builders]
        for b, n in zip(builders, n_prompt):
            if len(b.token_ids) == n:  # no sandbox, no reply: TRL needs a token (no loss on it)
                b.add_observation([layout.end_id])
        self.last = [o.trajectory for o in outcomes]
        self.last_prompt_lens = n_prompt
        lays = [b.layout for b in builders]
        return {"prompt_ids": [lay.token_ids[:n] for lay, n in zip(lays, n_prompt)],
                "completion_ids": [lay.token_ids[n:] for lay, n in zip(lays, n_prompt)],
                "logprobs": [lay.logprobs[n:] for lay, n in zip(lays, n_prompt)],
                "env_mask": [lay.loss_mask[n:] for lay, n in zip(lays, n_prompt)],
                "reward": [o.reward for o in outcomes]}

    def _play(self, eps: list[HarnessEpisode], sample: Sampler, layout: ChatLayout,
              tokenizer: Any) -> tuple[list[LayoutBuilder], list[Outcome]]:
        """The episodes' turns, one generation call each for the live ones, then finished."""
        with ThreadPoolExecutor(max_workers=min(8, len(eps)) or 1) as threads:
            firsts = list(threads.map(lambda e: e.start(), eps))
            builders = [LayoutBuilder(layout.prompt_ids(self.system_prompt, f)) for f in firsts]
            while live := [(e, b) for e, b in zip(eps, builders) if not e.done]:
                samples = sample([b.token_ids for _e, b in live], self.max_new_tokens,
                                 self.temperature)
                replies = [(e, b, s, tokenizer.decode(s.token_ids, skip_special_tokens=True))
                           for (e, b), s in zip(live, samples)]
                list(threads.map(lambda r: _turn(layout, *r), replies))
            outcomes = list(threads.map(lambda eb: eb[0].finish(eb[1].layout),
                                        zip(eps, builders)))
        return builders, outcomes


def _text(prompt: Any) -> str:
    """A dataset prompt: plain text, or a conversation whose last message is the task's."""
    return prompt if isinstance(prompt, str) else prompt[-1]["content"]


def _turn(layout: ChatLayout, ep: HarnessEpisode, b: LayoutBuilder, s: Sample, text: str) -> None:
    """One reply: its ids as sampled (loss), run; the observation's ids follow (no loss) unless
    the episode is over."""
    b.add_action(s.token_ids, s.logprobs)
    obs, done = ep.act(text, truncated=not s.finished)
    if not done:
        b.add_observation(layout.observation_ids(obs, after_truncated=not s.finished))


def completion_advantages(trajs: Sequence[Trajectory], estimator: Any, group_size: int,
                          prompt_lens: Sequence[int], width: int) -> torch.Tensor:
    """The estimator's per-token advantages of each group of ``group_size`` consecutive rows,
    cut to the completion (after each row's prompt) and right-padded with 0 to ``width``:
    TRL's [B, T] advantage. As in termcredit's trainer, an infrastructure failure is no part
    of its group's baseline and gets 0, and so does a group that keeps fewer than two."""
    if len(trajs) % group_size:
        raise ValueError(f"{len(trajs)} rows are not whole groups of {group_size}")
    out = torch.zeros(len(trajs), width)
    for g in range(0, len(trajs), group_size):
        rows = list(range(g, g + group_size))
        kept = [i for i in rows if not is_infra(trajs[i])]
        if len(kept) < 2 and len(kept) < group_size:
            continue
        res = estimator([trajs[i] for i in kept])
        for i, adv in zip(kept, res.advantages):
            tail = adv[prompt_lens[i]:]
            out[i, :len(tail)] = torch.tensor(tail[:width], dtype=out.dtype)
    return out


class TermcreditGRPOTrainer(GRPOTrainer):
    """TRL's GRPO trainer whose advantages are a termcredit estimator's (``estimator``: a spec
    such as ``"depgpo"``, ``"gigpo"``, ``"depgpo+grpo"``, or a built estimator). Estimators that
    need more than the rollout records (a teacher's log-probs) are not supported here.
    ``used_advantages`` keeps each generation batch's [B, T] tensor as handed to the loss."""

    def __init__(self, *args: Any, rollout: TermcreditRollout, estimator: Any = "depgpo",
                 reward_funcs: Any = None, **kw: Any):
        self.estimator = estimators.build(estimator) if isinstance(estimator, str) else estimator
        if getattr(self.estimator, "needs", None):
            raise ValueError(f"estimator needs {sorted(self.estimator.needs)}: not available "
                             "in the TRL adapter")
        self.rollout = rollout
        self.used_advantages: list[torch.Tensor] = []
        super().__init__(*args, reward_funcs=reward_funcs or [episode_reward],
                         rollout_func=rollout, **kw)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        out = super()._generate_and_score_completions(inputs)
        adv = completion_advantages(self.rollout.last, self.estimator, self.num_generations,
                                    self.rollout.last_prompt_lens, out["completion_ids"].shape[1])
        out["advantages"] = adv.to(out["completion_ids"].device)
        self.used_advantages.append(out["advantages"].clone())
        return out
