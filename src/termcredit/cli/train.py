"""The policy verbs: `termcredit train`, `bench` and `serve`."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from rich.text import Text

from ..show import shown
from .common import add_backend_flags, add_tracer_flag, console, log


def _cmd_train(args: argparse.Namespace) -> int:
    from ..trainer.config import load_config
    from ..trainer.train import Trainer

    tasks = (args.task or []) + (args.tasks or [])
    overrides = {
        "algo": args.algo, "model": args.model, "tasks": tasks or None,
        "group_size": args.group_size, "steps": args.steps, "lr": args.lr, "seed": args.seed,
        "device": args.device, "teacher": args.teacher, "eval_every": args.eval_every,
        "sft_data": args.sft_data, "generation": args.generation,
    }
    if args.resume:
        run_dir = Path(args.resume)
        if not (run_dir / "config.toml").is_file():
            raise FileNotFoundError(f"{run_dir / 'config.toml'}: not a training run to resume")
        cfg = load_config(args.config or run_dir / "config.toml", overrides)
    else:
        cfg = load_config(args.config, overrides)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir = Path(args.out or Path("runs") / f"{stamp}-train-{cfg.algo}")
    if args.tracer:  # on top of the config's [sandbox] table
        cfg.sandbox["tracer"] = args.tracer
        cfg = load_config(None, cfg.to_dict())
    if args.backend or args.ray_address:  # on top of the config's [rollout] table
        cfg.rollout.update({k: v for k, v in (("backend", args.backend),
                                              ("ray_address", args.ray_address)) if v})
        cfg = load_config(None, cfg.to_dict())  # checked like a config file
    Trainer(cfg, run_dir, resume=bool(args.resume), console=console).run()
    print(run_dir)
    return 0


def add_train_parser(sub: argparse._SubParsersAction) -> None:
    tr = sub.add_parser("train", help="train a policy with an advantage estimator",
                        description="RL on terminal tasks: G episodes per step in traced "
                        "sandboxes, advantages from the estimator registry, a PPO-style update. "
                        "Settings: --config FILE.toml, then these flags on top.")
    tr.add_argument("--algo", help="grpo | gigpo | adastep | depgpo | opd | sums like "
                    "depgpo+opd (default grpo); settings in brackets, on top of the config's "
                    "[estimator] table, e.g. 'depgpo[negative=errors]'")
    tr.add_argument("--model", help="tiny | micro | smollm2-135m | a local HF model dir")
    tr.add_argument("--task", action="append", metavar="PATH", help="a task folder (repeatable)")
    tr.add_argument("--tasks", action="append", metavar="DIR", help="a folder of tasks")
    tr.add_argument("--group-size", type=int, help="episodes per group (default 4)")
    tr.add_argument("--steps", type=int, help="optimizer steps (default 10)")
    tr.add_argument("--lr", type=float, help="learning rate (default 1e-4)")
    tr.add_argument("--seed", type=int, help="seed (default 0)")
    tr.add_argument("--device", help="cpu | cuda | auto (default cpu)")
    tr.add_argument("--teacher", help="OPD teacher policy (same tokenizer)")
    tr.add_argument("--generation", choices=["hf", "static"],
                    help="rollout sampling: hf (default; a growing KV cache) or static (a fixed "
                    "KV cache, the decode step compiled with CUDA graphs on CUDA)")
    tr.add_argument("--sft-data", metavar="FILE", help="SFT warm start before the first update "
                    "on this chat-format JSONL (what `termcredit refine` writes); config "
                    "sft_steps (default 100) and sft_lr (default 2e-3)")
    tr.add_argument("--eval-every", type=int,
                    help="held-out evaluation every N steps (greedy pass@1 unless the config "
                         "sets eval_samples / eval_temperature)")
    tr.add_argument("--config", help="TOML file with TrainConfig fields")
    tr.add_argument("--out", help="run directory (default runs/<stamp>-train-<algo>)")
    tr.add_argument("--resume", metavar="DIR", help="continue a killed run from its last "
                    "checkpoint")
    add_backend_flags(tr, None, "the config's [rollout] backend, else local")
    add_tracer_flag(tr, None, "the config's [sandbox] tracer, else auto")
    tr.set_defaults(func=_cmd_train)


def _cmd_bench(args: argparse.Namespace) -> int:
    from ..bench.protocol import bench_config, run_bench

    if args.report_only:
        return _report_only(Path(args.report_only))
    try:
        cfg = bench_config(args.tier, ablations=args.ablations, model=args.model,
                           algos=args.algo, seeds=args.seed, steps=args.steps, lr=args.lr,
                           device=args.device, backend=args.backend,
                           ray_address=args.ray_address, warm_demos=args.warm_demos,
                           warm_compare=args.warm_compare or None)
    except ValueError as exc:
        console.print(shown(f"termcredit bench: {exc}", "red"))
        return 2
    out = run_bench(cfg, Path(args.out) if args.out else None, console)
    print(out)
    return 0


def _report_only(out: Path) -> int:
    """The report of a bench directory, finished or not, from what it holds (its bench.json
    settings; runs not started yet are left out)."""
    from ..bench.report import write_report

    if not (out / "bench.json").is_file():
        console.print(shown(f"termcredit bench: {out}: no bench.json (not a bench directory)",
                            "red"))
        return 2
    write_report(out)
    print(out / "REPORT.md")
    return 0


def add_bench_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="all algorithms side by side, with a report",
                       description="Train grpo, gigpo, adastep, depgpo, opd and depgpo+opd from "
                       "one warm-started checkpoint with identical budgets and seeds; evaluate on "
                       "held-out instances; write runs/bench-<stamp>/ (summary.json, curves.png, "
                       "report.html, REPORT.md) and runs/bench-latest.")
    b.add_argument("--tier", default="quick",
                   choices=["quick", "credit", "horizon", "choices", "menu", "menu-sgd", "full",
                            "micro"],
                   help="quick (default; the credit tier's small brother, < 30 min on 2 "
                   "cores), credit (the claim: 3 seeds, CIs; < 3 h on 2 cores), horizon "
                   "(grpo, depgpo and the oracle-credit ceiling on long tasks with decoys), "
                   "choices (horizon's protocol on short-command tasks, so failures are "
                   "choices: grpo, depgpo and the two best credit shapes), menu (choices "
                   "with every reply drawn from the task's declared commands: no typos), menu-sgd "
                   "(menu with plain SGD and no gradient clipping, so concentrated credit is a "
                   "larger step), "
                   "full (whole suite, GPU-ready), micro (smoke)")
    b.add_argument("--model", help="policy to warm-start (default tiny): smollm2-135m or a dir")
    b.add_argument("--algo", action="append",
                   help="only these algorithms (repeatable); settings in brackets, e.g. "
                   "'depgpo[subtract_min=false]'")
    b.add_argument("--ablations", action="store_true",
                   help="DepGPO's own choices instead of the algorithms: depgpo, "
                   "subtract_min off, untraced-step weight 0, beta 0, diff_rewrites never")
    b.add_argument("--seed", action="append", type=int, help="seeds (repeatable)")
    b.add_argument("--steps", type=int, help="updates per run")
    b.add_argument("--lr", type=float, help="learning rate (the same for every algorithm)")
    b.add_argument("--device", help="cpu | cuda | auto")
    b.add_argument("--warm-demos", choices=["noisy", "refined"],
                   help="the start policy's demonstrations: noisy (default), or refined: the "
                   "noisy ones replayed into trials and run through `termcredit refine`")
    b.add_argument("--warm-compare", action="store_true",
                   help="also warm-start on the other demonstrations (start-refined/ or "
                   "start-noisy/) and evaluate it on the same seeds and held-out episodes; "
                   "training goes on from start/; the report gets a noisy-vs-refined table")
    b.add_argument("--out", help="bench directory (default runs/bench-<stamp>)")
    b.add_argument("--report-only", metavar="DIR",
                   help="train nothing: write the report (REPORT.md, summary.json, curves.png, "
                   "report.html) of the bench directory DIR again from what it holds, finished "
                   "or still running, with its own settings (bench.json)")
    add_backend_flags(b, None)
    b.set_defaults(func=_cmd_bench)


def _cmd_serve(args: argparse.Namespace) -> int:
    from ..serve.run import MissingExtra, ServeConfig, serve

    cfg = ServeConfig(model=args.model, host=args.host, port=args.port, device=args.device,
                      max_tokens=args.max_tokens, log=args.log, name=args.served_model_name)
    try:
        serve(cfg, announce=lambda line: print(line, flush=True),
              warn=lambda line: console.print(shown(line, "yellow")))
    except MissingExtra as exc:
        console.print(Text("error:", style="red") + Text(" ") + shown(exc))
        return 2
    except KeyboardInterrupt:
        log("termcredit serve: stopped")
    return 0


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    sv = sub.add_parser("serve", help="serve a policy over an OpenAI-compatible API",
                        description="Serve a termcredit policy on POST /v1/chat/completions "
                        "(non-streaming, or stream: true) and GET /v1/models, so any harness "
                        "that speaks the OpenAI protocol can evaluate it (termcredit run "
                        "--agent openai:NAME --base-url http://HOST:PORT/v1). Messages are "
                        "rendered with the model's own chat template; temperature, top_p, "
                        "max_tokens, seed and stop are honoured; one generation at a time. "
                        "Prints `serving NAME on URL` when ready, one log line per request to "
                        "stderr. Needs the `train` extra (torch).")
    sv.add_argument("--model", default="tiny", help="tiny | micro | smollm2-135m | a local HF "
                    "model dir | a checkpoint (<run>/checkpoints/step-N) | a training run dir "
                    "(its newest checkpoint) (default tiny)")
    sv.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1; no authentication, so keep "
                    "it on loopback)")
    sv.add_argument("--port", type=int, default=8000,
                    help="port (default 8000; 0 picks a free one, printed at start)")
    sv.add_argument("--device", default="auto", help="cpu | cuda | auto (default auto)")
    sv.add_argument("--max-tokens", type=int, default=1024, metavar="N",
                    help="the most tokens one reply may have; a request asking more gets this "
                    "many (default 1024)")
    sv.add_argument("--served-model-name", metavar="NAME", help="the model id clients see "
                    "(default: --model, or its folder's name)")
    sv.add_argument("--log", metavar="FILE", help="also append the request log to FILE")
    sv.set_defaults(func=_cmd_serve)
