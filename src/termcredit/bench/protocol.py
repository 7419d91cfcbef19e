"""`termcredit bench`: every algorithm from the same starting checkpoint, on the same task
instances, with the same seeds and budgets; periodic greedy evaluation on held-out instances.

Protocol:
1. Warm start: the policy (tiny by default) is fine-tuned on *noisy* demonstrations
   (bench/demos.py) for a fixed number of steps, so its success rate sits inside (0, 1).
   Saved once as ``start/``; every algorithm and seed starts from these weights.
2. OPD teacher: the same architecture fine-tuned longer on *clean* demonstrations
   (``teacher/``); same tokenizer, so its log-probs score the student's exact tokens.
3. Each algorithm x seed trains with identical budgets (steps, group size, rollout limits, lr)
   and no per-algorithm tuning; evaluation before training and every ``eval_every`` steps.
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

from ..tasks import find_tasks
from ..trainer.config import TrainConfig
from ..trainer.policy import load_policy
from ..trainer.sft import sft
from ..trainer.train import Trainer
from .demos import clean_demos, noisy_demos

ALGOS = ["grpo", "gigpo", "adastep", "depgpo", "opd", "depgpo+opd"]
QUICK_TASKS = ["hello-world", "extract-emails", "log-top-errors", "disk-usage-report"]


@dataclass
class BenchConfig:
    tier: str = "quick"
    model: str = "tiny"
    algos: list[str] = field(default_factory=lambda: list(ALGOS))
    tasks: list[str] = field(default_factory=lambda: [f"tasks/{t}" for t in QUICK_TASKS])
    seeds: list[int] = field(default_factory=lambda: [0])
    steps: int = 12
    group_size: int = 4
    lr: float = 2e-5
    eval_every: int = 4
    eval_instances: list[int] = field(default_factory=lambda: [1000, 1001])
    warm_steps: int = 120
    teacher_steps: int = 300
    sft_lr: float = 2e-3
    rollout: dict[str, Any] = field(default_factory=lambda: {
        "max_turns": 3, "max_new_tokens": 64, "command_timeout": 10.0, "obs_chars": 300})
    device: str = "cpu"


TIERS: dict[str, dict[str, Any]] = {
    "quick": {},  # finishes on 2 CPU cores in about 20-30 minutes
    "full": {"seeds": [0, 1, 2], "steps": 60, "group_size": 8, "eval_every": 10,
             "tasks": [], "eval_instances": [1000, 1001, 1002, 1003]},  # [] = whole suite
    "micro": {"model": "micro", "steps": 2, "group_size": 2, "eval_every": 2, "warm_steps": 30,
              "teacher_steps": 40, "tasks": ["tasks/hello-world"],
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


def _warm(cfg: BenchConfig, out: Path, console: Console) -> tuple[str, str]:
    """The shared starting checkpoint (noisy SFT) and the OPD teacher (clean SFT)."""
    tasks = find_tasks(cfg.tasks)
    rng = random.Random(0)
    noisy = [d for t in tasks for d in noisy_demos(t, rng)]
    clean = [d for t in tasks for d in clean_demos(t)]
    paths = {}
    for name, demos, steps in (("start", noisy, cfg.warm_steps),
                               ("teacher", clean, cfg.teacher_steps)):
        dest = out / name
        if not (dest / "config.json").is_file():
            torch.manual_seed(0)
            policy = load_policy(cfg.model, device=cfg.device, seed=0)
            t0 = time.monotonic()
            losses = sft(policy, demos, steps=steps, lr=cfg.sft_lr, batch_size=8, seed=0)
            policy.save(dest)
            (dest / "sft.json").write_text(json.dumps({
                "demos": len(demos), "steps": steps, "final_loss": losses[-1],
                "seconds": time.monotonic() - t0}, indent=2))
            console.print(f"[dim]{name}: SFT on {len(demos)} demos, {steps} steps, "
                          f"final loss {losses[-1]:.3f}")
        paths[name] = str(dest)
    return paths["start"], paths["teacher"]


def run_bench(cfg: BenchConfig, out: Path | None = None,
              console: Console | None = None) -> Path:
    console = console or Console(stderr=True, soft_wrap=True)
    out = out or Path("runs") / f"bench-{datetime.now():%Y%m%d-%H%M%S}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(asdict(cfg), indent=2))
    t0 = time.monotonic()
    start, teacher = _warm(cfg, out, console)
    warm_s = time.monotonic() - t0
    for seed in cfg.seeds:
        for algo in cfg.algos:
            run_dir = out / algo.replace("+", "_plus_") / f"seed-{seed}"
            if (run_dir / "done.json").is_file():
                continue  # a rerun of the same bench directory resumes where it stopped
            tcfg = TrainConfig(
                algo=algo, model=start, tasks=list(cfg.tasks), group_size=cfg.group_size,
                steps=cfg.steps, lr=cfg.lr, seed=seed, device=cfg.device,
                teacher=teacher if "opd" in algo.split("+") else None,
                eval_every=cfg.eval_every, eval_instances=list(cfg.eval_instances),
                eval_at_start=True, checkpoint_every=cfg.steps, rollout=dict(cfg.rollout))
            console.print(f"[bold]{algo}[/] seed {seed}")
            t1 = time.monotonic()
            Trainer(tcfg, run_dir, resume=(run_dir / "checkpoints").is_dir(),
                    console=console).run()
            (run_dir / "done.json").write_text(json.dumps({"seconds": time.monotonic() - t1}))
    from .report import write_report

    write_report(out, cfg, warm_seconds=warm_s)
    latest = out.parent / "bench-latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(out.name)
    return out
