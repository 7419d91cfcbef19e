"""`termcredit bench`: every algorithm from the same starting checkpoint, on the same task
instances, with the same seeds and budgets; periodic evaluation on held-out instances.

Protocol:
1. Warm start: the policy (tiny by default) is fine-tuned on *noisy* demonstrations
   (bench/demos.py) for a fixed number of steps, so its success rate sits inside (0, 1).
   Saved once as ``start/``; every algorithm and seed starts from these weights.
2. OPD teacher: the same architecture fine-tuned longer on *clean* demonstrations
   (``teacher/``); same tokenizer, so its log-probs score the student's exact tokens.
3. Each algorithm x seed trains with identical budgets (steps, group size, rollout limits, lr)
   and no per-algorithm tuning; evaluation before training (run once per seed and shared:
   same weights, same evaluation seeds) and every ``eval_every`` updates. The quick tier
   measures the success of the sampling policy (``eval_samples`` episodes per held-out
   instance at temperature 1); ``eval_temperature = 0`` gives greedy pass@1.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from .. import estimators
from ..tasks import find_tasks
from ..trainer.config import TrainConfig
from ..trainer.policy import load_policy
from ..trainer.sft import sft
from ..trainer.train import Trainer
from .demos import clean_demos, noisy_demos

ALGOS = ["grpo", "gigpo", "adastep", "depgpo", "opd", "depgpo+opd"]
# short oracles (one or two commands) that the warm-started tiny policy solves sometimes, not always
QUICK_TASKS = ["hello-world", "disk-usage-report", "build-zipapp", "rename-function"]


@dataclass
class BenchConfig:
    tier: str = "quick"
    model: str = "tiny"
    algos: list[str] = field(default_factory=lambda: list(ALGOS))
    tasks: list[str] = field(default_factory=lambda: [f"tasks/{t}" for t in QUICK_TASKS])
    seeds: list[int] = field(default_factory=lambda: [0])
    steps: int = 20
    group_size: int = 8
    lr: float = 1e-4
    eval_every: int = 10
    eval_instances: list[int] = field(default_factory=lambda: [1000, 1001])
    # success of the sampling policy (temperature 1, several episodes per held-out instance):
    # it moves in small steps where greedy pass@1 on a handful of instances jumps 0 <-> 1
    eval_samples: int = 4
    eval_temperature: float = 1.0
    warm_steps: int = 150
    teacher_steps: int = 100
    sft_lr: float = 2e-3
    rollout: dict[str, Any] = field(default_factory=lambda: {
        "max_turns": 3, "max_new_tokens": 128, "command_timeout": 10.0, "obs_chars": 300})
    device: str = "cpu"


TIERS: dict[str, dict[str, Any]] = {
    "quick": {},  # finishes on 2 CPU cores in about 20-30 minutes
    # whole suite ([] = every task whose oracle does not read /solution at run time), longer
    # commands and episodes, three seeds: hours on CPU, meant for a GPU (--device cuda)
    "full": {"seeds": [0, 1, 2], "steps": 120, "group_size": 8, "eval_every": 10,
             "tasks": [], "eval_instances": [1000, 1001, 1002, 1003], "warm_steps": 800,
             "teacher_steps": 800,
             "rollout": {"max_turns": 5, "max_new_tokens": 256, "command_timeout": 20.0,
                         "obs_chars": 600}},
    "micro": {"model": "micro", "steps": 2, "group_size": 2, "eval_every": 2, "warm_steps": 30,
              "teacher_steps": 40, "tasks": ["tasks/hello-world"], "eval_samples": 2,
              "rollout": {"max_turns": 2, "max_new_tokens": 24, "command_timeout": 10.0}},
}


def bench_config(tier: str, **overrides: Any) -> BenchConfig:
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}: choose from {', '.join(TIERS)}")
    data = {**TIERS[tier], **{k: v for k, v in overrides.items() if v is not None}}
    cfg = BenchConfig(tier=tier, **data)
    if not cfg.tasks:
        cfg.tasks = [str(t.path) for t in find_tasks(["tasks"])
                     if "/solution" not in (t.solution_dir / "solve.sh").read_text()]
    return cfg


def _sft_checkpoint(cfg: BenchConfig, dest: Path, demos: list, steps: int,
                    console: Console) -> str:
    if not (dest / "config.json").is_file():
        torch.manual_seed(0)
        policy = load_policy(cfg.model, device=cfg.device, seed=0)
        t0 = time.monotonic()
        losses = sft(policy, demos, steps=steps, lr=cfg.sft_lr, batch_size=8, seed=0)
        policy.save(dest)
        (dest / "sft.json").write_text(json.dumps({
            "demos": len(demos), "steps": steps, "final_loss": losses[-1],
            "seconds": time.monotonic() - t0}, indent=2))
        console.print(f"[dim]{dest.name}: SFT on {len(demos)} demos, {steps} steps, "
                      f"final loss {losses[-1]:.3f}")
    return str(dest)


def _warm(cfg: BenchConfig, out: Path, console: Console) -> tuple[str, str | None]:
    """The shared starting checkpoint (noisy SFT) and, when an algorithm distils, the OPD
    teacher (clean SFT)."""
    tasks = find_tasks(cfg.tasks)
    rng = random.Random(0)
    noisy = [d for t in tasks for d in noisy_demos(t, rng)]
    start = _sft_checkpoint(cfg, out / "start", noisy, cfg.warm_steps, console)
    teacher = None
    if any(estimators.TEACHER_LOGPROBS in estimators.needs(a) for a in cfg.algos):
        clean = [d for t in tasks for d in clean_demos(t)]
        teacher = _sft_checkpoint(cfg, out / "teacher", clean, cfg.teacher_steps, console)
    return start, teacher


def _train_config(cfg: BenchConfig, algo: str, seed: int, start: str,
                  teacher: str | None) -> TrainConfig:
    return TrainConfig(
        algo=algo, model=start, tasks=list(cfg.tasks), group_size=cfg.group_size,
        steps=cfg.steps, lr=cfg.lr, seed=seed, device=cfg.device,
        teacher=teacher if estimators.TEACHER_LOGPROBS in estimators.needs(algo) else None,
        eval_every=cfg.eval_every, eval_instances=list(cfg.eval_instances),
        eval_samples=cfg.eval_samples, eval_temperature=cfg.eval_temperature,
        eval_at_start=False, checkpoint_every=cfg.steps, rollout=dict(cfg.rollout))


def _start_eval(cfg: BenchConfig, out: Path, seed: int, start: str,
                console: Console) -> dict[str, Any]:
    """Evaluation before any update: the same weights and the same evaluation seeds for every
    algorithm, so it is run once per seed and shared (step -1 of each run's metrics)."""
    path = out / "start" / f"eval-seed-{seed}.json"
    if not path.is_file():
        tcfg = _train_config(cfg, "grpo", seed, start, None)
        trainer = Trainer(tcfg, out / "start-eval" / f"seed-{seed}", console=console)
        try:
            row = {"step": -1, **trainer.evaluate(-1),
                   "time": datetime.now().isoformat(timespec="seconds")}
        finally:
            trainer.close()
        path.write_text(json.dumps(row))
        console.print(f"[dim]start: held-out success {row['eval/success']:.3f} (seed {seed})")
    return json.loads(path.read_text())


def run_bench(cfg: BenchConfig, out: Path | None = None,
              console: Console | None = None) -> Path:
    console = console or Console(stderr=True, soft_wrap=True)
    out = out or Path("runs") / f"bench-{datetime.now():%Y%m%d-%H%M%S}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(asdict(cfg), indent=2))
    start, teacher = _warm(cfg, out, console)
    for seed in cfg.seeds:
        start_row = _start_eval(cfg, out, seed, start, console) if cfg.eval_every else None
        for algo in cfg.algos:
            run_dir = out / algo.replace("+", "_plus_") / f"seed-{seed}"
            if (run_dir / "done.json").is_file():
                continue  # a rerun of the same bench directory resumes where it stopped
            resume = (run_dir / "checkpoints").is_dir()
            if start_row is not None and not resume:
                run_dir.mkdir(parents=True, exist_ok=True)
                row = {k: v for k, v in start_row.items() if k != "time/eval_s"}  # counted once
                (run_dir / "metrics.jsonl").write_text(json.dumps(row) + "\n")
            console.print(f"[bold]{algo}[/] seed {seed}")
            t1 = time.monotonic()
            Trainer(_train_config(cfg, algo, seed, start, teacher), run_dir, resume=resume,
                    console=console).run()
            (run_dir / "done.json").write_text(json.dumps({"seconds": time.monotonic() - t1}))
    from .report import write_report

    write_report(out, cfg)
    latest = out.parent / "bench-latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(out.name)
    return out
