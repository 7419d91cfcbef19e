"""The credit verbs: `termcredit credit`, `credit-audit`, `refine` and `graph`."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..rawtext import json_dumps
from ..show import shown
from .common import add_backend_flags, backend_of, console, log


def _cmd_credit(args: argparse.Namespace) -> int:
    from ..depgpo import DepGPOConfig
    from ..depgpo.report import credit_report

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


def add_credit_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("credit", help="DepGPO credit and step weights of a trial",
                       description="Per step of a trial directory written by `termcredit run`: "
                       "the command, its DepGPO credit, its advantage weight and its credit "
                       "classes, plus the fallback (if any) and the verifier resources used.")
    c.add_argument("trial_dir", metavar="TRIAL_DIR")
    c.add_argument("--beta", type=float, default=0.5, help="supporting-read decay (default 0.5)")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=_cmd_credit)


def _cmd_credit_audit(args: argparse.Namespace) -> int:
    from ..bench.credit_audit import audit, fmt, jobs_for, result_line
    from ..depgpo import DepGPOConfig

    jobs = jobs_for(args.paths)
    if not jobs:
        raise ValueError("nothing to audit: no task with an oracle, no successful trial")
    out = Path(args.out or Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-credit-audit")
    data = audit(jobs, out, concurrency=args.concurrency, cfg=DepGPOConfig(beta=args.beta),
                 command_timeout=args.command_timeout, log=log, backend=backend_of(args))
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


def add_credit_audit_parser(sub: argparse._SubParsersAction) -> None:
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
    add_backend_flags(ca, "local")
    ca.set_defaults(func=_cmd_credit_audit)


def _cmd_refine(args: argparse.Namespace) -> int:
    from ..refine import RefineOptions
    from ..refine.run import refine_run, result_line

    out = Path(args.out or Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-refine"
               / "refined.jsonl")
    opts = RefineOptions(keep_reads=args.keep_reads, min_credit=args.min_credit,
                         keep_writes=args.keep_writes)
    report = refine_run(Path(args.run_dir), out, opts, tasks=args.tasks,
                        concurrency=args.concurrency, command_timeout=args.command_timeout,
                        obs_chars=args.obs_chars, log=log, backend=backend_of(args))
    for t in report["trajectories"]:
        if not t["kept"]:
            log(f"not kept: {t['source']}: {t['why']}")
    console.print(shown(f"{out}: {report['kept']} refined trajectories"))
    print(result_line(report))
    return 0


def add_refine_parser(sub: argparse._SubParsersAction) -> None:
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
    add_backend_flags(rf, "local")
    rf.set_defaults(func=_cmd_refine)


def _cmd_graph(args: argparse.Namespace) -> int:
    from ..depgpo.analysis import analysis_of
    from ..depgpo.render import render
    from ..depgpo.report import credit_rows
    from ..trialdir import load_trajectory

    traj = load_trajectory(args.trial_dir)
    res = analysis_of(traj)
    commands = {s.index: (s.command.command if s.command else s.action) for s in traj.steps}
    title = f"{traj.task} — reward {traj.verifier.reward if traj.verifier else '?'}"
    data = render(res.graph.graph, args.format, title=title,
                  rows=credit_rows(res, commands))
    out = Path(args.output or Path(args.trial_dir) / f"graph.{args.format}")
    out.write_bytes(data)
    print(out)
    return 0


def add_graph_parser(sub: argparse._SubParsersAction) -> None:
    gr = sub.add_parser("graph", help="draw a trial's dependency graph",
                        description="Draw the command / file-version graph of a trial: time "
                        "left to right, commands coloured by credit, verifier resources "
                        "highlighted, one style per edge kind, a legend.")
    gr.add_argument("trial_dir", metavar="TRIAL_DIR")
    gr.add_argument("--format", choices=["svg", "png", "html", "dot"], default="svg")
    gr.add_argument("-o", "--output", help="output file (default TRIAL_DIR/graph.<format>)")
    gr.set_defaults(func=_cmd_graph)
