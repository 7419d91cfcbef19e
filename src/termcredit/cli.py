"""The one `termcredit` command; each verb is a thin layer over a package function."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from .rawtext import json_dumps
from .show import shown

console = Console(stderr=True, soft_wrap=True)  # errors carry paths: never wrap them


def _log(message: str) -> None:
    console.print(shown(message, "dim"))


def _cmd_run(args: argparse.Namespace) -> int:
    from . import llm  # noqa: F401  registers the openai:MODEL agents
    from .depgpo import trial_hook  # noqa: F401  registers graph.json for every trial
    from .harness.run import RunConfig, resume_config, run
    from .tasks import find_tasks

    if not args.task and not args.resume:
        raise ValueError("give --task PATH (or --resume DIR)")
    tasks = find_tasks(args.task or [], lenient=True)  # a Harbor feature we lack: skipped
    cfg = RunConfig(tasks=tasks, agent=args.agent, attempts=args.attempts,
                    concurrency=args.concurrency, out=Path(args.out) if args.out else None,
                    command_timeout=args.command_timeout, image_map=args.image_map,
                    force_build=args.force_build, instance=args.instance,
                    backend=args.backend, ray_address=args.ray_address, registry=args.registry,
                    network=args.network,
                    agent_options={k: getattr(args, k) for k in (
                        "base_url", "max_turns", "max_tokens", "temperature", "max_requests")})
    if args.resume:
        cfg = resume_config(Path(args.resume), cfg)
    summary = run(cfg, console)
    if args.json:
        print(json.dumps(summary, indent=2))
    return 0


def _cmd_image(args: argparse.Namespace) -> int:
    from .sandbox import ImageMap, docker_client, ensure_base_image
    from .tasks import load_task
    from .tasks.build import build_image

    client = docker_client()
    log = _log
    if args.what == "base" and args.list:
        return _list_bases(client)
    if args.what == "base":
        for name in args.paths or [None]:
            print(ensure_base_image(client, force=args.force, log=log,
                                    **({"name": name} if name else {})))
        return 0
    base = ensure_base_image(client, log=log)
    for path in args.paths:
        task = load_task(path)
        print(build_image(client, task, base_ref=base, instance=args.instance,
                          image_map=ImageMap.load(args.image_map), force=args.force, log=log))
    return 0


def _list_bases(client: Any) -> int:
    """`termcredit image base --list`: every base, its Python, and whether it is built."""
    from rich.table import Table

    from .sandbox import BASES, DEFAULT_BASE, base_image_ref
    from .sandbox.imagemap import builtin_map_path

    table = Table(title="termcredit base images")
    for col in ("name", "debian", "python", "image", "built"):
        table.add_column(col)
    for base in BASES.values():
        ref = base_image_ref(base.name)
        try:
            size = client.images.get(ref).attrs.get("Size") or 0
            built = f"yes, {size / 1e6:.0f} MB"
        except Exception:  # docker.errors.ImageNotFound: built on first use
            built = "no (built on first use)"
        name = base.name + ("*" if base.name == DEFAULT_BASE else "")
        table.add_row(name, base.suite, base.python, ref, built)
    out = Console()
    out = out if out.is_terminal else Console(width=max(out.width, 120))  # a pipe: no cut refs
    out.print(table)
    out.print(Text("FROM images are mapped to a base by ") + shown(builtin_map_path())
                    + Text(" (and a file given with --image-map or TERMCREDIT_IMAGE_MAP); "
                           "* the default base, FROM termcredit/base"))
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    from .harness.trace_cmd import trace_steps
    from .sandbox import ImageMap, docker_client, ensure_base_image
    from .tasks import load_task
    from .tasks.build import build_image

    client = docker_client()
    log = _log
    base = ensure_base_image(client, log=log)
    image = args.image or base
    if args.task:
        task = load_task(args.task)
        image = build_image(client, task, base_ref=base, image_map=ImageMap.load(None),
                            log=log)
    report = trace_steps(client, image, args.step, setup=args.setup or [], workdir=args.workdir,
                         timeout=args.timeout, grace=args.grace)
    if args.json:
        print(json_dumps(report, indent=2))  # bytes as \udcXX (rawtext.py)
        return 0
    from rich.table import Table

    table = Table(title=shown(f"termcredit trace ({image})"), show_lines=True)
    for col in ("#", "command", "exit", "read", "written", "deleted", "temporary", "executed"):
        table.add_column(col, overflow="fold")
    for i, r in enumerate(report):
        table.add_row(str(i), shown(r["command"]), str(r["exit_code"]),
                      *(Text("\n").join(shown(p, one_line=True) for p in r[k])
                        for k in ("read", "written", "deleted", "temporary", "executed")))
    Console().print(table)
    return 0


def _cmd_credit(args: argparse.Namespace) -> int:
    from .depgpo import DepGPOConfig
    from .depgpo.report import credit_report

    report = credit_report(args.trial_dir, DepGPOConfig(beta=args.beta))
    if args.json:
        print(json_dumps(report, indent=2))  # bytes as \udcXX (rawtext.py)
        return 0
    from rich.table import Table

    table = Table(title=shown(f"DepGPO credit: {report['task']} (reward {report['reward']}, "
                              f"fallback {report['fallback'] or 'none'})"))
    for col in ("step", "command", "credit", "weight", "classes"):
        table.add_column(col, overflow="fold")
    for r in report["steps"]:
        table.add_row(str(r["step"]), shown(r["command"]), "–" if r["credit"] is None else
                      f"{r['credit']:.3f}", f"{r['weight']:.3f}", shown(", ".join(r["classes"])))
    Console().print(table)
    resources = [shown(p, one_line=True) for p in report["verifier_resources"]]
    Console().print(Text("verifier resources: ") + (Text(", ").join(resources) or Text("none")))
    return 0


def _cmd_credit_audit(args: argparse.Namespace) -> int:
    from .bench.credit_audit import audit, fmt, jobs_for, result_line
    from .depgpo import DepGPOConfig

    jobs = jobs_for(args.paths)
    if not jobs:
        raise ValueError("nothing to audit: no task with an oracle, no successful trial")
    out = Path(args.out or Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-credit-audit")
    data = audit(jobs, out, concurrency=args.concurrency, cfg=DepGPOConfig(beta=args.beta),
                 command_timeout=args.command_timeout, log=_log)
    if args.json:
        print(json_dumps(data, indent=2))  # bytes as \udcXX (rawtext.py)
        return 0
    from rich.table import Table

    show = Console()
    table = Table(title=shown(f"credit audit ({out})"))
    for col in ("trajectory", "reward", "steps", "necessary", "credited", "recall", "precision"):
        table.add_column(col, overflow="fold")
    for e in data["trajectories"]:
        if e.get("error"):
            table.add_row(shown(e["label"]), str(e["reward"]), "–", "–", "–", "–", "–")
            continue
        table.add_row(shown(e["label"]), str(e["reward"]), str(e["n_steps"]),
                      str(e["n_necessary"]), str(e["n_credited"]), fmt(e["recall"]),
                      fmt(e["precision"]))
    show.print(table)
    if data["misses"]:
        misses = Table(title="misses")
        for col in ("trajectory", "step", "command", "credit", "reward without", "miss"):
            misses.add_column(col, overflow="fold")
        for m in data["misses"]:
            misses.add_row(shown(m["label"]), str(m["step"]), shown(m["command"]),
                           fmt(m["credit"]), str(m["reward_without"]), m["miss"])
        show.print(misses)
    for s in data["skipped"]:
        show.print(Text("skipped ", style="yellow") + shown(s["label"]) + Text(": ")
                   + shown(s["error"]))
    print(result_line(data))
    return 0


def _cmd_refine(args: argparse.Namespace) -> int:
    from .refine import RefineOptions
    from .refine.run import refine_run, result_line

    out = Path(args.out or Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-refine"
               / "refined.jsonl")
    opts = RefineOptions(keep_reads=args.keep_reads, min_credit=args.min_credit,
                         keep_writes=args.keep_writes)
    report = refine_run(Path(args.run_dir), out, opts, tasks=args.tasks,
                        concurrency=args.concurrency, command_timeout=args.command_timeout,
                        obs_chars=args.obs_chars, log=_log)
    for t in report["trajectories"]:
        if not t["kept"]:
            _log(f"not kept: {t['source']}: {t['why']}")
    console.print(shown(f"{out}: {report['kept']} refined trajectories"))
    print(result_line(report))
    return 0


def _cmd_graph(args: argparse.Namespace) -> int:
    from .depgpo import analyse
    from .depgpo.load import facts_from_trajectory
    from .depgpo.render import render
    from .depgpo.report import credit_rows
    from .trialdir import load_trajectory

    traj = load_trajectory(args.trial_dir)
    res = analyse(facts_from_trajectory(traj))
    commands = {s.index: (s.command.command if s.command else s.action) for s in traj.steps}
    title = f"{traj.task} — reward {traj.verifier.reward if traj.verifier else '?'}"
    data = render(res.graph.graph, args.format, title=title,
                  rows=credit_rows(res, commands))
    out = Path(args.output or Path(args.trial_dir) / f"graph.{args.format}")
    out.write_bytes(data)
    print(out)
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from .trainer.config import load_config
    from .trainer.train import Trainer

    tasks = (args.task or []) + (args.tasks or [])
    overrides = {
        "algo": args.algo, "model": args.model, "tasks": tasks or None,
        "group_size": args.group_size, "steps": args.steps, "lr": args.lr, "seed": args.seed,
        "device": args.device, "teacher": args.teacher, "eval_every": args.eval_every,
        "sft_data": args.sft_data,
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
    if args.backend or args.ray_address:  # on top of the config's [rollout] table
        cfg.rollout.update({k: v for k, v in (("backend", args.backend),
                                              ("ray_address", args.ray_address)) if v})
        cfg = load_config(None, cfg.to_dict())  # checked like a config file
    Trainer(cfg, run_dir, resume=bool(args.resume), console=console).run()
    print(run_dir)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench.protocol import bench_config, run_bench

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


def _cmd_serve(args: argparse.Namespace) -> int:
    from .serve.run import MissingExtra, ServeConfig, serve

    cfg = ServeConfig(model=args.model, host=args.host, port=args.port, device=args.device,
                      max_tokens=args.max_tokens, log=args.log, name=args.served_model_name)
    try:
        serve(cfg, announce=lambda line: print(line, flush=True),
              warn=lambda line: console.print(shown(line, "yellow")))
    except MissingExtra as exc:
        console.print(Text("error:", style="red") + Text(" ") + shown(exc))
        return 2
    except KeyboardInterrupt:
        _log("termcredit serve: stopped")
    return 0


def _cmd_gc(args: argparse.Namespace) -> int:
    from .sandbox import docker_client, gc

    removed = gc(docker_client(), run_id=args.run, everything=args.all)
    console.print(shown(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed)
                                                                  if removed else "")))
    return 0


def _add_backend_flags(p: argparse.ArgumentParser, default: str | None,
                       shown_default: str = "local") -> None:
    p.add_argument("--backend", choices=["local", "ray"], default=default,
                   help="where sandboxes run: local (this Docker engine) or ray (one host "
                   "actor per Docker node of a Ray cluster; needs the `ray` extra); default "
                   + shown_default)
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="the Ray cluster (default $RAY_ADDRESS, else the one started on this "
                   "machine with `ray start --head`)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="termcredit",
        description="Terminal-agent RL environment with strace-grounded credit assignment.",
    )
    sub = p.add_subparsers(dest="verb", required=True, metavar="VERB")

    r = sub.add_parser("run", help="run agents on tasks in traced Docker sandboxes",
                       description="Run an agent on Harbor-format tasks; each trial gets a fresh "
                       "sandbox, a traced persistent shell and the task's verifier.")
    r.add_argument("--task", action="append", metavar="PATH",
                   help="task folder, or a folder of task folders (repeatable; required "
                   "unless --resume)")
    r.add_argument("--agent", default="oracle",
                   help="oracle | nop | replay:FILE | openai:MODEL | module:Class | "
                   "file.py:Class (default oracle)")
    r.add_argument("--attempts", "-k", type=int, default=1, help="trials per task (default 1)")
    r.add_argument("--concurrency", "-n", type=int, default=2,
                   help="trials at once (default 2)")
    r.add_argument("--out", help="run directory (default runs/<stamp>-<agent>)")
    r.add_argument("--command-timeout", type=float, default=120.0,
                   help="per-command timeout in seconds (default 120)")
    r.add_argument("--image-map", help="TOML file with an [image_map] table for FROM lines")
    r.add_argument("--force-build", action="store_true", help="rebuild task images")
    r.add_argument("--instance", type=int, default=0,
                   help="instance seed for parametrised tasks (default 0)")
    r.add_argument("--network", metavar="NAME", help="grant this existing Docker network to "
                   "the agents of tasks that permit one (allow_internet = true, network_mode = "
                   "\"public\"/\"allowlist\"); it is left before verification unless the "
                   "task's [verifier] network_mode asks too. Default: no network for anyone")
    r.add_argument("--json", action="store_true", help="print result.json to stdout")
    r.add_argument("--resume", metavar="DIR", help="finish a killed run in DIR with its "
                   "config.toml: trials with a result.json are kept, the others run again "
                   "(their partial folders moved aside as attempt-<k>.killed-<n>)")
    _add_backend_flags(r, "local")
    r.add_argument("--registry", metavar="HOST[:PORT]/PREFIX", help="ray backend: pull "
                   "task images from this registry before building them on a node")
    o = r.add_argument_group(
        "openai:MODEL", "a model behind an OpenAI-compatible /chat/completions (vLLM, SGLang, "
        "a hosted API, `termcredit serve`); the API key comes from $OPENAI_API_KEY (none for a "
        "local server)")
    o.add_argument("--base-url", metavar="URL", help="the API's base URL, e.g. "
                   "http://127.0.0.1:8000/v1 (default $OPENAI_BASE_URL, else "
                   "https://api.openai.com/v1)")
    o.add_argument("--max-turns", type=int, metavar="N",
                   help="replies per episode before it ends as max_turns (default 30)")
    o.add_argument("--max-tokens", type=int, metavar="N",
                   help="max_tokens of each reply (default 1024)")
    o.add_argument("--temperature", type=float, metavar="T",
                   help="sampling temperature (default: the server's)")
    o.add_argument("--max-requests", type=int, metavar="N",
                   help="requests in flight at once to the endpoint, whatever -n is (default 4);"
                   " 429/5xx/connection errors are retried with exponential backoff")
    r.set_defaults(func=_cmd_run)

    i = sub.add_parser("image", help="build the base images or task images",
                       description="Build a base image (default bookworm: "
                       "termcredit/base:<recipe hash>; trixie: termcredit/base-trixie:<hash>; "
                       "cached), list the bases, or build the images of task folders.")
    i.add_argument("what", choices=["base", "task"])
    i.add_argument("paths", nargs="*", metavar="NAME|TASK",
                   help="base names (with `base`; default bookworm) or task folders (with `task`)")
    i.add_argument("--list", action="store_true",
                   help="with `base`: the bases, their Debian release and Python, built or not")
    i.add_argument("--force", action="store_true", help="rebuild even if cached")
    i.add_argument("--image-map", help="TOML file with an [image_map] table for FROM lines")
    i.add_argument("--instance", type=int, default=0, help="instance seed (parametrised tasks)")
    i.set_defaults(func=_cmd_image)

    t = sub.add_parser("trace", help="show which files each command read and wrote",
                       description="Run setup commands, then each --step, traced in one fresh "
                       "sandbox; print per step the files it read (needing their earlier "
                       "content), wrote, deleted, created as temporaries, and executed. "
                       "Absolute paths; the environment layer (/usr, /proc, caches) is left out.")
    src = t.add_mutually_exclusive_group()
    src.add_argument("--task", help="use this task's image (default: the base image)")
    src.add_argument("--image", help="use this image")
    t.add_argument("--setup", action="append", metavar="CMD",
                   help="run before the steps, not reported (repeatable)")
    t.add_argument("--step", action="append", required=True, metavar="CMD",
                   help="a traced step (repeatable, in order)")
    t.add_argument("--workdir", help="starting directory (default: the image's)")
    t.add_argument("--timeout", type=float, default=120.0, help="per-command timeout (s)")
    t.add_argument("--grace", type=float, default=2.0,
                   help="seconds background jobs may run after the last step (default 2)")
    t.add_argument("--json", action="store_true", help="one JSON object per step")
    t.set_defaults(func=_cmd_trace)

    c = sub.add_parser("credit", help="DepGPO credit and step weights of a trial",
                       description="Per step of a trial directory written by `termcredit run`: "
                       "the command, its DepGPO credit, its advantage weight and its credit "
                       "classes, plus the fallback (if any) and the verifier resources used.")
    c.add_argument("trial_dir", metavar="TRIAL_DIR")
    c.add_argument("--beta", type=float, default=0.5, help="supporting-read decay (default 0.5)")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=_cmd_credit)

    ca = sub.add_parser("credit-audit", help="DepGPO credit against leave-one-out replays",
                        description="Replay each successful trajectory once per step with that "
                        "step left out (a fresh sandbox each time); a step is necessary when the "
                        "reward drops. Reports recall (necessary steps with credit > 0) and "
                        "precision (credited steps that are necessary) per trajectory and "
                        "overall, lists every miss, writes OUT/audit.json. Arguments: task "
                        "folders (their oracle, solve.sh split into commands) or `termcredit "
                        "run` folders (their successful trials).")
    ca.add_argument("paths", nargs="+", metavar="RUN_OR_TASKS")
    ca.add_argument("--out", help="audit directory (default runs/<stamp>-credit-audit)")
    ca.add_argument("--concurrency", "-n", type=int, default=2,
                    help="replays at once (default 2)")
    ca.add_argument("--beta", type=float, default=0.5,
                    help="DepGPO supporting-read decay (default 0.5)")
    ca.add_argument("--command-timeout", type=float, default=120.0,
                    help="per-command timeout in seconds (default 120)")
    ca.add_argument("--json", action="store_true", help="print audit.json to stdout")
    ca.set_defaults(func=_cmd_credit_audit)

    rf = sub.add_parser("refine", help="SFT data from successful trials, minus steps that did "
                        "not contribute", description="Read every successful trial under RUN_DIR "
                        "(a `termcredit run` folder, a `train` run's rollouts and evaluations, a "
                        "bench folder), drop the steps its dependency graph proves did not "
                        "contribute (credit 0, no later command used their output, files or "
                        "shell state, the verifier saw none of their changes), replay each "
                        "refined trajectory in a fresh sandbox and keep it only if the verifier "
                        "still gives 1. Writes chat-format JSONL (one {\"messages\": [...]} a "
                        "line, the layout the SFT warm start reads), with per trajectory the "
                        "steps dropped, the replay reward and the tokens saved (tiny tokenizer, "
                        "else characters), and OUT.report.json; prints a RESULT line.")
    rf.add_argument("run_dir", metavar="RUN_DIR")
    rf.add_argument("--out", help="the JSONL file (default runs/<stamp>-refine/refined.jsonl); "
                    "replays go to OUT's folder, <stem>-replays/")
    rf.add_argument("--keep-reads", action="store_true",
                    help="keep look-around steps whose stdout holds a value the next "
                    "command's text contains")
    rf.add_argument("--min-credit", type=float, metavar="X",
                    help="keep every step whose DepGPO credit is at least X (steps proven "
                    "droppable have credit 0, so only X <= 0 changes anything: 0 keeps all)")
    rf.add_argument("--keep-writes", action="store_true",
                    help="keep steps whose file writes last to the end even when nothing "
                    "read them")
    rf.add_argument("--tasks", action="append", metavar="DIR",
                    help="where the trials' tasks are (repeatable; default ./tasks plus the "
                    "run's own config)")
    rf.add_argument("--concurrency", "-n", type=int, default=2, help="replays at once "
                    "(default 2)")
    rf.add_argument("--command-timeout", type=float, default=120.0,
                    help="per-command timeout of the replays in seconds (default 120)")
    rf.add_argument("--obs-chars", type=int, default=600,
                    help="observation length in the chat, as the rollout's obs_chars "
                    "(default 600)")
    rf.set_defaults(func=_cmd_refine)

    gr = sub.add_parser("graph", help="draw a trial's dependency graph",
                        description="Draw the command / file-version graph of a trial: time "
                        "left to right, commands coloured by credit, verifier resources "
                        "highlighted, one style per edge kind, a legend.")
    gr.add_argument("trial_dir", metavar="TRIAL_DIR")
    gr.add_argument("--format", choices=["svg", "png", "html", "dot"], default="svg")
    gr.add_argument("-o", "--output", help="output file (default TRIAL_DIR/graph.<format>)")
    gr.set_defaults(func=_cmd_graph)

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
    _add_backend_flags(tr, None, "the config's [rollout] backend, else local")
    tr.set_defaults(func=_cmd_train)

    b = sub.add_parser("bench", help="all algorithms side by side, with a report",
                       description="Train grpo, gigpo, adastep, depgpo, opd and depgpo+opd from "
                       "one warm-started checkpoint with identical budgets and seeds; evaluate on "
                       "held-out instances; write runs/bench-<stamp>/ (summary.json, curves.png, "
                       "report.html, REPORT.md) and runs/bench-latest.")
    b.add_argument("--tier", default="quick",
                   choices=["quick", "credit", "horizon", "full", "micro"],
                   help="quick (default; the credit tier's small brother, < 30 min on 2 "
                   "cores), credit (the claim: 3 seeds, CIs; < 3 h on 2 cores), horizon "
                   "(grpo, depgpo and the oracle-credit ceiling on long tasks with decoys), "
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
    _add_backend_flags(b, None)
    b.set_defaults(func=_cmd_bench)

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

    g = sub.add_parser("gc", help="remove containers left by dead runs",
                       description="Remove termcredit containers whose owning process is gone.")
    g.add_argument("--run", help="remove this run id's containers, owner alive or not")
    g.add_argument("--all", action="store_true", help="remove every termcredit container")
    g.set_defaults(func=_cmd_gc)
    from .tasktools.cli import add_tasks_parser

    add_tasks_parser(sub)
    from .viewer.cli import add_view_parser

    add_view_parser(sub)
    from .harness.audit_cli import add_audit_parser

    add_audit_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .sandbox import EngineError, ImageBuildError
    from .depgpo.load import TrialError
    from .depgpo.render import RenderError
    from .harness.trace_cmd import TraceError
    from .tasks import TaskError
    from .trainer.config import ConfigError

    try:
        return args.func(args)
    except (TaskError, ImageBuildError, EngineError, TraceError, TrialError, RenderError,
            ConfigError, FileNotFoundError, ValueError) as exc:
        console.print(Text("error:", style="red") + Text(" ") + shown(exc))
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
