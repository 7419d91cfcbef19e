"""`termcredit train`: rollouts in sandboxes -> estimator -> PPO-style update, step by step.

Each step: one task (round robin), one instance, G episodes from the same initial state; the
estimator from the registry turns the group into per-token advantages; the loss updates the
weights. One update per rollout batch, so the behaviour log-probs recorded at sampling time are
the old log-probs (prime-rl / ART style; `recompute_old_logprobs = true` re-scores them with a
no-grad forward instead, at the cost of one more forward). Everything lands in the run directory:
config.toml, metrics.jsonl, tb/ (TensorBoard), checkpoints/, rollouts/step-N/<task>/g<k>/.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from .. import estimators
from ..depgpo.trial_hook import default_hooks
from ..harness.infra import is_infra
from ..estimators.group import is_zero_advantage, rewards_tied
from ..jsonl import append_jsonl, read_jsonl, write_jsonl
from ..records import Trajectory
from ..harness.backend import make_backend
from ..sandbox import ImageMap
from ..tasks import Task, find_tasks
from ..tracer.choice import for_backend, resolve_tracer
from .checkpoint import latest_checkpoint, load_state, save_checkpoint
from .config import TrainConfig, dump_config
from .credit_metrics import credit_metrics, credit_metrics_for
from .loss import LossConfig
from .policy import load_policy
from .providers import providers_for
from .update import make_optimizer, ppo_update
from .rollout import Job, rollout_episodes


EVAL_SEED_OFFSET = 7919  # evaluation samples never share a seed with that step's rollouts
EVAL_FINAL = "eval-final.jsonl"  # the last evaluation's episodes, one JSON line each


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def step_groups(tasks: list[Task], step: int, tasks_per_step: int,
                train_instances: int) -> list[tuple[Task, int]]:
    """The (task, instance) of each group of update ``step``: ``tasks_per_step`` tasks round
    robin (0: every task), each task walking through its training instances in turn."""
    n = len(tasks)
    k = tasks_per_step or n
    groups = []
    for slot in range(step * k, step * k + k):
        task = tasks[slot % n]
        groups.append((task, (slot // n) % train_instances if task.parametrized else 0))
    return groups


def _mean_stats(stats: list[dict[str, float]]) -> dict[str, float]:
    """Each estimator statistic averaged over the step's groups (a key a group lacks: 0)."""
    keys = sorted({k for st in stats for k in st})
    return {k: _mean([st.get(k, 0.0) for st in stats]) for k in keys}


def select_group(trajs: list[Trajectory], integrity: str = "zero") -> list[Trajectory]:
    """The trajectories of a group that train. Infrastructure failures never do (they say
    nothing about the policy). ``"zero"``: all the others (a flagged one with reward 0, see
    estimators.training_reward); ``"mask"``: the unflagged ones only, so a flagged episode
    gives neither baseline nor gradient."""
    if integrity not in estimators.INTEGRITY_POLICIES:
        raise ValueError(f"integrity policy must be one of "
                         f"{', '.join(estimators.INTEGRITY_POLICIES)}, not {integrity!r}")
    valid = [t for t in trajs if not is_infra(t)]
    if integrity == "mask":
        return [t for t in valid if not estimators.is_flagged(t)]
    return valid


def group_credit(group: list[Trajectory], kept: list[Trajectory], estimator: Any,
                 integrity: str = "zero", dynamic_sampling: bool = False,
                 ) -> tuple[list[float], estimators.EstimatorResult, bool]:
    """Training rewards of ``kept`` (``select_group(group, integrity)``), the estimator's
    advantages for them, and whether the update is skipped: DAPO's dynamic sampling skips a
    group whose rewards are all equal and whose advantages are all zero (an OPD term or a
    GiGPO penalty still teaches when rewards tie); a group that masking left with fewer than
    two trajectories is skipped too (zero advantages: nothing to compare with)."""
    rewards = [estimators.training_reward(t, integrity) for t in kept]
    if len(kept) >= 2 or (kept and len(kept) == len(group)):
        res = estimator(kept)
        silent = is_zero_advantage(a for adv in res.advantages for a in adv)
        return rewards, res, dynamic_sampling and rewards_tied(rewards) and silent
    zeros = [[0.0] * (len(t.tokens.token_ids) if t.tokens else len(t.steps)) for t in kept]
    return rewards, estimators.EstimatorResult(advantages=zeros), True


def integrity_counts(trajs: list[Trajectory]) -> dict[str, float]:
    """Per-step metrics: episodes with recorded tampering, ones the verifier's audit found
    suspect (before any masking), and infrastructure failures (always left out)."""
    return {
        "infra_episodes": float(sum(is_infra(t) for t in trajs)),
        "flagged_episodes": float(sum(estimators.is_flagged(t) for t in trajs)),
        "suspect_episodes": float(sum(bool(t.verifier and t.verifier.suspect) for t in trajs)),
    }


class Trainer:
    def __init__(self, cfg: TrainConfig, run_dir: Path, *, resume: bool = False,
                 console: Console | None = None):
        self.cfg, self.run_dir = cfg, run_dir
        self.console = console or Console(stderr=True, soft_wrap=True)
        self.tracer, note = resolve_tracer(cfg.tracer)  # ebpf where it cannot run: an error, now
        self.tracer, note = for_backend(cfg.tracer, self.tracer, note,
                                        cfg.backend_settings().name)
        if note:
            self._print_dim(note)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.toml").write_text(dump_config(cfg))
        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)
        self.tasks: list[Task] = find_tasks(cfg.tasks)
        ckpt = latest_checkpoint(run_dir) if resume else None
        self.policy = load_policy(str(ckpt / "model") if ckpt else cfg.model, device=cfg.device,
                                  seed=cfg.model_seed, generation=cfg.generation)
        self.layout = self.policy.chat()
        if ckpt is None and cfg.sft_data:
            self._warm_start(cfg.sft_data)
        self.loss_cfg = LossConfig(**cfg.loss)
        self.ref = (load_policy(cfg.model, device=cfg.device, seed=cfg.model_seed)
                    if self.loss_cfg.kl_coef else None)
        if self.ref is not None and ckpt is None and cfg.sft_data:  # the KL anchors the SFT start
            self.ref.model.load_state_dict(self.policy.model.state_dict())
        self.estimator = estimators.build(cfg.algo, **cfg.estimator)
        # what the estimator reads beyond the rollouts (a teacher's log-probs, ...)
        self.providers = providers_for(self.estimator.needs, cfg, self.policy)
        # no weight decay by default: with zero advantages the weights must not move
        self.opt = make_optimizer(cfg.optimizer, self.policy.model.parameters(), cfg.lr,
                                  cfg.weight_decay)
        self.start = 0
        if ckpt is not None:
            self.start = load_state(ckpt, self.opt)["step"] + 1
            self._truncate_metrics(self.start)
        self.image_map = ImageMap.load()
        self._images: dict[tuple[str, int], str] = {}
        self.run_id = f"train-{run_dir.name}-{secrets.token_hex(3)}"
        # where the sandboxes run ([rollout] backend): this engine, or a Ray cluster's nodes
        self.backend = make_backend(cfg.backend_settings(), self.run_id, ahead=cfg.group_size,
                                    log=self._print_dim)
        self.pool = self.backend.pool
        try:
            self.backend.gc()
            self.tb = self._tensorboard()
        except BaseException:
            self.backend.close()
            raise

    def _warm_start(self, path: str) -> None:
        """SFT on ``path`` (``sft_data``) before any update; ``sft.json`` records it."""
        from .sft import load_sft_jsonl, sft

        demos = load_sft_jsonl(path)
        if not demos:
            raise ValueError(f"{path}: no demonstrations (sft_data)")
        losses = sft(self.policy, demos, steps=self.cfg.sft_steps, lr=self.cfg.sft_lr,
                     seed=self.cfg.seed)
        (self.run_dir / "sft.json").write_text(json.dumps(
            {"sft_data": path, "demos": len(demos), "steps": self.cfg.sft_steps,
             "final_loss": losses[-1]}, indent=2))
        self._print_dim(f"SFT warm start on {len(demos)} demos, {self.cfg.sft_steps} steps, "
                        f"final loss {losses[-1]:.3f}")

    # ------------------------------------------------------------------ plumbing
    def _print_dim(self, message: str) -> None:
        self.console.print(Text(message, style="dim"))  # image names, paths: text, not markup

    def _tensorboard(self) -> Any:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # tensorboard not installed: metrics.jsonl still has everything
            return None
        return SummaryWriter(str(self.run_dir / "tb"))

    def _truncate_metrics(self, start: int) -> None:
        path = self.run_dir / "metrics.jsonl"
        if path.exists():  # the killed run may have died in the middle of its last line
            keep = [r for r in read_jsonl(path, torn_tail=True) if r.get("step", -1) < start]
            write_jsonl(path, keep, ascii=True)

    def image(self, task: Task, instance: int) -> str:
        key = (task.name, instance if task.parametrized else 0)
        if key not in self._images:
            self._images[key] = self.backend.image(task, key[1], image_map=self.image_map)
        return self._images[key]

    def _log(self, row: dict[str, Any]) -> None:
        append_jsonl(self.run_dir / "metrics.jsonl", row, ascii=True)
        if self.tb is not None:
            for k, v in row.items():
                if isinstance(v, (int, float)) and k != "step":
                    self.tb.add_scalar(k, v, row["step"])
            self.tb.flush()

    # ------------------------------------------------------------------ one step
    def job(self, task: Task, instance: int, step: int, k: int, where: str = "rollouts") -> Job:
        """Episode ``k`` of ``task``'s instance at ``step``: its trial directory is
        ``<where>/step-N/<task>-i<instance>/g<k>``; its turn budget the task's own, if set."""
        label = f"step-{step:06d}" if step >= 0 else "step-start"
        return Job(task, self.image(task, instance), instance,
                   self.run_dir / where / label / f"{task.name}-i{instance}" / f"g{k}",
                   self.cfg.turn_budget.get(task.path.name))

    def rollout(self, jobs: list[Job], step: int, *, temperature: float | None = None,
                seed_offset: int = 0,
                before_finish: Callable[[list[Trajectory]], None] | None = None,
                ) -> list[Trajectory]:
        """The jobs' episodes, generated together; trajectories in the jobs' order."""
        rcfg = self.cfg.rollout_config()
        rcfg.tracer = self.tracer
        if temperature is not None:
            rcfg.temperature = temperature
        self.policy.model.eval()
        return rollout_episodes(self.policy, self.layout, jobs, self.pool, rcfg,
                                policy_version=step,
                                seed=self.cfg.seed * 100003 + step + seed_offset,
                                before_finish=before_finish, hooks=default_hooks())

    def prepare(self, group: list[Trajectory]) -> None:
        """What the loss and the estimator need beyond the rollout, added to each trajectory
        before it is verified and written (once, complete): π_old when sampling changed the
        distribution, then every provider of the estimator's needs (OPD's KL reads the same
        π_old). Episodes the sandbox lost are left alone: they never train."""
        live = [t for t in group if not is_infra(t)]
        if not live:
            return
        self.score_old(live)
        for provide in self.providers:
            provide(live)

    def train_step(self, step: int) -> dict[str, Any]:
        """Every group of the step rolled out, credited by the estimator group by group, then
        one update on all the groups that were not skipped."""
        cfg = self.cfg
        plan = step_groups(self.tasks, step, cfg.tasks_per_step, cfg.train_instances)
        g = cfg.group_size
        t0 = time.monotonic()
        trajs = self.rollout([self.job(task, inst, step, k) for task, inst in plan
                              for k in range(g)], step, before_finish=self.prepare)
        groups = [trajs[i * g:(i + 1) * g] for i in range(len(plan))]
        t1 = time.monotonic()
        rewards, flat, stats = [], [], []
        train_trajs, train_adv, skipped, zero_groups, n_kept = [], [], 0, 0, 0
        for group in groups:
            kept = select_group(group, cfg.integrity)  # "mask": flagged episodes are dropped
            n_kept += len(kept)
            g_rewards, res, g_skipped = group_credit(group, kept, self.estimator,
                                                     cfg.integrity, cfg.dynamic_sampling)
            g_flat = [a for adv, t in zip(res.advantages, kept)
                      for a, m in zip(adv, t.tokens.loss_mask) if m]
            rewards += g_rewards
            flat += g_flat
            stats.append(res.stats)
            zero_groups += is_zero_advantage(g_flat)
            skipped += g_skipped
            if not g_skipped:
                train_trajs += kept
                train_adv += res.advantages
        every = [t for g in groups for t in g]
        metrics = credit_metrics_for(every, self.estimator)  # for every algorithm alike
        t2 = time.monotonic()
        upd = self.update(train_trajs, train_adv) if train_trajs else {}
        t3 = time.monotonic()
        return {
            "step": step, "task": ",".join(t.name for t, _ in plan), "instance": plan[0][1],
            "groups": len(groups),
            "reward_mean": _mean(rewards),
            "reward_std": float(torch.tensor(rewards).std(unbiased=False)) if rewards else 0.0,
            "success_rate": _mean([float(r >= 1.0) for r in rewards]),
            "zero_advantage_group": zero_groups / len(groups),
            "adv_mean": _mean(flat), "adv_abs_mean": _mean([abs(a) for a in flat]),
            "tokens": sum(len(t.tokens.token_ids) for t in every),
            "action_tokens": len(flat), "steps_per_episode": _mean([len(t.steps) for t in every]),
            "invalid_actions": sum(s.invalid for t in every for s in t.steps),
            "skipped_update": skipped / len(groups),
            **integrity_counts(every),
            "masked_episodes": float(len(every) - n_kept),
            **{f"estimator/{k}": v for k, v in _mean_stats(stats).items()},
            **metrics,
            **upd,
            "time/rollout_s": t1 - t0, "time/credit_s": t2 - t1, "time/update_s": t3 - t2,
        }

    def score_old(self, group: list[Trajectory]) -> None:
        """π_old for the loss's ratio and OPD's KL: the behaviour log-probs are of the sampling
        distribution (logits / temperature, top-p renormalised, menu-masked), which is the
        policy's own only at temperature 1 without top-p and without a menu. Otherwise (or when
        asked) re-score the sampled ids with the policy as it is before this update, once, for
        both."""
        rc = self.cfg.rollout_config()
        if not (self.cfg.recompute_old_logprobs or rc.temperature != 1.0 or rc.top_p < 1.0
                or rc.menu):
            return
        with torch.no_grad():
            scored = self.policy.score([t.tokens.token_ids for t in group],
                                       [t.tokens.loss_mask for t in group])
        for t, lp in zip(group, scored):
            t.tokens.old_logprobs = list(lp)

    def update(self, group: list[Trajectory], advantages: list[list[float]]) -> dict[str, float]:
        cfg, pol = self.cfg, self.policy
        seqs = [t.tokens.token_ids for t in group]
        masks = [t.tokens.loss_mask for t in group]
        old = [t.tokens.old_logprobs or t.tokens.logprobs for t in group]
        ref = self.ref.score(seqs, masks) if self.ref is not None else None
        return ppo_update(pol, self.opt, seqs, masks, advantages, old, ref, self.loss_cfg,
                          micro_batch=cfg.micro_batch, max_grad_norm=cfg.max_grad_norm)

    def evaluate(self, step: int, out: Path | None = None) -> dict[str, float]:
        """Success on held-out instances (parametrised tasks) of every task: greedy pass@1 by
        default, or ``eval_samples`` episodes per instance at ``eval_temperature``, each task's
        generated together. One JSON line per episode goes to ``out``
        (default ``eval/step-N.jsonl``): the slot (task, instance, sample), its success, steps
        and action tokens, and whether the sandbox failed (``infra``: no verdict, so it is
        left out of the success rate and of any paired comparison)."""
        cfg, t0 = self.cfg, time.monotonic()
        slots = [(task, inst, k) for task in self.tasks
                 for inst in (cfg.eval_instances if task.parametrized else [0])
                 for k in range(cfg.eval_samples)]
        jobs = [self.job(task, inst, step, k, where="eval") for task, inst, k in slots]
        trajs: list[Trajectory] = []
        for i, task in enumerate(self.tasks):  # one batch per task: on CPU a batch mixing
            # tasks was slower per episode (longer padded prompts, more long samples per step)
            batch = [j for j in jobs if j.task is task]
            trajs += self.rollout(batch, step, temperature=cfg.eval_temperature,
                                  seed_offset=EVAL_SEED_OFFSET + i)
        rows = [{"task": task.path.name, "instance": inst, "sample": k,
                 "success": int(estimators.training_reward(t, cfg.integrity) >= 1),
                 "steps": len(t.steps), "tokens": sum(t.tokens.loss_mask) if t.tokens else 0,
                 "infra": is_infra(t)} for (task, inst, k), t in zip(slots, trajs)]
        out = out or self.run_dir / "eval" / f"step-{step}.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(out, rows, ascii=True)
        scored = [r["success"] for r in rows if not r["infra"]]
        return {"eval/success": _mean(scored), "eval/episodes": float(len(scored)),
                "eval/infra_episodes": float(len(rows) - len(scored)),
                **{f"eval/{k}": v for k, v in credit_metrics(trajs).items()},
                "time/eval_s": time.monotonic() - t0}

    # ------------------------------------------------------------------ the loop
    def run(self) -> Path:
        cfg = self.cfg
        progress = Progress(TextColumn("train {task.fields[algo]}", style="bold", markup=False),
                            BarColumn(),
                            MofNCompleteColumn(), TextColumn("reward {task.fields[reward]:.2f}"),
                            TextColumn("loss {task.fields[loss]:+.4f}"), TimeElapsedColumn(),
                            console=self.console)
        try:
            with progress:
                bar = progress.add_task("train", total=cfg.steps, completed=self.start,
                                        algo=cfg.algo, reward=0.0, loss=0.0)
                if self.start == 0 and cfg.eval_every and cfg.eval_at_start:
                    self._log({"step": -1, **self.evaluate(-1),
                               "time": datetime.now().isoformat(timespec="seconds")})
                for step in range(self.start, cfg.steps):
                    row = self.train_step(step)
                    if cfg.eval_every and (step + 1) % cfg.eval_every == 0:
                        final = step + 1 == cfg.steps
                        row.update(self.evaluate(
                            step, self.run_dir / EVAL_FINAL if final else None))
                    row["time"] = datetime.now().isoformat(timespec="seconds")
                    self._log(row)
                    if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                        save_checkpoint(self.run_dir, step, self.policy, self.opt)
                    progress.update(bar, advance=1, reward=row["reward_mean"],
                                    loss=row.get("loss", 0.0))
        finally:
            self.close()
        return self.run_dir

    def close(self) -> None:
        """Remove the pool's containers and flush TensorBoard (run() does this itself)."""
        self.backend.close()
        if self.tb is not None:
            self.tb.close()
