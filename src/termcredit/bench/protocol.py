"""`termcredit bench`: every algorithm from the same starting checkpoint, on the same task
instances, with the same seeds and budgets; periodic evaluation on held-out instances.

Protocol:
1. Warm start: the policy (tiny by default) is fine-tuned on *noisy* demonstrations
   (bench/demos.py) for a fixed number of steps, so its success rate sits inside (0, 1);
   ``warm_demos = "refined"``: on those demonstrations' successful trials run through
   `termcredit refine` instead (bench/warm_refined.py).
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
from rich.text import Text

from .. import estimators
from ..jsonl import write_jsonl
from ..tasks import find_tasks
from ..trainer.config import TrainConfig
from ..trainer.policy import load_policy
from ..trainer.sft import sft
from ..trainer.train import Trainer
from .decoy_demos import decoy_demos, has_decoys
from .demos import clean_demos, noisy_demos, oracle_commands
from .stats import run_dir_name
from .warm_compare import WARM_DEMOS, other_demos

ALGOS = ["grpo", "gigpo", "adastep", "depgpo", "opd", "depgpo+opd"]
# DepGPO's own choices, each switched on its own (issue #16's ablations; DepGPO only)
ABLATIONS = ["depgpo", "depgpo[subtract_min=false]", "depgpo[untraced_weight=0]",
             "depgpo[beta=0]", "depgpo[diff_rewrites=never]"]
# chains of >= 2 dependent commands (a later one consumes a file or value an earlier one
# made) among natural decoys: where credit from what commands did can differ from GRPO's
CREDIT_TASKS = ["patch-port-config", "failing-job-state", "repack-fixed-archive",
                "stage-and-summarize", "restore-newest-backup", "repair-checksum-mismatch"]
TURNS_OVER_ORACLE = 2  # turn budget: the oracle's steps + 2 (room to look around, not to roam)
# seven necessary commands each, shell state (cd, variables) carried between them, orders that
# matter, and declared decoys that break a later step ([metadata.demos]; docs/credit-tier.md)
HORIZON_TASKS = ["close-ledger-period", "render-live-config", "merge-user-lists"]
# the oracle-credit ceiling and the two it bounds: what per-step credit can gain over GRPO
HORIZON_ALGOS = ["grpo", "depgpo", "oracle"]
# the horizon tier's design with every command short (<= 33 characters): on the horizon tier
# per-step credit beat GRPO where failures were choices (close-ledger-period) and lost where
# they were typos in long `sed` lines (render-live-config; docs/credit-tier.md), so here a
# garbled command is rare by construction and a failure is a decoy, an order or an omission
CHOICES_TASKS = ["close-ledger-period", "publish-release", "tally-orders"]
# DepGPO's best shape on the horizon tier and the best oracle weighting there (the ceiling),
# with grpo and plain depgpo (the report's comparisons are built around it)
CHOICES_ALGOS = ["grpo", "depgpo", "oracle[positive=uniform,inside=true]",
                 "depgpo[positive=uniform,negative=faults,inside=true]"]


@dataclass
class BenchConfig:
    tier: str = "quick"
    model: str = "tiny"
    algos: list[str] = field(default_factory=lambda: list(ALGOS))
    tasks: list[str] = field(default_factory=lambda: [f"tasks/{t}" for t in CREDIT_TASKS])
    seeds: list[int] = field(default_factory=lambda: [0])
    steps: int = 20
    group_size: int = 8
    tasks_per_step: int = 0  # 0: every task in every update (one group each)
    turns_over_oracle: int | None = TURNS_OVER_ORACLE  # None: rollout's max_turns for all
    lr: float = 1e-4
    optimizer: str = "adamw"  # TrainConfig.optimizer: adamw | sgd
    max_grad_norm: float = 1.0  # 0: no clipping
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
    backend: str = "local"  # where the sandboxes run: local | ray (harness/backend.py)
    ray_address: str | None = None  # ray: the cluster (None: $RAY_ADDRESS, else the local one)
    # the start policy's demonstrations: "noisy" (demos.py), or "refined": the noisy ones
    # replayed into trials and run through `termcredit refine` (warm_refined.py)
    warm_demos: str = "noisy"
    # the noisy (or decoy) demonstrations replayed in sandboxes first, their observations the
    # commands' real output instead of the synthetic "exit code: 0" (warm_replayed.py)
    replay_demos: bool = False
    # also warm-start on the other demonstrations (start-<kind>/) and evaluate that start on
    # the same seeds and episodes: the report's noisy-vs-refined table
    warm_compare: bool = False



# 80 new tokens: the longest oracle command of the credit tasks is 55 tiny tokens. Sampling at
# temperature 0.75 (training and evaluation alike): at 1 the 5 M-parameter start policy garbles
# most commands (held-out success 0.18, DepGPO non-fallback 0.22 on 96 episodes); 0.8 gave
# 0.37 / 0.46, 0.7 gave 0.48 / 0.60 (the start must sit in [0.2, 0.5] / >= 0.5)
CREDIT_TEMPERATURE = 0.75
_ROLLOUT = {"max_turns": 5, "max_new_tokens": 80, "command_timeout": 10.0, "obs_chars": 300,
            "temperature": CREDIT_TEMPERATURE}
# the horizon tier's sampling: its replayed start at 0.3 / 0.5 / 0.75 (36 held-out episodes)
# had success 0.333 / 0.250 / 0.194 and errored commands 0.201 / 0.243 / 0.243
HORIZON_TEMPERATURE = 0.3
TIERS: dict[str, dict[str, Any]] = {
    # the claim: every update sees each credit task (6 groups of 6), 3 seeds, 216 held-out
    # evaluation episodes per algorithm and seed (6 tasks x 36 instances, one episode each:
    # episodes independent, so resampling them is honest). Sized for 3 h on 2 CPU cores from
    # the quick tier's measured costs (~1.0 s per training episode, ~8 s per update, ~0.92 s
    # per evaluation episode): 18 runs x 7.7 min + 20 min of warm start and start evaluation
    "credit": {"seeds": [0, 1, 2], "steps": 6, "group_size": 6, "eval_every": 6,
               "eval_instances": list(range(1000, 1036)), "eval_samples": 1,
               "eval_temperature": CREDIT_TEMPERATURE, "warm_steps": 300, "teacher_steps": 100,
               "rollout": dict(_ROLLOUT)},
    # the credit tier's small brother (same tasks, one seed, fewer updates and episodes):
    # a smoke test and a trend on 2 CPU cores in under 30 minutes, never a claim
    "quick": {"seeds": [0], "steps": 4, "group_size": 4, "eval_every": 4,
              "eval_instances": list(range(1000, 1008)), "eval_samples": 1,
              "eval_temperature": CREDIT_TEMPERATURE, "warm_steps": 300, "teacher_steps": 100,
              "rollout": dict(_ROLLOUT)},
    # failures that are choices, not typos (issue #34): 3 tasks of 7 necessary commands, warm
    # start on demonstrations with harmless look-arounds and breaking decoys; the turn budget
    # (oracle + 3) leaves room for two look-arounds and `done`. 3 seeds x 8 updates of 3 groups
    # of 6, 108 held-out episodes per algorithm and seed; grpo, depgpo and the oracle ceiling.
    # The start (docs/credit-tier.md, "A start that fails by choices"; 36 held-out episodes
    # each): demonstrations replayed so their observations are real (the synthetic ones gave
    # success 0.056, 42% of commands errored), 300 SFT steps (600 overfit: more garbling, less
    # success) and sampling at HORIZON_TEMPERATURE, training and evaluation alike
    "horizon": {"seeds": [0, 1, 2], "steps": 8, "group_size": 6, "eval_every": 8,
                "tasks": [f"tasks/{t}" for t in HORIZON_TASKS], "algos": list(HORIZON_ALGOS),
                "turns_over_oracle": 3, "eval_instances": list(range(1000, 1036)),
                "eval_samples": 1, "eval_temperature": HORIZON_TEMPERATURE, "warm_steps": 300,
                "replay_demos": True, "teacher_steps": 100,
                "rollout": {**_ROLLOUT, "temperature": HORIZON_TEMPERATURE}},
    # whole suite ([] = every task whose oracle does not read /solution at run time), longer
    # commands and episodes, three seeds: hours on CPU, meant for a GPU (--device cuda)
    "full": {"seeds": [0, 1, 2], "steps": 120, "group_size": 8, "eval_every": 10,
             "tasks": [], "tasks_per_step": 1, "turns_over_oracle": None,
             "eval_instances": [1000, 1001, 1002, 1003], "warm_steps": 800,
             "teacher_steps": 800,
             "rollout": {"max_turns": 5, "max_new_tokens": 256, "command_timeout": 20.0,
                         "obs_chars": 600}},
    "micro": {"model": "micro", "steps": 2, "group_size": 2, "eval_every": 2, "warm_steps": 30,
              "teacher_steps": 40, "tasks": ["tasks/hello-world"], "eval_samples": 2,
              "turns_over_oracle": None,
              "rollout": {"max_turns": 2, "max_new_tokens": 24, "command_timeout": 10.0}},
}

# the horizon tier's protocol on short-command tasks (CHOICES_TASKS), its two best credit
# shapes against GRPO and plain DepGPO. Training samples at CREDIT_TEMPERATURE: at 0.3 the
# start said the same episode six times over (7 first updates x 3 seeds: 53 of 63 groups had
# zero advantage); evaluation stays at 0.3, the policy's likeliest behaviour
TIERS["choices"] = {**TIERS["horizon"], "tasks": [f"tasks/{t}" for t in CHOICES_TASKS],
                    "algos": list(CHOICES_ALGOS),
                    "rollout": {**_ROLLOUT, "temperature": CREDIT_TEMPERATURE}}
# the choices tier with menu sampling (trainer/menu.py): every reply is one of the task's
# declared commands or `done`, so no failure is a typo (on the choices tier 0.205 of the
# start's commands errored, most of them garbled); the same start, tasks and algorithms
# plus both shapes with blame on the `done` that ends a faultless failure: under the menu the
# start's failures are mostly omissions (it says done with a step missing), which both shapes
# otherwise spread as GRPO's unit weights (oracle) or the graph's credit (depgpo)
MENU_ALGOS = [*CHOICES_ALGOS, "oracle[positive=uniform,inside=true,omission=done]",
              "depgpo[positive=uniform,negative=faults,inside=true,omission=done]"]
TIERS["menu"] = {**TIERS["choices"], "algos": MENU_ALGOS,
                 "rollout": {**TIERS["choices"]["rollout"], "menu": True}}
# the menu tier with plain SGD and no gradient clipping: AdamW (per-parameter step sizes) and
# clipping (a capped step) measure out the same step however an advantage is spread over the
# tokens, so blame concentrated on one command of nine cannot move that command further than
# GRPO's spread blame does (on the menu tier's first update the oracle's weights moved decoy
# tokens less than GRPO's). lr 0.1: GRPO's first update then moves the policy as far as AdamW
# at 1e-4 did (mean |Δ log p| of the sampled tokens 0.019 vs 0.016). Same start, seeds, tasks;
# grpo, the oracle's and DepGPO's shapes, and both with blame on `done` (whose 2 tokens then
# carry ~37x an episode's advantage: unclipped, that step wrecks the policy; kept to show it)
MENU_SGD_ALGOS = ["grpo", "oracle[positive=uniform,inside=true]",
                  "depgpo[positive=uniform,negative=faults,inside=true]",
                  "oracle[positive=uniform,inside=true,omission=done]",
                  "depgpo[positive=uniform,negative=faults,inside=true,omission=done]"]
TIERS["menu-sgd"] = {**TIERS["menu"], "algos": MENU_SGD_ALGOS, "optimizer": "sgd", "lr": 0.1,
                     "max_grad_norm": 0.0}


def bench_config(tier: str, *, ablations: bool = False, **overrides: Any) -> BenchConfig:
    """The tier's settings with the command line's on top; ``ablations``: DepGPO's variants
    instead of the algorithms (unless ``algos`` is given)."""
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}: choose from {', '.join(TIERS)}")
    data = {**TIERS[tier], **{k: v for k, v in overrides.items() if v is not None}}
    if ablations and not overrides.get("algos"):
        data["algos"] = list(ABLATIONS)
    cfg = BenchConfig(tier=tier, **data)
    if cfg.warm_demos not in WARM_DEMOS:
        raise ValueError(f"warm_demos: one of {', '.join(WARM_DEMOS)}, not {cfg.warm_demos!r}")
    for spec in cfg.algos:
        try:
            estimators.parse_spec(spec)  # a typo fails now, not hours in
        except ValueError as exc:
            raise ValueError(f"--algo {exc}") from exc
    if not cfg.tasks:
        cfg.tasks = [str(t.path) for t in find_tasks(["tasks"])
                     if "/solution" not in (t.solution_dir / "solve.sh").read_text()]
    return cfg


def turn_budget(cfg: BenchConfig) -> dict[str, int]:
    """Turns per task folder: the oracle's steps + ``turns_over_oracle``."""
    if cfg.turns_over_oracle is None:
        return {}
    return {t.path.name: len(oracle_commands(t)) + cfg.turns_over_oracle
            for t in find_tasks(cfg.tasks)}


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
        console.print(Text(f"{dest.name}: SFT on {len(demos)} demos, {steps} steps, "
                           f"final loss {losses[-1]:.3f}", style="dim"))
    return str(dest)


def _start_checkpoint(cfg: BenchConfig, out: Path, kind: str, where: str,
                      console: Console) -> str:
    """A starting checkpoint SFT'd on ``kind`` demonstrations ("noisy" or "refined"), saved
    as ``out/where``."""
    tasks = find_tasks(cfg.tasks)
    rng = random.Random(0)
    # a task that declares its decoys ([metadata.demos]) gets them instead of the noisy mix
    per_task = [(t, decoy_demos(t) if has_decoys(t) else noisy_demos(t, rng)) for t in tasks]
    demos = [d for _, ds in per_task for d in ds]
    done = (out / where / "config.json").is_file()
    run_as_rollouts = {"obs_chars": int(cfg.rollout.get("obs_chars", 600)),
                       "command_timeout": float(cfg.rollout.get("command_timeout", 10.0)),
                       "log": lambda m: console.print(Text(m, style="dim"))}
    if kind == "noisy" and cfg.replay_demos and not done:
        from .warm_replayed import replayed_demos

        demos = replayed_demos(per_task, out / where / "replay",
                               train_instances=TrainConfig.train_instances, **run_as_rollouts)
    if kind == "refined" and not done:
        from .warm_refined import refined_demos

        demos = refined_demos(tasks, out / where / "refine", **run_as_rollouts)
    return _sft_checkpoint(cfg, out / where, demos, cfg.warm_steps, console)


def _warm(cfg: BenchConfig, out: Path, console: Console) -> tuple[str, str | None]:
    """The shared starting checkpoint (``warm_demos``) and, when an algorithm distils, the
    OPD teacher (clean SFT)."""
    start = _start_checkpoint(cfg, out, cfg.warm_demos, "start", console)
    teacher = None
    if any(estimators.TEACHER_LOGPROBS in estimators.needs(estimators.parse_spec(a)[0])
           for a in cfg.algos):
        clean = [d for t in find_tasks(cfg.tasks) for d in clean_demos(t)]
        teacher = _sft_checkpoint(cfg, out / "teacher", clean, cfg.teacher_steps, console)
    return start, teacher


def _train_config(cfg: BenchConfig, spec: str, seed: int, start: str,
                  teacher: str | None) -> TrainConfig:
    algo, settings = estimators.parse_spec(spec)
    return TrainConfig(
        algo=algo, estimator=settings, model=start, tasks=list(cfg.tasks),
        group_size=cfg.group_size, tasks_per_step=cfg.tasks_per_step,
        turn_budget=turn_budget(cfg), steps=cfg.steps, lr=cfg.lr, optimizer=cfg.optimizer,
        max_grad_norm=cfg.max_grad_norm, seed=seed, device=cfg.device,
        teacher=teacher if estimators.TEACHER_LOGPROBS in estimators.needs(algo) else None,
        eval_every=cfg.eval_every, eval_instances=list(cfg.eval_instances),
        eval_samples=cfg.eval_samples, eval_temperature=cfg.eval_temperature,
        eval_at_start=False, checkpoint_every=cfg.steps, rollout={**cfg.rollout, **_where(cfg)})


def _where(cfg: BenchConfig) -> dict[str, Any]:
    """[rollout] backend settings of every run (none for the local default: configs as before)."""
    if cfg.backend == "local":
        return {}
    return {"backend": cfg.backend, **({"ray_address": cfg.ray_address} if cfg.ray_address
                                      else {})}


def _start_eval(cfg: BenchConfig, out: Path, seed: int, start: str,
                console: Console, where: str = "start") -> dict[str, Any]:
    """Evaluation before any update: the same weights and the same evaluation seeds for every
    algorithm, so it is run once per seed and shared (step -1 of each run's metrics).
    ``where``: the checkpoint's folder (``start-<kind>``: the warm-start comparison's)."""
    path = out / where / f"eval-seed-{seed}.json"
    if not path.is_file():
        tcfg = _train_config(cfg, "grpo", seed, start, None)
        trainer = Trainer(tcfg, out / f"{where}-eval" / f"seed-{seed}", console=console)
        try:
            row = {"step": -1, **trainer.evaluate(-1, out / where / f"eval-seed-{seed}.jsonl"),
                   "time": datetime.now().isoformat(timespec="seconds")}
        finally:
            trainer.close()
        path.write_text(json.dumps(row))
    row = json.loads(path.read_text())
    fallback = row.get("eval/credit/fallback_rate")
    console.print(Text(
        f"{where} (seed {seed}): held-out success {row['eval/success']:.3f} (aim: 0.2-0.5)"
        + ("" if fallback is None else
           f", DepGPO non-fallback {1 - fallback:.3f} (aim: >= 0.5)"), style="dim"))
    return row


def _start_stats(out: Path, rows: list[dict[str, Any]], where: str = "start") -> None:
    """start/start-stats.json: the starting point over seeds, as the tier is tuned to have it
    (success in [0.2, 0.5]; DepGPO redistributes on >= half of the trajectories)."""
    if not rows:
        return
    prefix = "eval/credit/fallback/"
    reasons = sorted({k for r in rows for k in r if k.startswith(prefix)})
    succ = [r["eval/success"] for r in rows]
    nonfb = [1 - r["eval/credit/fallback_rate"] for r in rows
             if "eval/credit/fallback_rate" in r]
    stats = {"success": sum(succ) / len(succ), "success_per_seed": succ,
             "non_fallback": sum(nonfb) / len(nonfb) if nonfb else None,
             "non_fallback_per_seed": nonfb, "episodes_per_seed": [r["eval/episodes"] for r in rows],
             "fallback_reasons": {k.removeprefix(prefix): sum(r.get(k, 0.0) for r in rows)
                                  / len(rows) for k in reasons}}
    (out / where / "start-stats.json").write_text(json.dumps(stats, indent=2) + "\n")


def run_bench(cfg: BenchConfig, out: Path | None = None,
              console: Console | None = None) -> Path:
    console = console or Console(stderr=True, soft_wrap=True)
    out = out or Path("runs") / f"bench-{datetime.now():%Y%m%d-%H%M%S}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(asdict(cfg), indent=2))
    start, teacher = _warm(cfg, out, console)
    start_rows = [_start_eval(cfg, out, seed, start, console)
                  for seed in cfg.seeds] if cfg.eval_every else []
    _start_stats(out, start_rows)
    if cfg.warm_compare and cfg.eval_every:
        # the other demonstrations' start, measured on the same seeds and episodes; training
        # goes on from ``start/`` only
        where = f"start-{other_demos(cfg.warm_demos)}"
        other = _start_checkpoint(cfg, out, other_demos(cfg.warm_demos), where, console)
        _start_stats(out, [_start_eval(cfg, out, seed, other, console, where)
                           for seed in cfg.seeds], where)
    for seed in cfg.seeds:
        start_row = start_rows[cfg.seeds.index(seed)] if start_rows else None
        for algo in cfg.algos:
            run_dir = out / run_dir_name(algo) / f"seed-{seed}"
            if (run_dir / "done.json").is_file():
                continue  # a rerun of the same bench directory resumes where it stopped
            resume = (run_dir / "checkpoints").is_dir()
            if start_row is not None and not resume:
                run_dir.mkdir(parents=True, exist_ok=True)
                row = {k: v for k, v in start_row.items() if k != "time/eval_s"}  # counted once
                write_jsonl(run_dir / "metrics.jsonl", [row], ascii=True)
            console.print(Text.assemble((algo, "bold"), f" seed {seed}"))
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
